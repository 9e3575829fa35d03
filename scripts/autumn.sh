#!/usr/bin/env bash
# Autumn's short-scan result at laptop scale: Leveling vs Garnering c = 0.8 and c = 0.4 at equal
# T, 10M keys of 16 B / 100 B, O_DIRECT, after compaction settles: db_bench seekrandom with 16
# nexts (and readrandom), with a block cache of 2% of the data and with almost none (the paper
# disables the cache), then YCSB C and E on 10M records of 100 B. Each part writes results.md,
# results.json and chart.png under $OUT (default /tmp/cairn-autumn).
#   scripts/autumn.sh [seek] [ycsb]       (default both; about an hour)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/cairn-autumn}
parts=${*:-seek ycsb}
num=${NUM:-10000000}
rounds=${ROUNDS:-2}
mkdir -p "$out"
# Built with the adapters so the binaries other scripts use are not replaced by ones without.
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
# T = 4 with a 16 MiB L1 gives Leveling four levels for 10M keys (1.2 GB), so Garnering has
# levels to save.
shape="--max_bytes_for_level_multiplier=4 --max_bytes_for_level_base=16777216 --target_file_size_base=8388608 --write_buffer_size=8388608"
configs=(--config leveling=--merge_policy=leveling
         --config garnering-0.8="--merge_policy=garnering --garnering_c=0.8"
         --config garnering-0.4="--merge_policy=garnering --garnering_c=0.4")
cache2pct=$((num * 116 / 50))
for part in $parts; do
  case $part in
    seek)
      for cache in "$cache2pct" 65536; do
        # shellcheck disable=SC2086
        $bin/cairn-lab compare --rounds "$rounds" --out "$out/seek-cache-$cache" "${configs[@]}" -- \
          --benchmarks=fillrandom,waitforcompaction,seekrandom,readrandom --num=$num --reads=100000 --seek_nexts=16 \
          --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=none --use_direct_reads=1 \
          --cache_size=$cache $shape
      done
      ;;
    ycsb)
      # shellcheck disable=SC2086
      $bin/cairn-lab compare --tool ycsb --rounds "$rounds" --out "$out/ycsb" "${configs[@]}" \
        --workload crates/cairn-bench/workloads/workloadc --workload crates/cairn-bench/workloads/workloade -- \
        -p recordcount=$num -p operationcount=100000 -p fieldcount=1 -p fieldlength=100 --wait_after_load=1 \
        --bloom_bits=10 --use_direct_reads=1 --cache_size=$cache2pct $shape
      ;;
    *) echo "unknown part $part (seek, ycsb)" >&2; exit 2 ;;
  esac
done
echo "results in $out"
