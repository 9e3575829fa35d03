#!/usr/bin/env bash
# Skewed point lookups on a database loaded before them (issue "what is already on disk", point
# filters): each configuration loads NUM keys of 16 + 100 B once per budget (fillrandom, flush,
# waitforcompaction; keys 128 apart, uniform), then every run starts, in a fresh process, on a
# copy of its database and makes READS lookups of each DISTS distribution, EMPTY of them for
# absent keys between existing ones, O_DIRECT, throughput sampled every WINDOW lookups.
# A point filter's bits are chosen when its table is written; the load saw no lookups, so the
# static policies differ only in how they spread the bits over the levels, and only the
# elastic one moves bits to the tables the lookups reach.
# Configurations (one budget of PCT percent of the data for each, see scripts/lib/budget.sh):
#   rocksdb    2 write buffers of M/8, the rest a block cache holding index and filter blocks,
#              Bloom 10, 8 MiB files
#   cairn      cairn's defaults (filters.policy = mnemosyne)
#   uniform, monkey, mnemosyne-elastic   the defaults with that filters.policy
# Per cell (distribution, budget): results.md, results.json and chart.png (compare),
# windows.md and windows.png (throughput per window, median of the rounds, ratios to RocksDB)
# under $OUT/<dist>-<PCT>; the loads' output under $OUT/load-<PCT>.
#   scripts/loaded-points.sh     (2 distributions × 3 budgets, 3 rounds: about 50 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/budget.sh
out=${OUT:-docs/results/loaded-points}
num=${NUM:-3000000}
reads=${READS:-2000000}
window=${WINDOW:-100000}
rounds=${ROUNDS:-3}
budgets=${BUDGETS:-10 5 2}
dists=${DISTS:-zipfrange:0.99 zipf:0.99}
empty=${EMPTY:-0.5}
policies=${POLICIES:-uniform monkey mnemosyne-elastic}
work=${WORK:-/tmp/loaded-points}
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
shape=(--num="$num" --key_size=16 --value_size=100 --compression_type=none --key_stride=128
  --fill_key_dist=uniform --use_direct_reads=1 --seed=7)
for pct in $budgets; do
  m=$((num * 116 * pct / 100))
  budget_flags "$m"
  rm -rf "$work"
  mkdir -p "$work" "$out/load-$pct"
  cfg=()
  for e in rocksdb cairn $policies; do
    case $e in
      rocksdb) flags=$rocks ;;
      cairn) flags=$cairn ;;
      *) flags="$cairn --bpk_policy=$e" ;;
    esac
    # shellcheck disable=SC2086
    $bin/db_bench $flags --db="$work/$e" --benchmarks=fillrandom,flush,waitforcompaction "${shape[@]}" \
      --json="$out/load-$pct/$e.json" > "$out/load-$pct/$e.txt"
    cfg+=(--config "$e=from:$work/$e $flags")
  done
  sync
  for d in $dists; do
    cell="$out/${d/:/-}-$pct"
    $bin/cairn-lab compare --rounds "$rounds" --work "$work/runs" --out "$cell" "${cfg[@]}" -- \
      --benchmarks=readrandom --use_existing_db=1 --key_dist="$d" --empty_ratio="$empty" \
      --reads="$reads" --window="$window" "${shape[@]}"
    $bin/cairn-lab plot-windows --results "$cell/results.json" --phase readrandom --base rocksdb \
      --title "lookups ($d, $empty absent) after a load, budget $pct% of the data" \
      --out "$cell/windows.png" --table "$cell/windows.md"
  done
  rm -rf "$work"
done
