#!/usr/bin/env bash
# Tail latency under mixed load (issue "writes never wait"): YCSB A and F, 1M records of 1 KB,
# cairn against RocksDB 7.8, under memory pressure (16 MiB cache, O_DIRECT) and cached (2 GiB),
# with compaction settled after the load (--wait_after_load=1) and as YCSB runs it (no wait).
# Part `fill`: db_bench fillrandom of 10M keys (16 B + 100 B), the put latency tail.
# Part `nice`: YCSB A and F settled under pressure with the compaction threads at nice 0, 10
# and 19 (`background.compaction_nice`) beside RocksDB.
# Per operation kind: p50/p99/p99.9/p99.99/max, medians of the rounds (engines interleaved,
# fresh processes). Each part writes results.md, results.json, tails.txt and tails.png.
#   scripts/ycsb-tail.sh [settled] [settled-cached] [nowait] [nowait-cached] [fill] [nice]
#     (default: all but nice)
#   BEFORE=/path/to/older/target/release/ycsb scripts/ycsb-tail.sh   (adds that build as "before";
#     its sibling db_bench for `fill`)
#   ROUNDS=3 OPS=1000000 RECORDS=1000000 FILL_ROUNDS=1 FILL_NUM=10000000 OUT=bench-results/ycsb-tail
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
w=crates/cairn-bench/workloads
out=${OUT:-bench-results/ycsb-tail}
rounds=${ROUNDS:-3}
ops=${OPS:-1000000}
records=${RECORDS:-1000000}
parts=${*:-settled settled-cached nowait nowait-cached fill}
for part in $parts; do
  if [ "$part" = fill ]; then
    configs=(--config cairn=--engine=cairn --config rocksdb=--engine=rocksdb)
    if [ -n "${BEFORE:-}" ]; then
      configs+=(--config "before=runner:$(dirname "$BEFORE")/db_bench --engine=cairn")
    fi
    sync
    $bin/cairn-lab compare --tool db_bench --rounds "${FILL_ROUNDS:-1}" --out "$out/fill" "${configs[@]}" \
      -- --benchmarks=fillrandom --num="${FILL_NUM:-10000000}" --key_size=16 --value_size=100 \
      --bloom_bits=10 --compression_type=none --seed=1 --histogram=1
    $bin/cairn-lab plot-bars --input "$out/fill/tails.txt" --out "$out/fill/tails.png" \
      --title "fillrandom: p99.9 put latency" --ylabel "p99.9 µs"
    continue
  fi
  extra=()
  if [ "$part" = nice ]; then
    extra=(--config "nice10=--engine=cairn --use_direct_reads=1 --compaction_nice=10"
      --config "nice19=--engine=cairn --use_direct_reads=1 --compaction_nice=19")
  fi
  case $part in
    settled | nice) cache=16777216 direct=1 wait=1 ;;
    settled-cached) cache=2147483648 direct=0 wait=1 ;;
    nowait) cache=16777216 direct=1 wait=0 ;;
    nowait-cached) cache=2147483648 direct=0 wait=0 ;;
    *) echo "unknown part $part (settled, settled-cached, nowait, nowait-cached, fill, nice)" >&2; exit 2 ;;
  esac
  configs=(--config "cairn=--engine=cairn --use_direct_reads=$direct" "${extra[@]}"
    --config "rocksdb=--engine=rocksdb --use_direct_reads=$direct")
  if [ -n "${BEFORE:-}" ]; then
    configs+=(--config "before=runner:$BEFORE --engine=cairn --use_direct_reads=$direct")
  fi
  sync
  $bin/cairn-lab compare --tool ycsb --rounds "$rounds" --out "$out/$part" "${configs[@]}" \
    --workload $w/workloada --workload $w/workloadf \
    -- -p recordcount="$records" -p operationcount="$ops" --cache_size="$cache" --bloom_bits=10 \
    --wait_after_load="$wait"
  $bin/cairn-lab plot-bars --input "$out/$part/tails.txt" --out "$out/$part/tails.png" \
    --title "YCSB $part: p99.9 per operation kind (medians of $rounds rounds)" --ylabel "p99.9 µs"
done
echo "results in $out"
