# Sourced by the key-value cache scripts. `budget_flags M` sets `rocks` and `cairn` to each
# engine's flags at one memory budget of M bytes: RocksDB 2 write buffers of M/8 and the rest a
# block cache holding index and filter blocks, Bloom 10, 8 MiB files (small files keep its
# filter blocks within a cache shard); cairn's defaults at M.
budget_flags() {
  rocks="--engine=rocksdb --memory_budget=$1 --write_buffer_size=$(($1 / 8)) --target_file_size_base=8388608 --bloom_bits=10"
  cairn="--engine=cairn --defaults=engine --memory_budget=$1"
}
