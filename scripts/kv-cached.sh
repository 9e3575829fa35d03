#!/usr/bin/env bash
# Cached skewed lookups (issue "cache what is hot", measurement (d)): NUM random keys of 16 B /
# 100 B, Bloom 10, no compression, a 1 GiB block cache (everything fits), each database filled
# once and compacted, then read with --use_existing_db on 1 and 2 threads (a warm-up readrandom,
# then the measured one), engines interleaved in every round:
#   cairn          zipf 0.99 over scrambled keys, a key-value cache of ROW bytes
#   cairn-uniform  the same with uniform keys
#   rocksdb        RocksDB 7.8 through our adapter, zipf 0.99, a row cache of ROW bytes
#   rocksdb-norow  the same without a row cache
#   db_bench       Debian's db_bench (RocksDB 7.8.3), uniform keys (it draws no zipf for
#                  readrandom), a row cache of ROW bytes
#   db_bench-norow the same without a row cache (RocksDB's default, and its faster)
# Writes $OUT/results.md (medians of the rounds), chart.png and raw.txt.
#   scripts/kv-cached.sh       (ROUNDS=3 NUM=1000000 READS=2000000 ROW=268435456: ~6 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/medians.sh
. scripts/lib/cached-reads.sh
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
out=${OUT:-bench-results/kv-cached}
work=${WORK:-/tmp/cairn-kv-cached}
rounds=${ROUNDS:-3}
num=${NUM:-1000000}
reads=${READS:-2000000}
row=${ROW:-268435456}
mkdir -p "$out"
rm -rf "$work" && mkdir -p "$work"
scaling_data "$num" 1073741824 0
ours=./target/release/db_bench
debian=$(command -v db_bench)
declare -A exe=([cairn]=$ours [cairn-uniform]=$ours [rocksdb]=$ours [rocksdb-norow]=$ours [db_bench]=$debian
  [db_bench-norow]=$debian)
declare -A flags=(
  [cairn]="--engine=cairn --key_dist=zipf:0.99 --fill_key_dist=uniform"
  [cairn-uniform]="--engine=cairn"
  [rocksdb]="--engine=rocksdb --key_dist=zipf:0.99 --fill_key_dist=uniform"
  [rocksdb-norow]="--engine=rocksdb --key_dist=zipf:0.99 --fill_key_dist=uniform"
  [db_bench]=""
  [db_bench-norow]=""
)
declare -A rows=([cairn]=$row [cairn-uniform]=$row [rocksdb]=$row [rocksdb-norow]=0 [db_bench]=$row [db_bench-norow]=0)
# One database per engine (cairn-uniform reads cairn's).
declare -A db=([cairn]=cairn [cairn-uniform]=cairn [rocksdb]=rocksdb [rocksdb-norow]=rocksdb [db_bench]=db_bench
  [db_bench-norow]=db_bench)
engines="cairn cairn-uniform rocksdb rocksdb-norow db_bench db_bench-norow"
raw="$out/raw.txt"
: >"$raw"
for e in cairn rocksdb db_bench; do
  # shellcheck disable=SC2086
  "${exe[$e]}" "${common[@]}" ${flags[$e]} --db="$work/${db[$e]}" --benchmarks=fillrandom,waitforcompaction >/dev/null 2>&1
done
for r in $(seq "$rounds"); do
  for t in 1 2; do
    for e in $engines; do
      # shellcheck disable=SC2086
      "${exe[$e]}" "${common[@]}" ${flags[$e]} --db="$work/${db[$e]}" --use_existing_db=1 --threads="$t" \
        --reads="$reads" --row_cache_size="${rows[$e]}" --benchmarks=readrandom,readrandom 2>/dev/null |
        read_ops "$e" "$t" "$r" >>"$raw"
    done
  done
done
awk '{ print $1, $2, $4, $5 }' "$raw" | medians | sort -k2,2n -k1,1 >"$out/medians.txt"
awk '{ print "readrandom-" $2 "t", $1, $4 }' "$out/medians.txt" >"$out/bars.txt"
./target/release/cairn-lab plot-bars --input "$out/bars.txt" --out "$out/chart.png" \
  --title "cached readrandom, $num keys (medians of $rounds rounds)" --ylabel "ops/s"
awk '{ med[$1, $2] = $4 }
  END {
    printf "| threads | cairn zipf 0.99 | cairn uniform | RocksDB (adapter) zipf 0.99, row / none | Debian db_bench uniform, row / none | cairn / best RocksDB | cairn / best db_bench | cairn uniform / best db_bench |\n"
    printf "|---:|---:|---:|---|---|---:|---:|---:|\n"
    for (t = 1; t <= 2; t++) {
      c = med["cairn", t]; u = med["cairn-uniform", t]; k = med["rocksdb", t]; kn = med["rocksdb-norow", t]
      d = med["db_bench", t]; dn = med["db_bench-norow", t]
      kb = k > kn ? k : kn; db = d > dn ? d : dn
      printf "| %d | %d | %d | %d / %d | %d / %d | %.2f | %.2f | %.2f |\n", t, c, u, k, kn, d, dn, c / kb, c / db, u / db
    }
  }' <"$out/medians.txt" >"$out/results.md"
echo "rounds=$rounds num=$num reads=$reads row cache / key-value cache=$row bytes (medians)" >>"$out/results.md"
cat "$out/results.md"
