#!/usr/bin/env bash
# Issue 32: is the partitioned memory component a better default? Options::default() (256 MiB
# budget, tuner) with the monolithic and with the partitioned component, db_bench's cells of
# scripts/defaults-suite.sh on 2M keys, cached (the default budget holds the data) and under
# pressure (7% of the data, O_DIRECT). results.md and chart.png under $OUT/<part>.
#   scripts/component-default.sh     (ROUNDS=2: about 15 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-results/component-default}
num=${NUM:-2000000}
rounds=${ROUNDS:-2}
cargo build --release -q -p cairn-bench --features rocksdb,fjall
sync
bench=(--benchmarks=fillrandom,overwrite,waitforcompaction,readrandom,readmissing,seekrandom,readrandomwriterandom,rangerandom
  --num="$num" --reads=200000 --key_size=16 --value_size=100 --compression_type=none --key_stride=16
  --fill_key_dist=uniform --key_dist=zipf:0.99 --empty_ratio=0.5 --seek_nexts=10 --range_size=8
  --readwritepercent=90 --seed=7)
for part in cached pressure; do
  extra=()
  [ "$part" = pressure ] && extra=(--memory_budget=$((num * 116 * 7 / 100)) --use_direct_reads=1)
  ./target/release/cairn-lab compare --rounds "$rounds" --out "$out/$part" \
    --config "monolithic=--engine=cairn --defaults=engine" \
    --config "partitioned=--engine=cairn --defaults=engine --memory_component=partitioned" \
    -- "${bench[@]}" "${extra[@]}"
done
