#!/usr/bin/env bash
# Transactions against RocksDB's (OptimisticTransactionDB and TransactionDB) and fjall's
# (optimistic, serializable) at one memory budget (issue "transactions"). Each engine loads NUM
# accounts of 16 + 100 B once (fillrandom; a value's first 8 bytes are its balance); every run
# starts, in a fresh process, on a copy of its load.
#   transfer-<dist>-<threads>t   txtransfer: read two accounts for update, move an amount,
#                                commit; retried until it commits (TOTAL transfers in all)
#   ycsbf-<threads>t             txrmw: YCSB F as transactions, zipf 0.99: half lookups, half
#                                read-modify-writes
#   readonly                     txreadonly (10 gets in a read-only transaction) and
#                                snapshotreads (10 gets on a snapshot), one thread, after a
#                                warm-up phase, in the order A B B A
# CELLS (default all) names the cells to run: transfer, ycsbf, readonly.
# Configurations (budget M: RocksDB 2 write buffers of M/8 and the rest its block cache with
# index and filter blocks, Bloom 10, 8 MiB files; fjall the same split; cairn its defaults):
#   cairn (optimistic, serializable), cairn-pessimistic, rocksdb-optimistic,
#   rocksdb-pessimistic, fjall (optimistic)
# Per cell: results.md, results.json and chart.png under $OUT/<cell> (throughput, p99 latency,
# abort rate; medians of ROUNDS interleaved rounds).
#   scripts/transactions.sh     (about 25 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/budget.sh
out=${OUT:-docs/results/transactions}
num=${NUM:-1000000}
total=${TOTAL:-400000}
rounds=${ROUNDS:-3}
threads_list=${THREADS:-1 2 8}
m=${BUDGET:-33554432}
work=${WORK:-/tmp/transactions}
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
budget_flags "$m"
fjall="--engine=fjall --write_buffer_size=$((m / 8)) --cache_size=$((m - m / 4)) --bloom_bits=10"
shape=(--num="$num" --key_size=16 --value_size=100 --compression_type=none --seed=7)
rm -rf "$work"
mkdir -p "$work" "$out/load"
for e in rocksdb fjall cairn; do
  case $e in
    rocksdb) flags=$rocks ;;
    fjall) flags=$fjall ;;
    cairn) flags=$cairn ;;
  esac
  # shellcheck disable=SC2086
  $bin/db_bench $flags --db="$work/$e" --benchmarks=fillrandom "${shape[@]}" \
    --json="$out/load/$e.json" > "$out/load/$e.txt"
done
sync
cfg=(--config "cairn=from:$work/cairn $cairn --txn=optimistic"
  --config "cairn-pessimistic=from:$work/cairn $cairn --txn=pessimistic"
  --config "rocksdb-optimistic=from:$work/rocksdb $rocks --txn=optimistic"
  --config "rocksdb-pessimistic=from:$work/rocksdb $rocks --txn=pessimistic"
  --config "fjall=from:$work/fjall $fjall --txn=optimistic")
cell() {
  local name=$1
  shift
  $bin/cairn-lab compare --rounds "$rounds" --work "$work/runs" --out "$out/$name" "${cfg[@]}" -- \
    --use_existing_db=1 "${shape[@]}" "$@"
}
cells=${CELLS:-transfer ycsbf readonly}
has() { [[ " $cells " == *" $1 "* ]]; }
has transfer && for dist in uniform zipf:0.99; do
  for t in $threads_list; do
    cell "transfer-${dist/:/-}-${t}t" --benchmarks=txtransfer --key_dist="$dist" --threads="$t" --reads=$((total / t))
  done
done
has ycsbf && for t in 1 8; do
  cell "ycsbf-${t}t" --benchmarks=txrmw --key_dist=zipf:0.99 --threads="$t" --reads=$((total / t))
done
# A warm-up phase first, then the two kinds alternating (the cache still warms between them).
has readonly && cell readonly --benchmarks=snapshotreads@warmup,txreadonly,snapshotreads,snapshotreads@b,txreadonly@b \
  --key_dist=uniform --threads=1 --reads=$((total / 4))
rm -rf "$work"
