#!/usr/bin/env bash
# What a user gets (issue "adaptive engine out of the box"): cairn's defaults against today's
# defaults and RocksDB 7.8.3, each at the same total memory, in one `compare` run per part
# (fresh process and directory per run, configurations rotating each round).
#   parts: cached    memory ≥ data: 512 MiB for NUM keys of 16 + 100 B (2M: 232 MB)
#          pressure  memory 7% of the data, O_DIRECT reads
#          ycsb      YCSB A–F, RECORDS records of 1 KB, memory 7% of the data, O_DIRECT
# db_bench cells, one process each: fillrandom and overwrite (uniform keys), then after
# compaction readrandom, readmissing, seekrandom (10 nexts), readrandomwriterandom (90% reads)
# and rangerandom (R = 8), the reads on zipf 0.99 keys with half of the lookups and ranges
# absent (keys 16 apart, absent ones in the gaps).
# Configurations (names are the table's columns):
#   rocksdb   --memory_budget=M: 2 write buffers of M/8, the rest a block cache holding index
#             and filter blocks (high priority, L0's pinned), Bloom 10, 8 MiB files (its filter
#             blocks stay well below a cache shard)
#   old       today's defaults at M: static split (a quarter write memory), uniform Bloom 10
#   new       Options::default() with only --memory_budget=M (CANDIDATES adds a run per filter
#             policy to compare before a default is chosen: "new-POLICY"; NEW=0 leaves "new" out)
# Each part writes results.md, results.json and chart.png under $OUT/<part>.
#   scripts/defaults-suite.sh [cached] [pressure] [ycsb]   (ROUNDS=1: about 40 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-results/defaults}
parts=${*:-cached pressure ycsb}
num=${NUM:-2000000}
reads=${READS:-200000}
records=${RECORDS:-500000}
ops=${OPS:-200000}
rounds=${ROUNDS:-1}
candidates=${CANDIDATES:-}
with_new=${NEW:-1}
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
sync

configs() { # memory in bytes
  local m=$1
  cfg=(--config "rocksdb=--engine=rocksdb --memory_budget=$m --write_buffer_size=$((m / 8)) --target_file_size_base=8388608 --bloom_bits=10"
    --config "old=--engine=cairn --defaults=engine --memory_budget=$m --memory_tuner=0 --bpk_policy=uniform --range_filter_bits_per_key=0")
  if [ "$with_new" = 1 ]; then
    cfg+=(--config "new=--engine=cairn --defaults=engine --memory_budget=$m")
  fi
  for p in $candidates; do
    cfg+=(--config "new-$p=--engine=cairn --defaults=engine --memory_budget=$m --memory_tuner=1 --bpk_policy=$p")
  done
}

bench=(--benchmarks=fillrandom,overwrite,waitforcompaction,readrandom,readmissing,seekrandom,readrandomwriterandom,rangerandom
  --num="$num" --reads="$reads" --key_size=16 --value_size=100 --compression_type=none --key_stride=16
  --fill_key_dist=uniform --key_dist=zipf:0.99 --empty_ratio=0.5 --seek_nexts=10 --range_size=8
  --readwritepercent=90 --seed=7)

for part in $parts; do
  case $part in
    cached)
      configs $((512 << 20))
      $bin/cairn-lab compare --rounds "$rounds" --out "$out/cached" "${cfg[@]}" -- "${bench[@]}" ;;
    pressure)
      configs $((num * 116 * 7 / 100))
      $bin/cairn-lab compare --rounds "$rounds" --out "$out/pressure" "${cfg[@]}" -- "${bench[@]}" --use_direct_reads=1 ;;
    ycsb)
      configs $((records * 1100 * 7 / 100))
      $bin/cairn-lab compare --tool ycsb --rounds "$rounds" --out "$out/ycsb" "${cfg[@]}" \
        $(for x in a b c d e f; do echo --workload crates/cairn-bench/workloads/workload$x; done) -- \
        -p recordcount="$records" -p operationcount="$ops" --use_direct_reads=1 --seed=7 ;;
    *) echo "unknown part $part (cached, pressure, ycsb)" >&2; exit 2 ;;
  esac
done
