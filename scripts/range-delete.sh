#!/usr/bin/env bash
# Range deletes against RocksDB's DeleteRange (issue 34's measurements), each a `compare` run
# with interleaved rounds; results land in ${OUT:-bench-results}/<name>/{results.md,results.json,chart.png}.
#   scripts/range-delete.sh [delete10] [delete50] [small]     (default: all three)
#   delete10/delete50: 4M random puts (16 B keys, 100 B values), compacted; one delete_range of
#     the first 10% / 50% of the key space (timed); readrandom and seekrandom right after, then
#     after a full compaction.
#   small: the same table set; readrandom and seekrandom; 1,000 range deletes of 10 keys each at
#     random; readrandom and seekrandom again (the ratio of the two is the cost of the tombstones).
# Same 64 MiB of cache for both engines. Takes about 25 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
out=${OUT:-bench-results}
cmp=./target/release/compare
common=(--num=4000000 --reads=200000 --seek_nexts=10 --key_size=16 --value_size=100 --bloom_bits=10
        --compression_type=none --cache_size=67108864 --seed=1)
engines=(--config cairn=--engine=cairn --config rocksdb=--engine=rocksdb)
what=${*:-delete10 delete50 small}
for w in $what; do
  case $w in
    delete10|delete50) pct=${w#delete}
      $cmp --rounds 3 --out "$out/range-delete-$pct" "${engines[@]}" -- \
        --benchmarks=fillrandom,compact,deleterange:$pct,readrandom@deleted,seekrandom@deleted,compact@again,readrandom@compacted,seekrandom@compacted \
        "${common[@]}" ;;
    small)
      $cmp --rounds 3 --out "$out/range-delete-small" "${engines[@]}" -- \
        --benchmarks=fillrandom,compact,readrandom@none,seekrandom@none,deleteranges:1000:10,readrandom@tombstones,seekrandom@tombstones \
        "${common[@]}" ;;
    *) echo "unknown measurement $w (delete10, delete50, small)" >&2; exit 2 ;;
  esac
done
