#!/usr/bin/env bash
# Runs the same db_bench command line on cairn (cairn-bench's db_bench) and on Debian's RocksDB
# db_bench 7.8.3, alternating engines for ROUNDS rounds, and prints every run's ops/sec plus
# the median per benchmark and the cairn/RocksDB ratio.
#   scripts/compare-db-bench.sh [ROUNDS] -- <db_bench flags without --db>
# Needs: apt-get install rocksdb-tools (the script installs it if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}; shift || true
[ "${1:-}" = "--" ] && shift
if ! command -v db_bench >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rocksdb-tools
fi
cargo build --release -q -p cairn-bench
work=${CAIRN_BENCH_DIR:-/tmp/cairn-compare}
mkdir -p "$work"
out="$work/results.txt"; : > "$out"
for r in $(seq 1 "$rounds"); do
  for engine in cairn rocksdb; do
    rm -rf "$work/db-$engine"
    if [ "$engine" = cairn ]; then bin=./target/release/db_bench; else bin=db_bench; fi
    "$bin" "$@" --db="$work/db-$engine" 2>&1 \
      | awk -v e="$engine" -v r="$r" '/ ops\/sec/ {for(i=1;i<=NF;i++) if ($i=="ops/sec") print e, r, $1, $(i-1)}' >> "$out"
  done
done
echo "engine round benchmark ops/sec"; cat "$out"
python3 - "$out" <<'PY'
import sys, statistics, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    e, r, b, ops = line.split()
    runs[(b, e)].append(float(ops))
benches = sorted({b for b, _ in runs}, key=lambda b: list(runs).index((b, 'cairn')) if (b, 'cairn') in runs else 99)
print("\n| benchmark | cairn median ops/s | RocksDB median ops/s | cairn / RocksDB |")
print("|---|---|---|---|")
for b in benches:
    c, k = runs.get((b, 'cairn'), []), runs.get((b, 'rocksdb'), [])
    if c and k:
        mc, mk = statistics.median(c), statistics.median(k)
        print(f"| {b} | {mc:,.0f} | {mk:,.0f} | {mc/mk:.2f}x |")
PY
