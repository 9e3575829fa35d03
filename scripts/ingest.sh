#!/usr/bin/env bash
# Ingestion (issue "ingestion at the limit"): fillrandom + overwrite, and fillseq, of NUM keys
# of 16 + VALUE (100) B, batch 1 (BATCH=100: 100 keys per write), one writer thread (THREADS=2: two),
# cairn against fjall and RocksDB 7.8 at their defaults' durability (every engine hands each
# acknowledged write to the OS before it returns: survives kill -9, not power loss) and the same
# write memory (db_bench's 64 MiB buffer, two of them), no compression, Bloom 10; BEFORE=path
# adds another build of our db_bench. Each run is a fresh process on a fresh directory,
# configurations rotated per round; medians of ROUNDS. Writes results.md, results.json and
# chart.png under $OUT/fill and $OUT/seq (`compare`); each run ends with waitforcompaction, so
# the whole-run write amplification and CPU per GB count the compaction the load left behind.
#   NUM=1000000 ROUNDS=3 OUT=docs/results/DATE/ingest scripts/ingest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
out=${OUT:-bench-results/ingest}
configs=(--config cairn=--engine=cairn --config fjall=--engine=fjall --config rocksdb=--engine=rocksdb)
[ -n "${BEFORE:-}" ] && configs+=(--config "before=runner:$BEFORE --engine=cairn")
common=(--num="${NUM:-1000000}" --key_size=16 --value_size="${VALUE:-100}" --bloom_bits=10 --compression_type=none
  --threads="${THREADS:-1}" --batch_size="${BATCH:-1}" --seed=1)
parts=${PARTS:-fill seq} # PARTS=seq: only fillseq
if [[ " $parts " == *" fill "* ]]; then
  "$bin/cairn-lab" compare --rounds "${ROUNDS:-3}" --out "$out/fill" "${configs[@]}" -- \
    --benchmarks=fillrandom,overwrite,waitforcompaction "${common[@]}"
fi
if [[ " $parts " == *" seq "* ]]; then
  "$bin/cairn-lab" compare --rounds "${ROUNDS:-3}" --out "$out/seq" "${configs[@]}" -- --benchmarks=fillseq,waitforcompaction "${common[@]}"
fi
