#!/bin/bash
# load.sh BIN WM_MIB mono|part [RATIO]   env NUM (default 16000000), DB dir /work/bench/x/db
BIN=$1; WM=$(( $2 * 1048576 )); KIND=$3; R=${4:-10}; NUM=${NUM:-16000000}
rm -rf /work/bench/x/db
if [ "$KIND" = mono ]; then EXTRA="--write_buffer_size=$((WM/2))"; else EXTRA="--write_buffer_size=$((WM/16)) --memory_component=partitioned --memory_size_ratio=$R"; fi
$BIN --engine=cairn --db=/work/bench/x/db --num=$NUM --key_size=16 --value_size=100 --compression_type=none --bloom_bits=10 --cache_size=67108864 --seed=7 --threads=1 --target_file_size_base=67108864 --db_write_buffer_size=$WM $EXTRA --benchmarks=fillrandom --statistics=1 $EXTRA_ARGS
