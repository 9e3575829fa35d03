#!/usr/bin/env bash
# Loads NUM random keys (16 B keys, 100 B values, 10 bits/key, no compression) into cairn under
# Leveling, Garnering c=0.8 and c=0.4, and into RocksDB (Debian db_bench 7.8.3) with the same
# sizes, waits for compactions, and prints level shape and write amplification.
#   scripts/level-shape.sh [NUM]     (default 10000000)
set -euo pipefail
cd "$(dirname "$0")/.."
num=${1:-10000000}
work=${CAIRN_BENCH_DIR:-/tmp/cairn-levels}
mkdir -p "$work"
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
common="--num=$num --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=none --seed=1"
for policy in "leveling" "garnering --garnering_c=0.8" "garnering --garnering_c=0.4"; do
  rm -rf "$work/cairn"
  echo "== cairn --merge_policy=$policy"
  # shellcheck disable=SC2086
  ./target/release/db_bench --benchmarks=fillrandom,waitforcompaction $common --merge_policy=$policy --db="$work/cairn" \
    | grep -E "^(fillrandom|waitforcompaction)|^  cairn:"
done
rm -rf "$work/rocksdb"
echo "== rocksdb (Debian db_bench)"
# shellcheck disable=SC2086
db_bench --benchmarks=fillrandom,waitforcompaction,levelstats,stats $common --db="$work/rocksdb" 2>&1 \
  | grep -E "^(fillrandom|waitforcompaction)|^ +L[0-9]|^Level|^ *Sum|Files in|Cumulative writes|Cumulative compaction" || true
rm -rf "$work"
