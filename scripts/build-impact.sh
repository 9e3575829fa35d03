#!/usr/bin/env bash
# What range-filter builds for tables already written cost the foreground (issue "what is
# already on disk"): cairn's defaults load NUM keys of 16 + 100 B (fillrandom, flush,
# waitforcompaction; keys 128 apart) at a budget of PCT percent of the data, O_DIRECT; then
# `cairn-lab build-impact` runs, per round and in fresh processes on copies of that database,
# point lookups with WRITE_PERCENT% overwrites on one thread, and a burst of empty ranges that
# makes the next round build filters, with builds (the defaults) and without
# (--range_filter_build_rate=0). Per budget: results.md, results.json, chart.png and the runs'
# intervals under $OUT/<PCT>.
#   scripts/build-impact.sh      (2 budgets × 5 rounds × 2 runs of 14 s, and the loads: ~10 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-docs/results/build-impact}
num=${NUM:-3000000}
rounds=${ROUNDS:-5}
budgets=${BUDGETS:-5 2}
write_percent=${WRITE_PERCENT:-10}
work=${WORK:-/tmp/build-impact}
cargo build --release -q -p cairn-bench
bin=./target/release
shape=(--num="$num" --key_size=16 --value_size=100 --compression_type=none --key_stride=128
  --fill_key_dist=uniform --use_direct_reads=1 --seed=7)
for pct in $budgets; do
  m=$((num * 116 * pct / 100))
  flags=(--engine=cairn --defaults=engine --memory_budget="$m")
  rm -rf "$work"
  mkdir -p "$work" "$out/$pct"
  $bin/db_bench "${flags[@]}" --db="$work/loaded" --benchmarks=fillrandom,flush,waitforcompaction "${shape[@]}" \
    > "$out/$pct/load.txt"
  sync
  $bin/cairn-lab build-impact --db "$work/loaded" --work "$work/runs" --out "$out/$pct" --num "$num" \
    --key_stride 128 --write_percent "$write_percent" --rounds "$rounds" "${flags[@]}" --use_direct_reads=true
  rm -rf "$work"
done
