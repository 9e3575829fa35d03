#!/usr/bin/env bash
# Replicated puts (issue "beyond one machine"): the 3-node cairn-raft-kv example on loopback
# against single-node cairn puts at the same durability (each acknowledged put is fdatasync'd:
# a Raft append is acknowledged after the WAL sync covering it; the local run writes with
# sync), OPS puts of 16 + 100 B from 1 and 8 clients. Every run starts from empty directories
# (a fresh 3-node cluster for the replicated runs), configurations interleaved; medians of
# ROUNDS. Then a snapshot of a SNAPSHOT_MIB state machine (1 KiB values): built on one node,
# installed on another. Writes $OUT/results.md, raw.txt, bars.txt and chart.png.
#   ROUNDS=3 OPS=20000 SNAPSHOT_MIB=1024 OUT=docs/results/DATE/raft scripts/raft-bench.sh
#   REPORT_ONLY=1 OUT=... scripts/raft-bench.sh   (tables and chart again from OUT's raw.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/medians.sh
cargo build --release -q -p cairn-raft-kv -p cairn-bench
bin=./target/release
out=${OUT:-bench-results/raft}
work=${WORK:-/tmp/cairn-raft-bench}
rounds=${ROUNDS:-3}
ops=${OPS:-20000}
snap_mib=${SNAPSHOT_MIB:-1024}
mkdir -p "$out"
raw="$out/raw.txt"
report_only=${REPORT_ONLY:-0} # 1: only the tables and chart, from $OUT's raw.txt and snapshot.txt
[ "$report_only" = 1 ] || : >"$raw"
nodes=1=127.0.0.1:27101,2=127.0.0.1:27102,3=127.0.0.1:27103
pids=()
stop_nodes() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap stop_nodes EXIT
fresh() { rm -rf "$work" && mkdir -p "$work" && sync; }
# "NAME ops=.. secs=.. ops_per_s=X p50_us=Y p99_us=Z" -> "NAME CLIENTS ROUND X Y Z"
record() { awk -v c="$1" -v r="$2" '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
  print $1, c, r, f["ops_per_s"], f["p50_us"], f["p99_us"] }' >>"$raw"; }
for r in $(seq "$rounds"); do
  [ "$report_only" = 1 ] && break
  for c in 1 8; do
    fresh
    for i in 1 2 3; do
      "$bin/cairn-raft-kv" node --id "$i" --listen "127.0.0.1:2710$i" --dir "$work/n$i" >"$work/n$i.out" 2>&1 &
      pids+=($!)
    done
    for i in 1 2 3; do
      until grep -q '^ready' "$work/n$i.out" 2>/dev/null; do sleep 0.05; done
    done
    "$bin/cairn-raft-kv" init --nodes "$nodes"
    "$bin/cairn-raft-kv" bench --nodes "$nodes" --ops "$ops" --clients "$c" | record "$c" "$r"
    stop_nodes
    fresh
    "$bin/cairn-raft-kv" bench-local --dir "$work/local" --ops "$ops" --clients "$c" | record "$c" "$r"
  done
done
if [ "$report_only" != 1 ]; then
  fresh
  "$bin/cairn-raft-kv" bench-snapshot --dir "$work/snap" --mib "$snap_mib" | tee "$out/snapshot.txt"
  rm -rf "$work"
fi
# Medians per (configuration, clients) of ops/s, p50 and p99 (column 4, 5, 6 of raw.txt).
median() {
  awk -v j="$1" '{ print $1, $2, $j }' "$raw" | medians | sort -k1,1 -k2,2n
}
join -j1 <(median 4 | awk '{ print $1 "/" $2, $3 }') <(median 5 | awk '{ print $1 "/" $2, $3 }') |
  join -j1 - <(median 6 | awk '{ print $1 "/" $2, $3 }') | tr '/' ' ' | sort -k2,2n -k1,1 >"$out/medians.txt"
awk '{ print $2 "-clients", $1, $3 }' "$out/medians.txt" >"$out/bars.txt"
"$bin/cairn-lab" plot-bars --input "$out/bars.txt" --out "$out/chart.png" \
  --title "puts of 16 + 100 B, synced: 3-node Raft vs one node (medians of $rounds)" --ylabel "puts/s"
{
  echo "Replicated puts, $ops per run, medians of $rounds rounds (\`scripts/raft-bench.sh\`)."
  echo
  echo "| clients | replicated puts/s | p50 µs | p99 µs | local synced puts/s | p50 µs | p99 µs | replicated / local |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
  awk '{ m[$1, $2] = $3 " " $4 " " $5; cs[$2] = 1 }
    END { for (c in cs) { split(m["replicated", c], a, " "); split(m["local-sync", c], b, " ")
      printf "| %s | %.0f | %d | %d | %.0f | %d | %d | %.2f |\n", c, a[1], a[2], a[3], b[1], b[2], b[3], a[1] / b[1] } }' \
    "$out/medians.txt" | sort -t'|' -k2,2n
  echo
  echo "Snapshot of a ${snap_mib} MiB state machine: \`$(cat "$out/snapshot.txt")\`"
} >"$out/results.md"
cat "$out/results.md"
