#!/usr/bin/env bash
# What TLB misses cost a cached point lookup: cairn's db_bench and Debian's RocksDB db_bench on
# scaling.sh's data (1M random keys of 16 B / 100 B, Bloom 10, no compression, 1 GiB cache),
# each run with glibc's default heap and with a heap backed by transparent huge pages
# (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which has malloc ask for huge pages, and a 512 MiB
# MALLOC_TOP_PAD_, so that the heap grows in steps large enough to hold them). Nothing in either
# engine changes; only where their heap memory lands. The four runs are interleaved in every round.
# Writes $OUT/results.md (medians of the rounds, the huge-page resident bytes seen in each
# variant), chart.png and raw.txt. Needs transparent huge pages in "madvise" or "always" mode.
#   scripts/hugepages.sh                (ROUNDS=7 NUM=1000000 READS=1000000 THREADS=1)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/medians.sh
. scripts/lib/cached-reads.sh
thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo "")
case "$thp" in
  *"[never]"* | "") echo "transparent huge pages are off here ($thp): nothing to measure" >&2; exit 2 ;;
esac
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
out=${OUT:-bench-results/hugepages}
work=${WORK:-/tmp/cairn-hugepages}
rounds=${ROUNDS:-7}
num=${NUM:-1000000}
reads=${READS:-1000000}
threads=${THREADS:-1}
mkdir -p "$out"
rm -rf "$work" && mkdir -p "$work"
scaling_data "$num" 1073741824 0
declare -A exe=([cairn]=./target/release/db_bench [db_bench]=$(command -v db_bench))
huge=(env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 MALLOC_TOP_PAD_=536870912)
# cmd ENGINE VARIANT: sets `c` to the engine's command line, with the default heap (plain) or
# the huge-page one (`env` execs the engine: a background run's pid is the engine's).
cmd() {
  c=("${exe[$1]}" "${common[@]}" --db="$work/$1")
  if [ "$2" = huge ]; then c=("${huge[@]}" "${c[@]}"); fi
}
for e in cairn db_bench; do
  cmd "$e" plain
  "${c[@]}" --benchmarks=fillrandom,waitforcompaction >/dev/null 2>&1
done
raw="$out/raw.txt"
: >"$raw"
sync
for r in $(seq "$rounds"); do
  for e in cairn db_bench; do
    for v in plain huge; do
      cmd "$e" "$v"
      "${c[@]}" --use_existing_db=1 --threads="$threads" --reads="$reads" \
        --benchmarks=readrandom,readrandom,readmissing 2>/dev/null | read_ops "$e" "$v" "$r" >>"$raw"
    done
  done
done
# How much of each variant's memory was in huge pages, read once midway through a long run.
anon=()
for e in cairn db_bench; do
  for v in plain huge; do
    cmd "$e" "$v"
    "${c[@]}" --use_existing_db=1 --reads=$((reads * 5)) --benchmarks=readrandom >/dev/null 2>&1 &
    pid=$!
    sleep 4
    kb=$(awk '/^AnonHugePages/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null || echo "?")
    rss=$(awk '/^Rss/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null || echo "?")
    wait "$pid" || true
    anon+=("$e $v ${kb} ${rss}")
  done
done
awk '{ print $1, $2, $4, $5 }' "$raw" | medians | sort >"$out/medians.txt"
awk '{ print $3, $1 "-" $2, $4 }' "$out/medians.txt" >"$out/bars.txt"
./target/release/cairn-lab plot-bars --input "$out/bars.txt" --out "$out/chart.png" \
  --title "cached reads, default heap vs huge pages (medians of $rounds rounds)" --ylabel "ops/s"
{
  printf "| benchmark | cairn ops/s | cairn, huge pages | gain | RocksDB ops/s | RocksDB, huge pages | gain | cairn / RocksDB | both with huge pages |\n"
  printf "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
  awk '{ med[$1, $2, $3] = $4 }
    END {
      n = split("readrandom readmissing", names, " ")
      for (i = 1; i <= n; i++) {
        x = names[i]; c = med["cairn", "plain", x]; ch = med["cairn", "huge", x]
        d = med["db_bench", "plain", x]; dh = med["db_bench", "huge", x]
        printf "| %s | %d | %d | %.2f | %d | %d | %.2f | %.2f | %.2f |\n", x, c, ch, ch / c, d, dh, dh / d, c / d, ch / dh
      }
    }' "$out/medians.txt"
  echo
  printf "| engine | heap | huge-page KiB | resident KiB |\n|---|---|---:|---:|\n"
  for a in "${anon[@]}"; do
    read -r e v kb rss <<<"$a"
    printf "| %s | %s | %s | %s |\n" "$e" "$v" "$kb" "$rss"
  done
  echo
  echo "rounds=$rounds num=$num reads=$reads threads=$threads thp=$thp (medians)"
} >"$out/results.md"
cat "$out/results.md"
