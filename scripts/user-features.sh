#!/usr/bin/env bash
# Range deletes and merge operators against RocksDB (issue 34's measurements), each a `compare`
# run with interleaved rounds; results land in
# ${OUT:-bench-results}/<name>/{results.md,results.json,chart.png}.
#   scripts/user-features.sh [delete10] [delete50] [small] [counters] [checkpoint] [backup]
#   (default: all)
#   delete10/delete50: 4M random puts (16 B keys, 100 B values), compacted; one delete_range of
#     the first 10% / 50% of the key space (timed); readrandom and seekrandom right after, then
#     after a full compaction.
#   small: the same table set; readrandom and seekrandom; 1,000 range deletes of 10 keys each at
#     random; readrandom and seekrandom again (the ratio of the two is the cost of the tombstones).
#   counters: 1M increments of 8-byte counters over 1M keys, zipf 0.99, by merge (uint64add)
#     and by get+put, in both engines; then readrandom of the counters.
#   checkpoint: 8M random puts of 100 B (about 1 GB), then one checkpoint while a writer
#     puts: its time, the bytes it copied, and the writer's longest put meanwhile.
#   backup: the same 8M puts; a full backup; 1,000 small range deletes and a flush; a second,
#     incremental backup; a restore of it into a new directory (RocksDB's BackupEngine).
# Same 64 MiB of cache for both engines. Takes about 85 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
out=${OUT:-bench-results}
cmp=(./target/release/cairn-lab compare)
common=(--num=4000000 --reads=200000 --seek_nexts=10 --key_size=16 --value_size=100 --bloom_bits=10
        --compression_type=none --cache_size=67108864 --seed=1)
engines=(--config cairn=--engine=cairn --config rocksdb=--engine=rocksdb)
what=${*:-delete10 delete50 small counters checkpoint backup}
for w in $what; do
  case $w in
    delete10|delete50) pct=${w#delete}
      "${cmp[@]}" --rounds 3 --out "$out/range-delete-$pct" "${engines[@]}" -- \
        --benchmarks=fillrandom,compact,deleterange:$pct,readrandom@deleted,seekrandom@deleted,compact@again,readrandom@compacted,seekrandom@compacted \
        "${common[@]}" ;;
    small)
      "${cmp[@]}" --rounds 3 --out "$out/range-delete-small" "${engines[@]}" -- \
        --benchmarks=fillrandom,compact,readrandom@none,seekrandom@none,deleteranges:1000:10,readrandom@tombstones,seekrandom@tombstones \
        "${common[@]}" ;;
    counters)
      "${cmp[@]}" --rounds 3 --out "$out/counters" \
        --config "cairn-merge=--engine=cairn --merge_operator=uint64add" \
        --config "rocksdb-merge=--engine=rocksdb --merge_operator=uint64add" \
        --config cairn-get+put=--engine=cairn --config rocksdb-get+put=--engine=rocksdb -- \
        --benchmarks=counters,readrandom@counters --num=1000000 --reads=20000 --key_dist=zipf:0.99 \
        --key_size=16 --bloom_bits=10 --compression_type=none --cache_size=67108864 --seed=1 ;;
    checkpoint)
      "${cmp[@]}" --rounds 2 --out "$out/checkpoint" "${engines[@]}" -- --benchmarks=fillrandom,checkpoint \
        --num=8000000 --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=none \
        --cache_size=67108864 --seed=1 ;;
    backup)
      "${cmp[@]}" --rounds 2 --out "$out/backup" "${engines[@]}" -- \
        --benchmarks=fillrandom,waitforcompaction,backup,deleteranges:1000:10,flush,backup@again,restore \
        --num=8000000 --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=none \
        --cache_size=67108864 --seed=1 ;;
    *) echo "unknown measurement $w (delete10, delete50, small, counters, checkpoint, backup)" >&2; exit 2 ;;
  esac
done
