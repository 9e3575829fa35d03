#!/bin/bash
# trees.sh BIN mono|part POLICY : the grid's 10-tree cell (256 MiB), with statistics
BIN=$1; WM=$((256*1048576)); KIND=$2; POLICY=$3
rm -rf /work/bench/x/dbt
if [ "$KIND" = mono ]; then EXTRA="--write_buffer_size=$((WM/2))"; else EXTRA="--write_buffer_size=$((WM/16)) --memory_component=partitioned"; fi
$BIN --engine=cairn --db=/work/bench/x/dbt --num=16000000 --key_size=16 --value_size=100 --compression_type=none --bloom_bits=10 --cache_size=67108864 --seed=7 --threads=1 --target_file_size_base=67108864 --db_write_buffer_size=$WM $EXTRA --benchmarks=fillrandom --num_trees=10 --tree_skew=80-20 --key_dist=zipf:0.99 --flush_policy=$POLICY --statistics=1
