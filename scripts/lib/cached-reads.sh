# Sourced by the cached-read scripts (scaling.sh, ab-reads.sh, hugepages.sh).

# scaling_data NUM CACHE DIRECT: sets `common` to db_bench's flags for scaling.sh's data: NUM
# random keys of 16 B / 100 B, Bloom 10 bits per key, no compression, seeks of 10 nexts, a
# block cache of CACHE bytes, O_DIRECT reads when DIRECT is 1.
scaling_data() {
  common=(--num="$1" --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=none
    --cache_size="$2" --use_direct_reads="$3" --seek_nexts=10)
}

# read_ops LABEL...: reads a db_bench report and prints `LABEL... BENCHMARK OPS/S` for
# readmissing, seekrandom and the second readrandom of the run (the first warms the cache).
read_ops() {
  awk -v labels="$*" '$2 == ":" && $1 ~ /^(readrandom|readmissing|seekrandom)$/ {
      n[$1]++; if ($1 != "readrandom" || n[$1] == 2) print labels, $1, $5 }'
}
