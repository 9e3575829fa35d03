#!/usr/bin/env bash
# The harness's standing comparison (issue 4's measurements), each a `compare` run with
# interleaved rounds; results land in ${OUT:-bench-results}/<name>/{results.md,results.json,chart.png}.
#   scripts/compare-all.sh [parity] [direct] [ycsb]     (default: all three)
# Takes about 30 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
out=${OUT:-bench-results}
cmp=(./target/release/cairn-lab compare)
common=(--key_size=16 --value_size=100 --bloom_bits=10 --compression_type=none)
engines=(--config cairn=--engine=cairn --config rocksdb=--engine=rocksdb --config "db_bench=exe:$(command -v db_bench)")
what=${*:-parity direct ycsb}
for w in $what; do
  case $w in
    parity) # (a) 2M keys, cache holds everything.
      "${cmp[@]}" --rounds 3 --out "$out/parity" "${engines[@]}" -- --benchmarks=fillrandom,readrandom,readmissing,seekrandom \
        --num=2000000 --reads=500000 --seek_nexts=10 --cache_size=1073741824 "${common[@]}" ;;
    direct) # (b) the same with an 8 MB cache and O_DIRECT reads.
      "${cmp[@]}" --rounds 3 --out "$out/direct" "${engines[@]}" -- --benchmarks=fillrandom,readrandom,readmissing,seekrandom \
        --num=2000000 --reads=200000 --seek_nexts=10 --cache_size=8388608 --use_direct_reads=1 "${common[@]}" ;;
    ycsb) # (c) YCSB A-F, 1M records of 1 KB, 500K operations, 64 MB cache.
      "${cmp[@]}" --tool ycsb --rounds 2 --out "$out/ycsb" --config cairn=--engine=cairn --config rocksdb=--engine=rocksdb \
        --config fjall=--engine=fjall $(for x in a b c d e f; do echo --workload crates/cairn-bench/workloads/workload$x; done) \
        -- -p recordcount=1000000 -p operationcount=500000 --cache_size=67108864 --bloom_bits=10 --compression_type=none ;;
    *) echo "unknown comparison $w (parity, direct, ycsb)" >&2; exit 2 ;;
  esac
done
