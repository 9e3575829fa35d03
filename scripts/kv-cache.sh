#!/usr/bin/env bash
# The key-value cache (issue "cache what is hot"): skewed lookups over scrambled keys at one
# budget for both engines, O_DIRECT, in one `cairn-lab compare` run per cell (fresh process and
# directory per run, configurations rotating each round).
#   cells: ZIPFS × BUDGETS (zipf θ; budget in percent of the data), ABSENT of the lookups for
#          absent keys (keys 16 apart, absent ones in the gaps), NUM keys of 16 + 100 B
# Configurations (the table's columns):
#   rocksdb         --memory_budget=M: 2 write buffers of M/8, the rest a block cache holding
#                   index and filter blocks, Bloom 10, 8 MiB files
#   rocksdb-rowN    the same with a row cache of N% of its cache part (taken from the cache)
#   cairn-nokv      cairn's defaults at M without the key-value cache
#   cairn           cairn's defaults at M (key-value cache share 0.1)
# Each cell writes results.md, results.json and chart.png under $OUT/zipfθ-P.
# PHASES replaces the read phase (`readrandom@warm,readrandom`: the second phase after the
# memory tuner has had a first to settle); NOKV=0 leaves cairn-nokv out.
#   scripts/kv-cache.sh            (ROUNDS=3, one cell: about 15 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-docs/results/kv-cache}
num=${NUM:-2000000}
reads=${READS:-500000}
rounds=${ROUNDS:-3}
zipfs=${ZIPFS:-0.9}
budgets=${BUDGETS:-10}
absent=${ABSENT:-0.3}
rows=${ROWS:-25 50}
phases=${PHASES:-readrandom}
nokv=${NOKV:-1}
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
sync
for z in $zipfs; do
  for pct in $budgets; do
    m=$((num * 116 * pct / 100))
    rocks="--engine=rocksdb --memory_budget=$m --write_buffer_size=$((m / 8)) --target_file_size_base=8388608 --bloom_bits=10"
    cfg=(--config "rocksdb=$rocks")
    for r in $rows; do
      cfg+=(--config "rocksdb-row$r=$rocks --row_cache_size=$((m * 3 / 4 * r / 100))")
    done
    if [ "$nokv" = 1 ]; then
      cfg+=(--config "cairn-nokv=--engine=cairn --defaults=engine --memory_budget=$m --row_cache_size=0")
    fi
    cfg+=(--config "cairn=--engine=cairn --defaults=engine --memory_budget=$m")
    $bin/cairn-lab compare --rounds "$rounds" --out "$out/zipf$z-$pct" "${cfg[@]}" -- \
      --benchmarks=fillrandom,waitforcompaction,"$phases" --num="$num" --reads="$reads" \
      --key_size=16 --value_size=100 --compression_type=none --key_stride=16 --fill_key_dist=uniform \
      --key_dist=zipf:"$z" --empty_ratio="$absent" --use_direct_reads=1 --seed=7
  done
done
