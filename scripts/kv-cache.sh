#!/usr/bin/env bash
# The key-value cache (issue "cache what is hot"): skewed lookups over scrambled keys at one
# budget for both engines, O_DIRECT. Each engine's database is loaded once per budget
# (fillrandom of uniform keys, then waitforcompaction); every read run starts, in a fresh
# process, on a copy of it (`cairn-lab compare`'s `from:`), configurations rotating each round.
#   cells: ZIPFS × ABSENTS × BUDGETS (zipf θ; share of lookups for absent keys, which lie in
#          the gaps between keys 16 apart; budget in percent of the data), NUM keys of 16 + 100 B
# Configurations (the table's columns):
#   rocksdb         --memory_budget=M: 2 write buffers of M/8, the rest a block cache holding
#                   index and filter blocks, Bloom 10, 8 MiB files
#   rocksdb-rowN    the same with a row cache of N% of its cache part (taken from the cache)
#   cairn-nokv      cairn's defaults at M without the key-value cache (NOKV=1)
#   cairn           cairn's defaults at M (the tuner sizes the key-value cache)
# Each cell writes results.md, results.json and chart.png under $OUT/zipfθ-absentA-P; each
# load's output and JSON report go to $OUT/load-P.
# PHASES replaces the read phase (e.g. `readrandom@warm,readrandom`).
#   scripts/kv-cache.sh     (the defaults: 18 cells, 3 rounds, about 80 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/budget.sh
out=${OUT:-docs/results/kv-cache}
num=${NUM:-3000000}
reads=${READS:-500000}
rounds=${ROUNDS:-3}
zipfs=${ZIPFS:-0.99 0.9 0.8}
absents=${ABSENTS:-0.3 0}
budgets=${BUDGETS:-10 5 2}
rows=${ROWS:-25 50 75}
phases=${PHASES:-readrandom}
nokv=${NOKV:-0}
work=${WORK:-/tmp/kv-cache-loads}
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
shape=(--num="$num" --key_size=16 --value_size=100 --compression_type=none --key_stride=16
  --fill_key_dist=uniform --use_direct_reads=1 --seed=7)
for pct in $budgets; do
  m=$((num * 116 * pct / 100))
  budget_flags "$m"
  # One load per engine and budget (a row cache changes nothing of a load).
  rm -rf "$work/rocksdb-$pct" "$work/cairn-$pct"
  mkdir -p "$out/load-$pct"
  for e in rocksdb cairn; do
    flags=$rocks
    [ "$e" = cairn ] && flags=$cairn
    $bin/db_bench $flags --db="$work/$e-$pct" --benchmarks=fillrandom,flush,waitforcompaction "${shape[@]}" \
      --json="$out/load-$pct/$e.json" > "$out/load-$pct/$e.txt"
  done
  sync
  for z in $zipfs; do
    for a in $absents; do
      cfg=(--config "rocksdb=from:$work/rocksdb-$pct $rocks")
      for r in $rows; do
        cfg+=(--config "rocksdb-row$r=from:$work/rocksdb-$pct $rocks --row_cache_size=$((m * 3 / 4 * r / 100))")
      done
      if [ "$nokv" = 1 ]; then
        cfg+=(--config "cairn-nokv=from:$work/cairn-$pct $cairn --row_cache_size=0")
      fi
      cfg+=(--config "cairn=from:$work/cairn-$pct $cairn")
      $bin/cairn-lab compare --rounds "$rounds" --work "$work/runs" --out "$out/zipf$z-absent$a-$pct" "${cfg[@]}" -- \
        --benchmarks="$phases" --use_existing_db=1 --reads="$reads" --key_dist=zipf:"$z" --empty_ratio="$a" "${shape[@]}"
    done
  done
  rm -rf "$work/rocksdb-$pct" "$work/cairn-$pct"
done
