#!/usr/bin/env bash
# multi_get (issue "what users expect, part two"): multireadrandom with batches of 8, 32 and
# 128 keys, on one thread, against a loop of gets over the same batches (cairn-loop:
# --multi_get_loop=1) and against RocksDB's batched MultiGet, at one memory budget for both
# engines (scripts/lib/budget.sh: RocksDB 2 write buffers of M/8, the rest a block cache with
# index and filters, Bloom 10, 8 MiB files). Each engine loads NUM keys of 16 + 100 B once; each
# run starts on a copy; configurations rotate each round. Cells under $OUT:
#   cached-B    budget CACHED_MIB, the block cache filled by a full scan first (B = batch size)
#   direct-B    O_DIRECT, budget PCT percent of the data (1%)
#   scripts/multiget.sh      (ROUNDS=3: about 15 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/budget.sh
out=${OUT:-docs/results/multiget}
num=${NUM:-2000000}
rounds=${ROUNDS:-3}
pct=${PCT:-1}
cached_mib=${CACHED_MIB:-1024}
direct_reads=${DIRECT_READS:-30000}
cached_reads=${CACHED_READS:-$num}  # readseq then reads every key: the cache is warm
batches=${BATCHES:-8 32 128}
work=${WORK:-/tmp/multiget}
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
shape=(--num="$num" --key_size=16 --value_size=100 --compression_type=none --seed=7)
mkdir -p "$out"
rm -rf "$work"
mkdir -p "$work"
# One load per engine, at the cached budget (the runs' budgets are their own).
budget_flags $((cached_mib << 20))
for e in rocksdb cairn; do
  flags=$rocks
  [ "$e" = cairn ] && flags=$cairn
  # shellcheck disable=SC2086
  $bin/db_bench $flags --db="$work/$e" --benchmarks=fillrandom,flush,waitforcompaction "${shape[@]}" > "$out/load-$e.txt"
done
sync
cell() { # name, budget bytes, benchmarks, reads, extra flags...
  local name=$1 m=$2 benchmarks=$3 reads=$4
  shift 4
  budget_flags "$m"
  $bin/cairn-lab compare --rounds "$rounds" --work "$work/runs" --out "$out/$name" \
    --config "rocksdb=from:$work/rocksdb $rocks" --config "cairn=from:$work/cairn $cairn" \
    --config "cairn-loop=from:$work/cairn $cairn --multi_get_loop=1" \
    -- --use_existing_db=1 "${shape[@]}" --benchmarks="$benchmarks" --reads="$reads" "$@"
}
for b in $batches; do
  # Cached: a full scan first fills the block cache (its row is the warm-up).
  cell "cached-$b" $((cached_mib << 20)) readseq,multireadrandom "$cached_reads" --batch_size="$b" --use_direct_reads=0
  cell "direct-$b" $((num * 116 * pct / 100)) multireadrandom "$direct_reads" --batch_size="$b" --use_direct_reads=1
done
rm -rf "$work"
