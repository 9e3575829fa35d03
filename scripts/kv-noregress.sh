#!/usr/bin/env bash
# What the key-value cache must not cost (issue "cache what is hot", measurement (e)): this
# build against an older one (BEFORE=<its target/release directory>, e.g. the commit before the
# key-value cache built in a worktree), cairn's defaults at one budget of PCT percent of the data,
# O_DIRECT, fresh processes, builds interleaved:
#   fill      db_bench fillrandom of NUM keys (16 + 100 B), then uniform readrandom
#   ycsb-e    YCSB E (short scans, 5% inserts), RECORDS records of 1 KB
#   settled   uniform readrandom on a database each build loaded once and let settle
#             (fillrandom, flush, waitforcompaction), every run on a copy of it: the read path
#             alone (`fill` reads right after the load); also this build without its key-value
#             cache (cairn-nokv)
# Writes results.md, results.json and chart.png under $OUT/{fill,ycsb-e,settled}.
#   BEFORE=/tmp/before/target/release scripts/kv-noregress.sh    (ROUNDS=5: about 30 minutes)
#   PARTS="settled" runs only the parts named.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/budget.sh
: "${BEFORE:?BEFORE=<target/release directory of the older build>}"
out=${OUT:-docs/results/kv-noregress}
num=${NUM:-2000000}
reads=${READS:-500000}
records=${RECORDS:-300000}
rounds=${ROUNDS:-5}
pct=${PCT:-10}
parts=${PARTS:-fill ycsb-e settled}
work=${WORK:-/tmp/kv-noregress}
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
want() { [[ " $parts " == *" $1 "* ]]; }
budget_flags $((num * 116 * pct / 100))
shape=(--num="$num" --key_size=16 --value_size=100 --compression_type=none --use_direct_reads=1 --seed=7)
if want fill; then
  $bin/cairn-lab compare --rounds "$rounds" --out "$out/fill" \
    --config "before=runner:$BEFORE/db_bench $cairn" --config "cairn=$cairn" -- \
    --benchmarks=fillrandom,waitforcompaction,readrandom --reads="$reads" "${shape[@]}"
fi
if want settled; then
  rm -rf "$work"
  mkdir -p "$work" "$out/settled"
  for b in before cairn; do
    exe=$bin/db_bench
    [ "$b" = before ] && exe=$BEFORE/db_bench
    $exe $cairn --db="$work/$b" --benchmarks=fillrandom,flush,waitforcompaction "${shape[@]}" > "$out/settled/load-$b.txt"
  done
  sync
  $bin/cairn-lab compare --rounds "$rounds" --work "$work/runs" --out "$out/settled" \
    --config "before=from:$work/before runner:$BEFORE/db_bench $cairn" --config "cairn=from:$work/cairn $cairn" \
    --config "cairn-nokv=from:$work/cairn $cairn --row_cache_size=0" -- \
    --benchmarks=readrandom --use_existing_db=1 --reads="$reads" "${shape[@]}"
  rm -rf "$work"
fi
if want ycsb-e; then
  budget_flags $((records * 1000 * pct / 100))
  $bin/cairn-lab compare --tool ycsb --workload crates/cairn-bench/workloads/workloade --rounds "$rounds" \
    --out "$out/ycsb-e" \
    --config "before=runner:$BEFORE/ycsb $cairn" --config "cairn=$cairn" -- \
    -p recordcount="$records" -p operationcount="$records" --use_direct_reads=1 --compression_type=none --seed=7
fi
