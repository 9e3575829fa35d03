#!/bin/bash
# seek.sh BIN mono|part : 4M-key uniform load at 64 MiB write memory, then 500k seeks with 10 nexts each
BIN=$1; WM=$((64*1048576)); KIND=$2
rm -rf /work/bench/x/dbs
if [ "$KIND" = mono ]; then EXTRA="--write_buffer_size=$((WM/2))"; else EXTRA="--write_buffer_size=$((WM/16)) --memory_component=partitioned"; fi
$BIN --engine=cairn --db=/work/bench/x/dbs --num=${NUM:-4000000} --reads=500000 --seek_nexts=10 --key_size=16 --value_size=100 --compression_type=none --bloom_bits=10 --cache_size=268435456 --seed=7 --threads=1 --target_file_size_base=67108864 --db_write_buffer_size=$WM $EXTRA --benchmarks=fillrandom,seekrandom --statistics=1
