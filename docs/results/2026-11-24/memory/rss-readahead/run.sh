#!/bin/bash
# Peak RSS of one db_bench binary on a copy of the 4M-key base: the sweep's mix at 64 MiB.
set -e
bin=$1; out=$2; env=${3:-}
rm -rf /work/bench/rssab/db; cp -a /work/bench/levels/base /work/bench/rssab/db
env $env $bin --num=4000000 --key_size=16 --value_size=100 --compression_type=none --use_direct_reads=1 \
  --bloom_bits=10 --seed=7 --threads=1 --target_file_size_base=8388608 --max_bytes_for_level_base=33554432 \
  --memory_budget=67108864 --memory_write_share=0.25 \
  --benchmarks=readrandomwriterandom:50,readrandomwriterandom:50 --reads=500000 --key_dist=zipf:0.99 \
  --db=/work/bench/rssab/db --use_existing_db=1 --json=$out > $out.log 2>&1
python3 - $out <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))
t=r['timeline']
un=max((s['rss_bytes']-s['accounted_bytes']-r['start_rss_bytes'] for s in t if s.get('accounted_bytes') is not None), default=0)
pk=max(t,key=lambda s:s['rss_bytes'])
print(f"{sys.argv[1]}: peak {r['peak_rss_bytes']>>20} MiB, start {r['start_rss_bytes']>>20}, sampled max {pk['rss_bytes']>>20} (accounted {pk['accounted_bytes']>>20}), max unaccounted {un>>20} MiB, ops/s {[round(p['ops_per_sec']) for p in r['phases']]}")
PY
