#!/usr/bin/env bash
# The key-value cache on YCSB B, C, D and F under memory pressure (issue "cache what is hot",
# measurement (b)): RECORDS records of 1 KB (10 fields of 100 B), one budget of PCT percent of
# the data for both engines, O_DIRECT. Each engine loads once (YCSB's load phase, then
# compaction settled); every run starts, in a fresh process, on a copy of that database and
# runs OPS operations of one workload, configurations rotating each round.
#   rocksdb        --memory_budget=M: 2 write buffers of M/8, the rest a block cache holding
#                  index and filter blocks, Bloom 10, 8 MiB files
#   rocksdb-row50  the same with a row cache of half its cache part
#   cairn          cairn's defaults at M (the tuner sizes the key-value cache)
# Writes results.md, results.json and chart.png per workload under $OUT/<workload>.
#   scripts/kv-ycsb.sh     (ROUNDS=3: about 30 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/budget.sh
out=${OUT:-docs/results/kv-ycsb}
records=${RECORDS:-500000}
ops=${OPS:-500000}
rounds=${ROUNDS:-3}
pct=${PCT:-5}
workloads=${WORKLOADS:-b c d f}
work=${WORK:-/tmp/kv-ycsb}
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
w=crates/cairn-bench/workloads
m=$((records * 1000 * pct / 100))
budget_flags "$m"
common=(-p recordcount="$records" -p operationcount="$ops" --use_direct_reads=1 --compression_type=none --seed=7)
rm -rf "$work"
mkdir -p "$work" "$out"
for e in rocksdb cairn; do
  flags=$rocks
  [ "$e" = cairn ] && flags=$cairn
  $bin/ycsb -P $w/workloadb $flags "${common[@]}" --phase=load --wait_after_load=1 --db="$work/$e" \
    --json="$out/load-$e.json" > "$out/load-$e.txt"
done
sync
for wl in $workloads; do
  $bin/cairn-lab compare --tool ycsb --workload "$w/workload$wl" --rounds "$rounds" --work "$work/runs" \
    --out "$out/workload$wl" \
    --config "rocksdb=from:$work/rocksdb $rocks" \
    --config "rocksdb-row50=from:$work/rocksdb $rocks --row_cache_size=$((m * 3 / 8))" \
    --config "cairn=from:$work/cairn $cairn" \
    -- --phase=run "${common[@]}"
done
rm -rf "$work"
