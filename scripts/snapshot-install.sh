#!/usr/bin/env bash
# Raft snapshot install (issue "what users expect, part two"): the cairn-raft-kv example builds a
# snapshot of a MIB MiB state machine (1 KiB values) on one node and installs it on another
# (`cairn-raft-kv bench-snapshot`), ROUNDS times; BEFORE=DIR (a build's target/release) runs that
# build's example too, interleaved. Writes $OUT/raw.txt, results.md, bars.txt and chart.png
# (medians of the build and install seconds).
#   MIB=1024 ROUNDS=3 BEFORE=/tmp/before/target/release OUT=docs/results/DATE/snapshot scripts/snapshot-install.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/medians.sh
cargo build --release -q -p cairn-raft-kv && cargo build --release -q -p cairn-bench --bin cairn-lab
out=${OUT:-bench-results/snapshot-install}
work=${WORK:-/tmp/cairn-snapshot-install}
mib=${MIB:-1024}
rounds=${ROUNDS:-3}
builds=("this=./target/release")
[ -n "${BEFORE:-}" ] && builds+=("before=$BEFORE")
mkdir -p "$out"
raw="$out/raw.txt"
: >"$raw"
for r in $(seq "$rounds"); do
  for b in "${builds[@]}"; do
    name=${b%%=*}
    rm -rf "$work" && sync
    line=$("${b#*=}/cairn-raft-kv" bench-snapshot --dir "$work" --mib "$mib")
    echo "$name $r $line" | tee -a "$raw"
  done
done
rm -rf "$work"
# "NAME ROUND snapshot bytes=.. build_s=B install_s=I" -> medians per name.
field() { awk -v f="$1" '{ for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] == f) print $1, kv[2] } }' "$raw" | medians | sort; }
{
  echo "Snapshot of a $mib MiB state machine (1 KiB values), built on one node and installed on another; medians of $rounds rounds (\`scripts/snapshot-install.sh\`)."
  echo
  echo "| build | build s | install s | install GiB/s |"
  echo "|---|---:|---:|---:|"
  join <(field build_s) <(field install_s) | awk -v m="$mib" '{ printf "| %s | %.2f | %.2f | %.2f |\n", $1, $2, $3, m / 1024 / $3 }'
} >"$out/results.md"
join <(field build_s) <(field install_s) | awk '{ print "build", $1, $2; print "install", $1, $3 }' >"$out/bars.txt"
./target/release/cairn-lab plot-bars --input "$out/bars.txt" --out "$out/chart.png" \
  --title "Raft snapshot of $mib MiB: build and install (medians of $rounds)" --ylabel "seconds"
cat "$out/results.md"
