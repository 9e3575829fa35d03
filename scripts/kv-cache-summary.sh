#!/usr/bin/env bash
# One table and one chart over the cells scripts/kv-cache.sh wrote under DIR: per cell, the
# medians of cairn, RocksDB and RocksDB's best row cache, the ratios, and cairn's peak RSS over
# its budget. Writes DIR/summary.md and DIR/summary.png.
#   scripts/kv-cache-summary.sh DIR [NUM]      (NUM: the keys the cells loaded, default 3000000)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
num=${2:-3000000}
python3 - "$dir" "$num" <<'EOF'
import json, os, re, statistics, sys
d, num = sys.argv[1], int(sys.argv[2])
rows = ["| zipf | absent | budget | cairn ops/s | rocksdb ops/s | best row cache | its ops/s | cairn / rocksdb | cairn / best row | cairn peak RSS − budget (MiB) |",
        "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
bars = []
cells = []
for name in os.listdir(d):
    m = re.fullmatch(r"zipf([0-9.]+)-absent([0-9.]+)-([0-9]+)", name)
    if m and os.path.exists(f"{d}/{name}/results.json"):
        cells.append((-int(m[3]), -float(m[1]), -float(m[2]), name, m))
for _, _, _, name, m in sorted(cells):
    runs = json.load(open(f"{d}/{name}/results.json"))
    med = {k.rsplit("/", 1)[1]: statistics.median(r["ops_per_sec"] for r in v) for k, v in runs.items()}
    rows_ = {c: v for c, v in med.items() if c.startswith("rocksdb-row")}
    best = max(rows_, key=rows_.get)
    budget_mib = num * 116 * int(m[3]) / 100 / 2**20
    rss = re.search(r"^\| cairn \| (\d+) \|", open(f"{d}/{name}/results.md").read(), re.M)
    over = f"{int(rss[1]) - budget_mib:.0f}" if rss else "–"
    c, r = med["cairn"], med["rocksdb"]
    rows.append(f"| {m[1]} | {m[2]} | {m[3]}% | {c:.0f} | {r:.0f} | {best} | {rows_[best]:.0f} | {c / r:.2f}× | {c / rows_[best]:.2f}× | {over} |")
    group = f"z{m[1]}-a{m[2]}-{m[3]}%"
    bars.append(f"{group} cairn/rocksdb {c / r:.3f}")
    bars.append(f"{group} cairn/best-row {c / rows_[best]:.3f}")
open(f"{d}/summary.md", "w").write("\n".join(rows) + "\n")
open(f"{d}/summary-bars.txt", "w").write("\n".join(bars) + "\n")
print("\n".join(rows))
EOF
./target/release/cairn-lab plot-bars --input "$dir/summary-bars.txt" --out "$dir/summary.png" \
  --title "key-value cache: cairn against RocksDB (medians)" --ylabel "throughput ratio"
