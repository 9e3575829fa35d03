#!/usr/bin/env bash
# Range-filter memory at run time (issue "range filter at the limits", item 4): NUM keys of
# 16 + 100 B on a stride of 1024 with Grafite range filters of 22 bits per key on every table,
# O_DIRECT, index and filters charged to a block cache of 2% of the data plus the filters and
# index (the range grid's cache). One process opens the database and resizes the block cache
# step by step (`Db::resize_memory`: ×1, ½, ¼, ⅛, 1/16, ×1) while empty range reads of 16
# values run, under a uniform and a hot (zipfrange) key choice; per step the range-filter
# capacity (range_filter.memory_share of the cache), what the filters hold, data blocks and
# range-filter blocks read per query, µs per query. Writes results.md, results.json and
# chart.png under $OUT.
#   NUM=4000000 OUT=docs/results/DATE/range-memory scripts/range-memory.sh
#   DB=/path: use a database loaded before with the same flags (skips the load).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p cairn-bench
bin=./target/release
out=${OUT:-bench-results/range-memory}
num=${NUM:-4000000}
cache=$((num * 116 / 50 + num * (10 + 22) / 8 + num))
engine=(--bloom_bits=10 --compression_type=none --use_direct_reads=1 --cache_index_and_filter_blocks=1
  --cache_size="$cache" --range_filter_bits_per_key=22 --range_filter_kind=grafite
  --range_filter_by_workload=false)
db=${DB:-}
if [ -z "$db" ]; then
  db=${WORK:-/tmp/cairn-range-memory}
  rm -rf "$db"
  "$bin/db_bench" --engine=cairn --db="$db" "${engine[@]}" --num="$num" --key_stride=1024 --key_size=16 \
    --value_size=100 --seed=1 --benchmarks=fillrandom,waitforcompaction >/dev/null
fi
sync
mkdir -p "$out"
"$bin/cairn-lab" range-memory --db="$db" --out="$out" --num="$num" --key_stride=1024 --key_size=16 \
  --reads="${READS:-200000}" "${engine[@]}"
