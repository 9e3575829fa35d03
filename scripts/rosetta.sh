#!/usr/bin/env bash
# Rosetta's results at laptop scale (issue "range filter"). Parts:
#   fig5   empty range queries of R ∈ {1,2,4,8,16,32,64} key values (the paper's Fig. 5): cairn
#          with 10, 16 and 22 bits per key of range filter, cairn without, and RocksDB 7.8 (no
#          range filter; iterate_upper_bound), NUM keys of 16 B / 100 B on a stride of 1024 (the
#          empty ranges lie in the gaps, inside every table's key range), O_DIRECT, a block
#          cache of 2% of the data plus what the largest configuration's filters and index
#          take, the same for every engine (filters and index charged to it: cairn reserves
#          its pinned index blocks and range filters in it). The same runs
#          give the costs (Fig. 6 and 7): fillrandom with and without the filter, readrandom,
#          and non-empty ranges (rangenonempty: each starts at a key).
#   fpr    FPR against bits per key for R = 16 and 64 (Fig. 8), in memory: the default layout,
#          the layout from the sampled sizes, and (probe budget 30) the multi-level layout; and
#          with queries over 10% of the keys, per-file bits by workload against uniform bits.
#   ycsb   YCSB E with and without the range filter (its scans have no upper bound, so the
#          filter cannot help them; this measures what it costs).
# Each part writes results.md, results.json and chart.png under $OUT/<part>.
#   scripts/rosetta.sh [fig5] [fpr] [ycsb]     (default all; about 45 minutes with NUM=4000000)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/cairn-rosetta}
parts=${*:-fig5 fpr ycsb}
num=${NUM:-4000000}
rounds=${ROUNDS:-2}
reads=${READS:-20000}
mkdir -p "$out"
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
# 2% of the data, plus 10 bits/key of point filter, 22 of range filter and ~1 byte/key of index.
cache=$((num * 116 / 50 + num * (10 + 22) / 8 + num))
for part in $parts; do
  case $part in
    fig5)
      $bin/cairn-lab compare --rounds "$rounds" --out "$out/fig5" \
        --config rocksdb=--engine=rocksdb \
        --config cairn-no-rf=--engine=cairn \
        --config cairn-rf10="--engine=cairn --range_filter_bits_per_key=10" \
        --config cairn-rf16="--engine=cairn --range_filter_bits_per_key=16" \
        --config cairn-rf22="--engine=cairn --range_filter_bits_per_key=22" -- \
        --benchmarks=fillrandom,waitforcompaction,readrandom,rangenonempty,rangerandom \
        --num="$num" --reads="$reads" --key_stride=1024 --range_size=1,2,4,8,16,32,64 --empty_ratio=1 \
        --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=none --use_direct_reads=1 \
        --cache_index_and_filter_blocks=1 --cache_size=$cache
      ;;
    fpr)
      $bin/cairn-lab range-filter-fpr --out "$out/fpr"
      $bin/cairn-lab range-filter-fpr --out "$out/fpr-budget30" --probe_budget 30
      # Per-file bits: queries over the first 10% of the keys, bits by workload and uniform.
      $bin/cairn-lab range-filter-fpr --out "$out/fpr-hot" --hot_share 0.1 --bpk 4,6,8,10,12
      $bin/cairn-lab range-filter-fpr --out "$out/fpr-hot-uniform" --hot_share 0.1 --bpk 4,6,8,10,12 --by_workload false
      ;;
    ycsb)
      $bin/cairn-lab compare --tool ycsb --rounds "$rounds" --out "$out/ycsb" \
        --config cairn-no-rf=--engine=cairn \
        --config cairn-rf22="--engine=cairn --range_filter_bits_per_key=22" \
        --workload crates/cairn-bench/workloads/workloade -- \
        -p recordcount=1000000 -p operationcount=50000 --bloom_bits=10 --use_direct_reads=1 \
        --cache_size=$((1000000 * 1100 / 50))
      ;;
    *) echo "unknown part $part (fig5, fpr, ycsb)" >&2; exit 2 ;;
  esac
done
echo "results in $out"
