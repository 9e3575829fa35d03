#!/usr/bin/env bash
# Bulk loads (issue "what users expect, part two"): NUM keys of 16 + VALUE B in key order, about
# 1 GB by default, loaded by fillseq (puts through the write path) and by --bulk_load=1 (the same
# entries written into external tables of 64 MiB by the engine's table writer — cairn's
# TableWriter, RocksDB's SstFileWriter — then added in one ingestion that moves them), cairn
# against RocksDB 7.8 with the same write memory (two 64 MiB buffers), no compression, Bloom 10.
# Each run is a fresh process on a fresh directory ending with waitforcompaction, so what the
# load leaves to compact is counted; configurations rotate per round; medians of ROUNDS.
#   scripts/bulk-load.sh                  (ROUNDS=3: about 10 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
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
