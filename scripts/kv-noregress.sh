#!/usr/bin/env bash
# What the key-value cache must not cost (issue "cache what is hot", measurement (e)): this
# build against an older one (BEFORE=<its target/release directory>, e.g. the commit before the
# key-value cache built in a worktree), cairn's defaults at one budget of PCT percent of the data,
# O_DIRECT, fresh processes, builds interleaved:
#   fill      db_bench fillrandom of NUM keys (16 + 100 B), then uniform readrandom
#   ycsb-e    YCSB E (short scans, 5% inserts), RECORDS records of 1 KB
# Writes results.md, results.json and chart.png under $OUT/{fill,ycsb-e}.
#   BEFORE=/tmp/before/target/release scripts/kv-noregress.sh    (ROUNDS=5: about 20 minutes)
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
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
budget_flags $((num * 116 * pct / 100))
$bin/cairn-lab compare --rounds "$rounds" --out "$out/fill" \
  --config "before=runner:$BEFORE/db_bench $cairn" --config "cairn=$cairn" -- \
  --benchmarks=fillrandom,waitforcompaction,readrandom --num="$num" --reads="$reads" --key_size=16 \
  --value_size=100 --compression_type=none --use_direct_reads=1 --seed=7
budget_flags $((records * 1000 * pct / 100))
$bin/cairn-lab compare --tool ycsb --workload crates/cairn-bench/workloads/workloade --rounds "$rounds" \
  --out "$out/ycsb-e" \
  --config "before=runner:$BEFORE/ycsb $cairn" --config "cairn=$cairn" -- \
  -p recordcount="$records" -p operationcount="$records" --use_direct_reads=1 --compression_type=none --seed=7
