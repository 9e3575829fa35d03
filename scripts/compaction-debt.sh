#!/usr/bin/env bash
# Compaction debt after fast loads (issue "compaction keeps up"): YCSB A–F as YCSB runs them
# (load, then run at once) and with compaction settled between the two, under memory pressure
# (1M records of 1 KB, 16 MiB cache, O_DIRECT for cairn and RocksDB; fjall has no O_DIRECT) and
# with a cache that holds everything; db_bench fillrandom of 10M keys with L0 files over time;
# PNGs of L0 files over a YCSB A load + run and over the fill.
#   scripts/compaction-debt.sh [pressure] [cached] [settled] [settled-cached] [fill]
#   (default: all; ~2 h)
# Results go to $OUT (default /tmp/cairn-debt): one directory per part with results.md, JSON
# and PNGs.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/cairn-debt}
parts=${*:-pressure cached settled settled-cached fill}
mkdir -p "$out"
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
w=crates/cairn-bench/workloads
ops=${OPS:-200000}
scan_ops=${SCAN_OPS:-50000}
records=${RECORDS:-1000000}
engines=(--config "cairn=--engine=cairn --use_direct_reads=1" --config "rocksdb=--engine=rocksdb --use_direct_reads=1" --config fjall=--engine=fjall)
cached_engines=(--config cairn=--engine=cairn --config rocksdb=--engine=rocksdb --config fjall=--engine=fjall)

ycsb_part() { # NAME CACHE EXTRA...
  local name=$1 cache=$2
  shift 2
  local engines_used=("${engines[@]}")
  [[ $name == *cached ]] && engines_used=("${cached_engines[@]}")
  $bin/cairn-lab compare --tool ycsb --rounds 2 --out "$out/$name" "${engines_used[@]}" \
    --workload $w/workloada --workload $w/workloadb --workload $w/workloadc --workload $w/workloadd --workload $w/workloadf \
    -- -p recordcount=$records -p operationcount=$ops --cache_size=$cache --bloom_bits=10 "$@"
  # Short scans are ~100x slower per operation: fewer of them.
  $bin/cairn-lab compare --tool ycsb --rounds 2 --out "$out/$name-e" "${engines_used[@]}" --workload $w/workloade \
    -- -p recordcount=$records -p operationcount=$scan_ops --cache_size=$cache --bloom_bits=10 "$@"
}

for part in $parts; do
  case $part in
    pressure) ycsb_part pressure 16777216 ;;
    cached) ycsb_part cached 2147483648 ;;
    settled) ycsb_part settled 16777216 --wait_after_load=1 ;;
    settled-cached) ycsb_part settled-cached 2147483648 --wait_after_load=1 ;;
    fill)
      mkdir -p "$out/fill"
      for e in cairn rocksdb; do
        rm -rf "$out/fill/db"
        $bin/db_bench --engine=$e --benchmarks=fillrandom,waitforcompaction --num=10000000 --key_size=16 --value_size=100 \
          --bloom_bits=10 --compression_type=none --seed=1 --db="$out/fill/db" --json "$out/fill/$e.json" | grep -E "^(fillrandom|waitfor)|^cairn:"
      done
      rm -rf "$out/fill/db"
      $bin/cairn-lab plot-timeline --out "$out/fill/l0.png" --title "db_bench fillrandom 10M keys, then waitforcompaction" \
        cairn="$out/fill/cairn.json" rocksdb="$out/fill/rocksdb.json"
      for e in cairn rocksdb; do
        $bin/ycsb -P $w/workloada -p recordcount=$records -p operationcount=$ops --cache_size=16777216 --bloom_bits=10 \
          --use_direct_reads=1 --engine=$e --db="$out/fill/db" --json "$out/fill/ycsb-a-$e.json" | grep -E "Throughput|after"
        rm -rf "$out/fill/db"
      done
      $bin/cairn-lab plot-timeline --out "$out/fill/ycsb-a-l0.png" --title "YCSB A: load 1M x 1 KB, then run (16 MiB cache, O_DIRECT)" \
        cairn="$out/fill/ycsb-a-cairn.json" rocksdb="$out/fill/ycsb-a-rocksdb.json"
      ;;
    *) echo "unknown part $part (pressure, cached, settled, settled-cached, fill)" >&2; exit 2 ;;
  esac
done
echo "results in $out"
