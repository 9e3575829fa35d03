#!/usr/bin/env bash
# What each L0 table costs a point lookup: loads 1M keys (16 B / 100 B, 10 bits/key) into N
# overlapping L0 tables (compaction off), then times lookups of absent keys (readmissing) and of
# present keys (readrandom), with the cache holding everything and with an 8 MiB cache and
# O_DIRECT. An absent key must cost one filter probe per table and no index or data block.
#   scripts/l0-cost.sh [OUT_DIR]      (writes results.md there; about 5 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/cairn-l0-cost}
mkdir -p "$out"
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
num=1000000
entry=160   # memtable bytes per entry of 16 B + 100 B (measured: 152.5) with some slack
for setup in "cached --cache_size=1073741824" "direct --cache_size=8388608 --use_direct_reads=1"; do
  name=${setup%% *}
  flags=${setup#* }
  for n in 1 2 4 8 16; do
    rm -rf "$out/db"
    # shellcheck disable=SC2086
    ./target/release/db_bench --benchmarks=fillrandom,flush,readmissing,readrandom --num=$num --reads=200000 \
      --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=none --seed=1 \
      --write_buffer_size=$((num * entry / n + 1024)) --db_write_buffer_size=$((num * entry * 2)) \
      --level0_file_num_compaction_trigger=1000 --level0_slowdown_writes_trigger=1000 \
      --level0_stop_writes_trigger=1000 $flags --db="$out/db" --json "$out/$name-$n.json" > /dev/null
  done
done
python3 - "$out" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
rows = []
for setup in ("cached", "direct"):
    for n in (1, 2, 4, 8, 16):
        r = json.load(open(os.path.join(out, f"{setup}-{n}.json")))
        ph = {p["name"]: p for p in r["phases"]}
        l0 = ph["flush"]["debt_after"]["l0_files"]
        for b in ("readmissing", "readrandom"):
            p = ph[b]
            c = p["cairn"]
            rows.append((setup, l0, b, p["micros_per_op"], c["data_reads_per_lookup"],
                         c["unnecessary_data_reads_per_lookup"], c["filter_fpr"], c["storage_reads"].get("filter", 0)))
lines = ["| cache | L0 tables | benchmark | µs/op | data blocks from storage / lookup | unnecessary data blocks / lookup | filter FPR | filter units from storage |",
         "|---|---:|---|---:|---:|---:|---:|---:|"]
for s, l0, b, us, d, u, f, fr in rows:
    lines.append(f"| {s} | {l0} | {b} | {us:.2f} | {d:.3f} | {u:.4f} | {f:.4f} | {fr} |")
text = "\n".join(lines) + "\n"
open(os.path.join(out, "results.md"), "w").write(text)
print(text)
PY
rm -rf "$out/db"
