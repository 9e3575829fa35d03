#!/usr/bin/env bash
# Ingest rate against the number of trees (issue "writes never wait", item 2): db_bench
# fillrandom of NUM keys (16 B + 100 B, no compression, Bloom 10, cached) spread over 1, 8, 32
# and 128 trees, the tree of each put chosen uniformly or 80-20 (80% of the puts to 20% of the
# trees; one tree only uniformly, the baseline of both); ROUNDS rounds, tree counts
# interleaved, a fresh process and directory per run. Writes $OUT/results.md (medians, each
# rate ÷ one tree's), raw.txt and chart.png. On 2026-11-26 128 trees stopped on nearly every
# put (145 puts/s; see docs/results/README.md): until that is fixed, TREES="1 8 32".
#   scripts/trees.sh            (NUM=4000000 ROUNDS=3 OUT=bench-results/trees)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
out=${OUT:-bench-results/trees}
work=${WORK:-/tmp/cairn-trees}
num=${NUM:-4000000}
rounds=${ROUNDS:-3}
counts=${TREES:-1 8 32 128}
mkdir -p "$out"
raw="$out/raw.txt"
: >"$raw"
for r in $(seq "$rounds"); do
  for skew in uniform 80-20; do
    for trees in $counts; do
      [ "$skew" != uniform ] && [ "$trees" = 1 ] && continue
      rm -rf "$work"
      sync
      flag=()
      [ "$skew" = uniform ] || flag=(--tree_skew="$skew")
      $bin/db_bench --benchmarks=fillrandom --num="$num" --key_size=16 --value_size=100 \
        --compression_type=none --bloom_bits=10 --num_trees="$trees" "${flag[@]}" --db="$work" |
        awk -v s="$skew" -v t="$trees" -v r="$r" '$1 == "fillrandom" && $2 == ":" { print s, t, r, $5 }' >>"$raw"
    done
  done
done
rm -rf "$work"
# Medians per (choice, trees), and each ÷ the one-tree median of its choice.
sort -k1,1 -k2,2n -k4,4n "$raw" | awk '
  { k = $1 " " $2; v[k, ++c[k]] = $4; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
  END { for (i = 1; i <= n; i++) { k = order[i]; m = c[k]
          med = (m % 2 ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2); print k, med } }' >"$out/medians.txt"
{
  echo "db_bench fillrandom, $num keys of 16 + 100 B, cached, no compression; medians of $rounds rounds."
  echo
  echo "| tree choice | trees | puts/s | ÷ one tree |"
  echo "|---|---:|---:|---:|"
  awk '$1 == "uniform" && $2 == 1 { one = $3 } { row[NR] = $0 } END { for (i = 1; i <= NR; i++) {
        split(row[i], f, " "); printf "| %s | %d | %.0f | %.2f |\n", f[1], f[2], f[3], f[3] / one } }' "$out/medians.txt"
} >"$out/results.md"
awk '{ print $2 "-trees", $1, $3 }' "$out/medians.txt" >"$out/bars.txt"
$bin/plot_bars --input "$out/bars.txt" --out "$out/chart.png" --title "fillrandom $num keys by trees" --ylabel "puts/s"
cat "$out/results.md"
