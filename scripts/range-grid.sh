#!/usr/bin/env bash
# Empty range reads at the limits (issue "range filter at the limits", measurement (a), the
# Rosetta paper's Fig. 5): R ∈ {1,2,4,8,16,32,64} key values, cairn with Rosetta and with
# Grafite at 10/16/22 bits per key, cairn without a range filter, and RocksDB 7.8 (no range
# filter; iterate_upper_bound). NUM keys of 16 + 100 B on a stride of 1024 (the empty ranges lie
# in the gaps, inside every table's key range), O_DIRECT, one block cache for every engine of 2%
# of the data plus what the largest configuration's filters and index take (index and filters
# charged to it: cairn reserves its pinned index blocks and range filters in it). Every table
# gets the bits asked for (range_filter.by_workload = false: by workload, the tables the load
# writes before any range read would get none until they are rewritten).
# Per round and configuration (order rotated each round): load in one process (fillrandom,
# waitforcompaction), `sync`, then one fresh process runs READS empty range reads per R. Then
# medians over rounds: ops/s, data blocks per query, measured FPR (range-filter false
# positives per table asked), CPU µs per query; ratios to RocksDB. Writes raw/*.json,
# results.md, results.json and chart.png under $OUT.
#   NUM=4000000 READS=200000 ROUNDS=3 KINDS="rosetta grafite" BPK="10 16 22" \
#     OUT=bench-results/range-grid scripts/range-grid.sh
#   BEFORE=/path/to/older/target/release/db_bench adds that build's Rosetta as "before-rf<B>"
#   (a build that knows --range_filter_by_workload).
#   KEY_FORMAT=string: keys `user:` + the zero-padded decimal number (16 bytes), measurement (c).
#   NONE=0: without the no-range-filter configuration (the slowest after RocksDB).
#   AGGREGATE_ONLY=1: tabulate $OUT/raw again without running (also load.md: the loads'
#   fillrandom ops/s per configuration, the cost of building each filter).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
out=${OUT:-bench-results/range-grid}
num=${NUM:-4000000}
reads=${READS:-200000}
rounds=${ROUNDS:-3}
kinds=${KINDS:-rosetta grafite}
bpks=${BPK:-10 16 22}
sizes=1,2,4,8,16,32,64
work=${WORK:-/tmp/cairn-range-grid}
# 2% of the data, plus 10 bits/key of point filter, 22 of range filter and ~1 byte/key of index.
cache=$((num * 116 / 50 + num * (10 + 22) / 8 + num))
common=(--num="$num" --key_stride=1024 --key_size=16 --key_format="${KEY_FORMAT:-number}" --value_size=100 --bloom_bits=10
  --compression_type=none --use_direct_reads=1 --cache_index_and_filter_blocks=1
  --cache_size="$cache" --seed=1)
configs=("rocksdb|$bin/db_bench|--engine=rocksdb")
[ "${NONE:-1}" = 1 ] && configs+=("none|$bin/db_bench|--engine=cairn")
for kind in $kinds; do
  for b in $bpks; do
    configs+=("$kind-$b|$bin/db_bench|--engine=cairn --range_filter_bits_per_key=$b --range_filter_kind=$kind --range_filter_by_workload=false")
  done
done
if [ -n "${BEFORE:-}" ]; then
  for b in $bpks; do
    configs+=("before-rf$b|$BEFORE|--engine=cairn --range_filter_bits_per_key=$b --range_filter_by_workload=false")
  done
fi
mkdir -p "$out/raw"
n=${#configs[@]}
runs=$rounds
[ -n "${AGGREGATE_ONLY:-}" ] && runs=0
for round in $(seq "$runs"); do
  for i in $(seq 0 $((n - 1))); do
    IFS='|' read -r name exe flags <<<"${configs[$(((i + round - 1) % n))]}"
    rm -rf "$work"
    # shellcheck disable=SC2086
    "$exe" --db="$work" $flags "${common[@]}" --benchmarks=fillrandom,waitforcompaction \
      --json="$out/raw/$name-$round-load.json" >/dev/null 2>&1
    sync
    # shellcheck disable=SC2086
    "$exe" --db="$work" $flags "${common[@]}" --use_existing_db=1 --benchmarks=rangerandom \
      --range_size=$sizes --empty_ratio=1 --reads="$reads" --json="$out/raw/$name-$round.json" >/dev/null 2>&1
    echo "round $round: $name done"
  done
done
rm -rf "$work"
python3 - "$out" <<'EOF'
import glob, json, os, statistics, sys
out = sys.argv[1]
loads = {}
for path in glob.glob(os.path.join(out, "raw", "*-load.json")):
    name = os.path.basename(path)[:-len("-load.json")].rsplit("-", 1)[0]
    for p in json.load(open(path))["phases"]:
        if p["name"] == "fillrandom":
            loads.setdefault(name, []).append(p["ops_per_sec"])
base = statistics.median(loads.get("none", [0])) or None
rows = ["| config | load ops/s (median) | × no range filter |", "|---|---:|---:|"]
for name in sorted(loads, key=lambda n: (n != "rocksdb", n != "none", n)):
    m = statistics.median(loads[name])
    rows.append(f"| {name} | {m:,.0f} | {m / base:.2f} |" if base else f"| {name} | {m:,.0f} | – |")
open(os.path.join(out, "load.md"), "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
EOF
python3 - "$out" <<'EOF'
import glob, json, os, statistics, sys
out = sys.argv[1]
runs = {}
for path in sorted(glob.glob(os.path.join(out, "raw", "*.json"))):
    base = os.path.basename(path)[:-5]
    if base.endswith("-load"):
        continue
    name, _round = base.rsplit("-", 1)
    report = json.load(open(path))
    for p in report["phases"]:
        if not p["name"].startswith("rangerandom"):
            continue
        r = int(p["name"].rsplit("-", 1)[1])
        c = p.get("cairn") or {}
        probes = c.get("range_filter_probes", 0)
        row = {
            "ops": p["ops_per_sec"],
            "data": (p.get("block_reads_per_lookup") or {}).get("data"),
            "fpr": c.get("range_filter_false_positives", 0) / probes if probes else None,
            "cpu_us": p["cpu_secs"] * 1e6 / p["ops"] if p.get("cpu_secs") and p["ops"] else None,
        }
        runs.setdefault((name, r), []).append(row)
def med(rows, k):
    xs = [x[k] for x in rows if x[k] is not None]
    return statistics.median(xs) if xs else None
names = sorted({n for n, _ in runs}, key=lambda n: (n != "rocksdb", n != "none", n))
sizes = sorted({r for _, r in runs})
table = []
for n in names:
    for r in sizes:
        rows = runs.get((n, r), [])
        if rows:
            table.append({"config": n, "R": r, "rounds": len(rows), "ops_per_sec": med(rows, "ops"),
                          "data_per_query": med(rows, "data"), "fpr": med(rows, "fpr"),
                          "cpu_us_per_query": med(rows, "cpu_us")})
base = {t["R"]: t["ops_per_sec"] for t in table if t["config"] == "rocksdb"}
fmt = lambda x, f: "–" if x is None else format(x, f)
md = ["| config | R | ops/s | × RocksDB | data blocks/query | FPR | CPU µs/query |", "|---|---:|---:|---:|---:|---:|---:|"]
for t in table:
    ratio = t["ops_per_sec"] / base[t["R"]] if base.get(t["R"]) else None
    t["x_rocksdb"] = ratio
    md.append(f"| {t['config']} | {t['R']} | {t['ops_per_sec']:,.0f} | {fmt(ratio, '.1f')} | {fmt(t['data_per_query'], '.4f')} | {fmt(t['fpr'], '.2e')} | {fmt(t['cpu_us_per_query'], '.2f')} |")
open(os.path.join(out, "results.md"), "w").write("\n".join(md) + "\n")
json.dump(table, open(os.path.join(out, "results.json"), "w"), indent=1)
with open(os.path.join(out, "bars.txt"), "w") as f:
    for t in table:
        if t["config"] != "rocksdb" and t["x_rocksdb"]:
            f.write(f"R={t['R']} {t['config']} {t['x_rocksdb']:.2f}\n")
print("\n".join(md))
EOF
$bin/cairn-lab plot-bars --input "$out/bars.txt" --out "$out/chart.png" \
  --title "empty range reads: throughput × RocksDB 7.8 (medians of $rounds rounds)" --ylabel "× RocksDB"
echo "results in $out"
