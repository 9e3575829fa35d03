#!/usr/bin/env bash
# Reads right after a load (issue "adaptive for what is already on disk", item 3): YCSB B, C
# and D as YCSB runs them — the load phase, then at once the run phase in the same process, no
# waiting — RECORDS records of 1 KB, one budget of PCT percent of the data for both engines,
# O_DIRECT, fresh processes, configurations rotating each round.
#   rocksdb   --memory_budget=M: 2 write buffers of M/8, the rest a block cache holding index
#             and filter blocks, Bloom 10, 8 MiB files
#   cairn     cairn's defaults at M
# Writes per workload under $OUT/<workload>: results.md, results.json and chart.png (every
# round's ratio), timeline.png (L0 files, pending compaction and cairn's write memory over
# time, every run) and timeline.md (per run: L0 files and write memory when the load ended,
# seconds until L0 was back at its trigger, 4).
#   scripts/after-load.sh      (ROUNDS=3: about 25 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/budget.sh
out=${OUT:-docs/results/after-load}
records=${RECORDS:-500000}
ops=${OPS:-500000}
rounds=${ROUNDS:-3}
pct=${PCT:-7}
workloads=${WORKLOADS:-b c d}
work=${WORK:-/tmp/after-load}
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
budget_flags $((records * 1100 * pct / 100))
for w in $workloads; do
  rm -rf "$work/$w"
  $bin/cairn-lab compare --tool ycsb --workload "crates/cairn-bench/workloads/workload$w" --rounds "$rounds" \
    --work "$work/$w" --out "$out/$w" --config "rocksdb=$rocks" --config "cairn=$cairn" -- \
    -p recordcount="$records" -p operationcount="$ops" --use_direct_reads=1 --compression_type=none --seed=7
  runs=()
  for r in $(seq 0 $((rounds - 1))); do
    for e in rocksdb cairn; do
      runs+=("$e-r$((r + 1))=$work/$w/$e-r$r.json")
    done
  done
  $bin/cairn-lab plot-timeline --out "$out/$w/timeline.png" --table "$out/$w/timeline.md" \
    --title "YCSB $w: load $records x 1 KB, then the run at once (budget $pct%, O_DIRECT)" "${runs[@]}"
  rm -rf "$work/$w"
done
