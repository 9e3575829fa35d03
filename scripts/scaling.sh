#!/usr/bin/env bash
# Reads at memory speed on 1 and 2 threads (issue 17): cairn's db_bench against Debian's RocksDB
# db_bench on the same data (1M random keys of 16 B / 100 B, Bloom 10, no compression), each
# database filled once and compacted, then read with --use_existing_db: a warm-up readrandom,
# then readrandom, readmissing and seekrandom (10 nexts), at 1 and 2 threads, engines
# interleaved in every round. Writes $OUT/results.md (medians of the rounds), chart.png and
# raw.txt.
#   scripts/scaling.sh                  (1 GiB cache; ROUNDS=3 NUM=1000000 READS=1000000)
#   CACHE=8388608 DIRECT=1 scripts/scaling.sh   (the I/O-bound parity run: 8 MB cache, O_DIRECT)
#   BEFORE=path/to/older/db_bench scripts/scaling.sh   (adds that cairn build as "before")
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/medians.sh
. scripts/lib/cached-reads.sh
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
out=${OUT:-bench-results/scaling}
work=${WORK:-/tmp/cairn-scaling}
rounds=${ROUNDS:-3}
num=${NUM:-1000000}
reads=${READS:-1000000}
cache=${CACHE:-1073741824}
direct=${DIRECT:-0}
mkdir -p "$out"
rm -rf "$work" && mkdir -p "$work"
scaling_data "$num" "$cache" "$direct"
declare -A exe=([cairn]=./target/release/db_bench [db_bench]=$(command -v db_bench))
engines="cairn db_bench"
if [ -n "${BEFORE:-}" ]; then
  exe[before]=$BEFORE
  engines="before cairn db_bench"
fi
raw="$out/raw.txt"
: >"$raw"
for e in $engines; do
  "${exe[$e]}" "${common[@]}" --db="$work/$e" --benchmarks=fillrandom,waitforcompaction >/dev/null 2>&1
done
for r in $(seq "$rounds"); do
  for t in 1 2; do
    for e in $engines; do
      "${exe[$e]}" "${common[@]}" --db="$work/$e" --use_existing_db=1 --threads="$t" --reads="$reads" \
        --benchmarks=readrandom,readrandom,readmissing,seekrandom 2>/dev/null | read_ops "$e" "$t" "$r" >>"$raw"
    done
  done
done
# Medians per (engine, threads, benchmark), then one row per benchmark and thread count.
awk '{ print $1, $2, $4, $5 }' "$raw" | medians | sort -k3,3 -k2,2n -k1,1 >"$out/medians.txt"
# The chart: one group per benchmark and thread count, one bar per engine.
awk '{ print $3 "-" $2 "t", $1, $4 }' "$out/medians.txt" >"$out/bars.txt"
./target/release/cairn-lab plot-bars --input "$out/bars.txt" --out "$out/chart.png" \
  --title "cached reads, $num keys (medians of $rounds rounds)" --ylabel "ops/s"
awk -v before="${BEFORE:+1}" '{ med[$1, $2, $3] = $4 }
  END {
    if (before) {
      printf "| benchmark | threads | cairn before ops/s | cairn ops/s | Debian db_bench ops/s | cairn / before | cairn / db_bench | cairn 2t / 1t |\n"
      printf "|---|---:|---:|---:|---:|---:|---:|---:|\n"
    } else {
      printf "| benchmark | threads | cairn ops/s | Debian db_bench ops/s | cairn / db_bench | cairn 2t / 1t |\n"
      printf "|---|---:|---:|---:|---:|---:|\n"
    }
    n = split("readrandom readmissing seekrandom", names, " ")
    for (i = 1; i <= n; i++) for (t = 1; t <= 2; t++) {
      x = names[i]; c = med["cairn", t, x]; d = med["db_bench", t, x]; p = med["before", t, x]
      s = (t == 2 && med["cairn", 1, x] > 0) ? sprintf("%.2f", c / med["cairn", 1, x]) : ""
      if (before)
        printf "| %s | %d | %d | %d | %d | %.2f | %.2f | %s |\n", x, t, p, c, d, (p > 0 ? c / p : 0), (d > 0 ? c / d : 0), s
      else
        printf "| %s | %d | %d | %d | %.2f | %s |\n", x, t, c, d, (d > 0 ? c / d : 0), s
    }
  }' <"$out/medians.txt" >"$out/results.md"
echo "rounds=$rounds num=$num reads=$reads cache=$cache direct=$direct (medians)" >>"$out/results.md"
cat "$out/results.md"
