#!/usr/bin/env bash
# Empty short ranges on a database loaded before them (issue "what is already on disk"): each
# engine loads NUM keys of 16 + 100 B once per budget (fillrandom, flush, waitforcompaction;
# keys 128 apart, so empty ranges of up to 126 values lie between two keys, inside every
# table's range), then every run starts, in a fresh process, on a copy of that database and
# reads READS empty ranges of R key values, O_DIRECT, throughput sampled every WINDOW reads.
# Configurations (one budget of PCT percent of the data for each, see scripts/lib/budget.sh):
#   rocksdb        2 write buffers of M/8, the rest a block cache holding index and filter
#                  blocks, Bloom 10, 8 MiB files; no range filter (iterate_upper_bound)
#   cairn-nobuild  cairn's defaults, no range filter built for the tables loaded before the
#                  reads (range_filter.build_rate = 0): the defaults before this issue
#   cairn          cairn's defaults (filters built for the tables the empty reads reach)
#   ceiling        cairn's defaults on a database loaded with every table given its filter up
#                  front (range_filter.by_workload = false, CEILING_BPK bits per key, 10)
#   cairn-<kind>, ceiling-<kind>   the same two with range_filter.kind = <kind>, for each of
#                  KINDS past the first (the default kind, grafite)
# NOBUILD=0 leaves out cairn-nobuild.
# Per cell (R, budget): results.md, results.json and chart.png (compare), windows.md and
# windows.png (throughput per window, median of the rounds, ratios to RocksDB) under
# $OUT/r<R>-<PCT>; the loads' output under $OUT/load-<PCT>.
#   scripts/loaded-ranges.sh     (3 sizes × 2 budgets, 3 rounds: about 40 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/budget.sh
out=${OUT:-docs/results/loaded-ranges}
num=${NUM:-3000000}
reads=${READS:-1000000}
window=${WINDOW:-50000}
rounds=${ROUNDS:-3}
budgets=${BUDGETS:-10 5}
sizes=${SIZES:-4 16 64}
work=${WORK:-/tmp/loaded-ranges}
kinds=${KINDS:-grafite}
ceiling_bpk=${CEILING_BPK:-10}
nobuild=${NOBUILD:-1}
others=${kinds#* }
[ "$others" = "$kinds" ] && others=""
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
shape=(--num="$num" --key_size=16 --value_size=100 --compression_type=none --key_stride=128
  --fill_key_dist=uniform --use_direct_reads=1 --seed=7)
ceiling_flags="--range_filter_by_workload=false --range_filter_bits_per_key=$ceiling_bpk"
for pct in $budgets; do
  m=$((num * 116 * pct / 100))
  budget_flags "$m"
  rm -rf "$work"
  mkdir -p "$work" "$out/load-$pct"
  loads=(rocksdb cairn ceiling)
  for k in $others; do loads+=("ceiling-$k"); done
  for e in "${loads[@]}"; do
    flags=$rocks
    [ "$e" = cairn ] && flags=$cairn
    [ "$e" = ceiling ] && flags="$cairn $ceiling_flags"
    [[ "$e" == ceiling-* ]] && flags="$cairn $ceiling_flags --range_filter_kind=${e#ceiling-}"
    # shellcheck disable=SC2086
    $bin/db_bench $flags --db="$work/$e" --benchmarks=fillrandom,flush,waitforcompaction "${shape[@]}" \
      --json="$out/load-$pct/$e.json" > "$out/load-$pct/$e.txt"
  done
  sync
  for r in $sizes; do
    cell="$out/r$r-$pct"
    cfg=(--config "rocksdb=from:$work/rocksdb $rocks")
    if [ "$nobuild" = 1 ]; then
      cfg+=(--config "cairn-nobuild=from:$work/cairn $cairn --range_filter_build_rate=0")
    fi
    cfg+=(--config "cairn=from:$work/cairn $cairn" --config "ceiling=from:$work/ceiling $cairn $ceiling_flags")
    # The load wrote no range filter (by workload, no empty read had come): one load for every kind.
    for k in $others; do
      cfg+=(--config "cairn-$k=from:$work/cairn $cairn --range_filter_kind=$k"
        --config "ceiling-$k=from:$work/ceiling-$k $cairn $ceiling_flags --range_filter_kind=$k")
    done
    $bin/cairn-lab compare --rounds "$rounds" --work "$work/runs" --out "$cell" "${cfg[@]}" -- \
      --benchmarks=rangerandom --use_existing_db=1 --range_size="$r" --empty_ratio=1 --reads="$reads" \
      --window="$window" "${shape[@]}"
    $bin/cairn-lab plot-windows --results "$cell/results.json" --phase rangerandom --base rocksdb \
      --title "empty ranges of $r values after a load, budget $pct% of the data" \
      --out "$cell/windows.png" --table "$cell/windows.md"
  done
  rm -rf "$work"
done
