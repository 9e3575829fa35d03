#!/usr/bin/env bash
# Ingest rate against the number of trees (issue "writes never wait", item 2): db_bench
# fillrandom of NUM keys (16 B + 100 B, no compression, Bloom 10, cached) spread over 1, 8, 32
# and 128 trees, the tree of each put chosen uniformly or 80-20 (80% of the puts to 20% of the
# trees; one tree only uniformly, the baseline of both), and RocksDB 7.8 (Debian's db_bench)
# with as many column families, chosen uniformly, at the same write memory (64 MiB memtables,
# 128 MiB db_write_buffer_size); ROUNDS rounds, engines and tree counts interleaved, a fresh
# process and directory per run. Writes $OUT/results.md (medians, each rate ÷ the same
# engine's one-tree rate), raw.txt and chart.png.
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
      if [ "$skew" = uniform ]; then
        rm -rf "$work"
        sync
        /usr/bin/db_bench --benchmarks=fillrandom --num="$num" --key_size=16 --value_size=100 \
          --compression_type=none --bloom_bits=10 --num_column_families="$trees" \
          --write_buffer_size=67108864 --db_write_buffer_size=134217728 --db="$work" |
          awk -v t="$trees" -v r="$r" '$1 == "fillrandom" && $2 == ":" { print "rocksdb", t, r, $5 }' >>"$raw"
      fi
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
  echo "| engine, tree choice | trees | puts/s | ÷ its one tree |"
  echo "|---|---:|---:|---:|"
  awk '$2 == 1 { one[$1 == "rocksdb" ? "rocksdb" : "cairn"] = $3 } { row[NR] = $0 }
       END { for (i = 1; i <= NR; i++) { split(row[i], f, " "); e = f[1] == "rocksdb" ? "rocksdb" : "cairn"
             name = e == "rocksdb" ? "RocksDB, uniform" : "cairn, " f[1]
             printf "| %s | %d | %.0f | %.2f |\n", name, f[2], f[3], f[3] / one[e] } }' "$out/medians.txt"
} >"$out/results.md"
awk '{ print $2 "-trees", $1, $3 }' "$out/medians.txt" >"$out/bars.txt"
$bin/cairn-lab plot-bars --input "$out/bars.txt" --out "$out/chart.png" --title "fillrandom $num keys by trees" --ylabel "puts/s"
cat "$out/results.md"
