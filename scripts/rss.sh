#!/usr/bin/env bash
# Peak RSS against the memory budget (issue "adaptive engine out of the box": one budget means
# the process's memory). For each budget in BUDGETS (MiB): cairn's defaults with only the budget
# given, today's-default static split, and RocksDB 7.8.3 at the same total memory (2 write
# buffers of M/8, a block cache holding index and filter blocks, Bloom 10, 8 MiB files), on NUM
# keys of 16 + 100 B (4M: 464 MB, larger than every budget): fillrandom, then readrandom and
# seekrandom on zipf keys. `compare` writes results.md (with a peak-RSS table: the median and
# the max over rounds per configuration) and chart.png under $OUT/<budget>MiB.
#   scripts/rss.sh            (BUDGETS="64 256", ROUNDS=2: about 10 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-results/rss}
num=${NUM:-4000000}
rounds=${ROUNDS:-2}
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
sync
for mib in ${BUDGETS:-64 256}; do
  m=$((mib << 20))
  ./target/release/cairn-lab compare --rounds "$rounds" --out "$out/${mib}MiB" \
    --config "rocksdb=--engine=rocksdb --memory_budget=$m --write_buffer_size=$((m / 8)) --target_file_size_base=8388608 --bloom_bits=10" \
    --config "old=--engine=cairn --defaults=engine --memory_budget=$m --memory_tuner=0 --bpk_policy=uniform --range_filter_bits_per_key=0" \
    --config "new=--engine=cairn --defaults=engine --memory_budget=$m" \
    -- --benchmarks=fillrandom,readrandom,seekrandom --num="$num" --reads=500000 --key_size=16 --value_size=100 \
    --compression_type=none --key_dist=zipf:0.99 --seek_nexts=10 --seed=7
done
