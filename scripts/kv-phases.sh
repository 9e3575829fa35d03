#!/usr/bin/env bash
# The key-value cache when the workload changes phase in one process (issue "cache what is
# hot", measurement (c)): zipf lookups, then uniform lookups, then short scans, then zipf
# lookups again, on one loaded database (copied for every run, O_DIRECT), cairn's defaults
# (the tuner sizes the key-value cache) against fixed splits of the same budget:
#   cairn          the defaults at M (budget: PCT percent of the data)
#   cairn-kvN      the key-value cache fixed at N% of M (0: none), the rest tuned as usual
# Writes results.md, results.json and chart.png (ratios to cairn) and phases.md (each phase:
# cairn against the best fixed split for it) under $OUT.
#   scripts/kv-phases.sh      (ROUNDS=3: about 25 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-docs/results/kv-phases}
num=${NUM:-2000000}
reads=${READS:-500000}
rounds=${ROUNDS:-3}
pct=${PCT:-10}
zipf=${ZIPF:-0.9}
splits=${SPLITS:-0 25 50}
work=${WORK:-/tmp/kv-phases}
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
m=$((num * 116 * pct / 100))
shape=(--num="$num" --key_size=16 --value_size=100 --compression_type=none --key_stride=16
  --fill_key_dist=uniform --use_direct_reads=1 --seed=7 --memory_budget="$m" --engine=cairn --defaults=engine)
rm -rf "$work/db"
mkdir -p "$work" "$out"
$bin/db_bench "${shape[@]}" --db="$work/db" --benchmarks=fillrandom,flush,waitforcompaction > "$out/load.txt"
sync
cfg=(--config "cairn=from:$work/db")
for s in $splits; do
  cfg+=(--config "cairn-kv$s=from:$work/db --row_cache_size=$((m * s / 100)) --memory_tuner_kv_cache=false")
done
phases="readrandom@zipf/zipf:$zipf,readrandom@uniform/uniform,seekrandom@scans/uniform,readrandom@zipf-again/zipf:$zipf"
$bin/cairn-lab compare --rounds "$rounds" --work "$work/runs" --out "$out" "${cfg[@]}" -- \
  --benchmarks="$phases" --use_existing_db=1 --reads="$reads" --seek_nexts=16 --empty_ratio=0.3 "${shape[@]}"
python3 - "$out" <<'EOF'
import json, statistics, sys
out = sys.argv[1]
runs = json.load(open(f"{out}/results.json"))
med = {}
for key, rs in runs.items():
    phase, config = key.rsplit("/", 1)
    med.setdefault(phase, {})[config] = statistics.median(r["ops_per_sec"] for r in rs)
rows = ["| phase | cairn ops/s | best fixed split | its ops/s | cairn / best |", "|---|---:|---|---:|---:|"]
for phase, by in med.items():
    fixed = {c: v for c, v in by.items() if c != "cairn"}
    best = max(fixed, key=fixed.get)
    rows.append(f"| {phase} | {by['cairn']:.0f} | {best} | {fixed[best]:.0f} | {by['cairn'] / fixed[best]:.2f}× |")
open(f"{out}/phases.md", "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
EOF
