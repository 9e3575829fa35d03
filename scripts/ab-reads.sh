#!/usr/bin/env bash
# Cached reads of two cairn builds, interleaved: this tree's db_bench against an older one
# (BEFORE=path/to/db_bench), on one database filled once by this build, then readrandom (the
# second of two runs), readmissing and seekrandom (10 nexts) per round. Writes $OUT/raw.txt,
# results.md (medians of the rounds, and the median of the rounds' paired after ÷ before with how
# many rounds "after" won: the two builds run back to back in each round), paired.txt and
# chart.png.
#   BEFORE=/tmp/old/db_bench scripts/ab-reads.sh
#   READS: lookups per benchmark (default 1M)
#   SEPARATE=1: each build fills and reads its own database (for a format the older build
#   cannot read)
#   (defaults: the engine's defaults at a 512 MiB budget, 2M keys of 16 B / 100 B, zipf 0.99
#   lookups with half of them absent; FLAGS replaces these settings, ROUNDS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/medians.sh
. scripts/lib/cached-reads.sh
before=${BEFORE:?set BEFORE to the older db_bench}
cargo build --release -q -p cairn-bench --features rocksdb,fjall
out=${OUT:-bench-results/ab-reads}
work=${WORK:-/tmp/cairn-ab-reads}
rounds=${ROUNDS:-5}
reads=${READS:-1000000}
read -r -a flags <<<"${FLAGS:---defaults=engine --memory_budget=536870912 --num=2000000 --key_size=16 --value_size=100 --compression_type=none --key_stride=16 --fill_key_dist=uniform --key_dist=zipf:0.99 --empty_ratio=0.5 --seek_nexts=10 --seed=7}"
declare -A exe=([before]=$before [after]=./target/release/db_bench)
mkdir -p "$out"
rm -rf "$work" && mkdir -p "$work"
# SEPARATE=1: each build fills its own database (a table format change the older build
# cannot read), else both read the one this build fills.
declare -A db=([before]=$work/db [after]=$work/db)
if [ "${SEPARATE:-0}" = 1 ]; then db[before]=$work/db-before; fi
for e in before after; do
  if [ ! -d "${db[$e]}" ]; then
    "${exe[$e]}" "${flags[@]}" --db="${db[$e]}" --benchmarks=fillrandom,waitforcompaction >/dev/null 2>&1
  fi
done
raw="$out/raw.txt"
: >"$raw"
sync
for r in $(seq "$rounds"); do
  for e in before after; do
    "${exe[$e]}" "${flags[@]}" --db="${db[$e]}" --use_existing_db=1 --reads="$reads" \
      --benchmarks=readrandom,readrandom,readmissing,seekrandom 2>/dev/null | read_ops "$e" "$r" >>"$raw"
  done
done
awk '{ print $1, $3, $4 }' "$raw" | medians | sort -k2,2 -k1,1 >"$out/medians.txt"
awk '{ print $2, $1, $3 }' "$out/medians.txt" >"$out/bars.txt"
./target/release/cairn-lab plot-bars --input "$out/bars.txt" --out "$out/chart.png" \
  --title "cached reads, before and after (medians of $rounds rounds)" --ylabel "ops/s"
# Paired: each round's after ÷ before (the two ran back to back, so a slow spell of the
# machine moves both), their median and in how many rounds "after" was faster.
awk '{ v[$1, $2, $3] = $4; b[$3] = 1; if ($2 > n) n = $2 }
  END { for (k in b) for (r = 1; r <= n; r++) if (v["before", r, k] > 0 && v["after", r, k] > 0)
          print k, v["after", r, k] / v["before", r, k] }' "$raw" | sort -k1,1 -k2,2g |
  awk '{ x[$1, ++c[$1]] = $2; if ($2 > 1) w[$1]++ }
    END { for (k in c) { m = c[k]; printf "%s %.3f %d %d\n", k, (m % 2 ? x[k, (m + 1) / 2] : (x[k, m / 2] + x[k, m / 2 + 1]) / 2), w[k], m } }' \
  >"$out/paired.txt"
{
  printf "| benchmark | before ops/s | after ops/s | after / before | paired median | after faster in |\n"
  printf "|---|---:|---:|---:|---:|---:|\n"
  awk 'FNR == NR { p[$1] = $2; w[$1] = $3; n[$1] = $4; next }
    { med[$1, $2] = $3; b[$2] = 1 }
    END { for (k in b) printf "| %s | %.0f | %.0f | %.3f | %.3f | %d of %d rounds |\n", k, med["before", k], med["after", k],
            med["after", k] / med["before", k], p[k], w[k], n[k] }' "$out/paired.txt" "$out/medians.txt" | sort
} >"$out/results.md"
cat "$out/results.md"
