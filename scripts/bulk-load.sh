#!/usr/bin/env bash
# Bulk loads (issue "what users expect, part two"): NUM keys of 16 + VALUE B in key order, about
# 1 GB by default, loaded by fillseq (puts through the write path) and by --bulk_load=1 (the same
# entries written into external tables of 64 MiB by the engine's table writer — cairn's
# TableWriter, RocksDB's SstFileWriter — then added in one ingestion that moves them), cairn
# against RocksDB 7.8 with the same write memory (two 64 MiB buffers), no compression, Bloom 10.
# Each run is a fresh process on a fresh directory ending with waitforcompaction, so what the
# load leaves to compact is counted; configurations rotate per round; medians of ROUNDS.
# Then the bulk load's two steps apart (split.md, split.png): writing the tables and the
# ingestion call, ROUNDS interleaved runs per engine.
#   scripts/bulk-load.sh                  (ROUNDS=3: about 10 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/medians.sh
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
out=${OUT:-bench-results/bulk-load}
value=${VALUE:-1000}
num=${NUM:-$((1000000000 / (16 + value)))}
"$bin/cairn-lab" compare --rounds "${ROUNDS:-3}" --out "$out" \
  --config "rocksdb-fillseq=--engine=rocksdb" \
  --config "cairn-fillseq=--engine=cairn" \
  --config "rocksdb-ingest=--engine=rocksdb --bulk_load=1" \
  --config "cairn-ingest=--engine=cairn --bulk_load=1" \
  -- --benchmarks=fillseq,waitforcompaction --num="$num" --key_size=16 --value_size="$value" \
  --bloom_bits=10 --compression_type=none --seed=1
work=${WORK:-/tmp/cairn-bulk-load}
: >"$out/split.txt"
for r in $(seq "${ROUNDS:-3}"); do
  for e in rocksdb cairn; do
    rm -rf "$work" && sync
    # "... (N tables written in W s, ingested in I s)" -> "ENGINE W I"
    "$bin/db_bench" --engine=$e --db="$work" --bulk_load=1 --benchmarks=fillseq --num="$num" --key_size=16 \
      --value_size="$value" --bloom_bits=10 --compression_type=none --seed=1 |
      sed -n 's/^fillseq .*tables written in \([0-9.]*\) s, ingested in \([0-9.]*\) s.*/\1 \2/p' |
      awk -v e=$e '{ print e, $1, $2 }' | tee -a "$out/split.txt"
  done
done
rm -rf "$work"
gb=$(awk -v n="$num" -v v="$value" 'BEGIN { printf "%.3f", n * (16 + v) / 1e9 }')
step() { awk -v c="$1" '{ print $1, $c }' "$out/split.txt" | medians | sort; }
{
  echo "Bulk load of $num keys of 16 + $value B ($gb GB) apart: writing the external tables and the ingestion (moved); medians of ${ROUNDS:-3} rounds (\`scripts/bulk-load.sh\`)."
  echo
  echo "| engine | tables written s | ingestion s | ingestion GB/s |"
  echo "|---|---:|---:|---:|"
  join <(step 2) <(step 3) | awk -v gb="$gb" '{ printf "| %s | %.3f | %.3f | %.1f |\n", $1, $2, $3, gb / $3 }'
} >"$out/split.md"
join <(step 2) <(step 3) | awk '{ print "write-tables", $1, $2; print "ingest", $1, $3 }' >"$out/split-bars.txt"
"$bin/cairn-lab" plot-bars --input "$out/split-bars.txt" --out "$out/split.png" \
  --title "bulk load of $gb GB: its two steps (medians)" --ylabel "seconds"
cat "$out/split.md"
