#!/usr/bin/env bash
# Compaction threads' nice value with more foreground threads than cores (issue "writes never
# wait"): 3 cached readers at full speed beside one unthrottled writer (db_bench
# readwhilewriting, 2M keys of 16 + 100 B, 1 GiB cache) after a 2M-key fillrandom, at
# background.compaction_nice 0, 10 and 19. Does compaction fall behind (write delays and stops,
# L0 files at the end, write amplification done) and what do the readers get?
# Writes results.md, bars.txt and bars.png.
#   ROUNDS=2 OUT=bench-results/nice-starvation scripts/nice-starvation.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p cairn-bench
bin=./target/release
out=${OUT:-bench-results/nice-starvation}
rounds=${ROUNDS:-2}
db=${DB:-/tmp/cairn-nice-starvation}
mkdir -p "$out"
: >"$out/raw.txt"
common=(--num=2000000 --key_size=16 --value_size=100 --compression_type=none --bloom_bits=10)
for round in $(seq "$rounds"); do
  for nice in 0 19 10; do
    rm -rf "$db"
    $bin/db_bench --db="$db" --benchmarks=fillrandom --seed=1 "${common[@]}" >/dev/null 2>&1
    sync
    text=$($bin/db_bench --db="$db" --use_existing_db=1 --benchmarks=readwhilewriting,stats "${common[@]}" \
      --threads=3 --reads=6000000 --cache_size=1073741824 --compaction_nice="$nice" 2>&1)
    ops=$(grep -oP 'readwhilewriting :.* \K[0-9]+(?= ops/sec)' <<<"$text")
    delayed=$(grep -oP 'cairn: write-amp [0-9.]+, \K[0-9]+(?= delayed)' <<<"$text" | tail -1)
    stops=$(grep -oP 'delayed write groups \([0-9.]+ s\), \K[0-9]+(?= stops)' <<<"$text" | tail -1)
    l0=$(grep -oP 'L0 files \K[0-9]+' <<<"$text" | tail -1)
    wa=$(grep -oP 'cairn: write-amp \K[0-9.]+' <<<"$text" | tail -1)
    echo "$round $nice $ops $delayed $stops $l0 $wa" | tee -a "$out/raw.txt"
  done
done
rm -rf "$db"
# Medians over rounds per nice value.
awk '{ k=$2; n[k]++; ops[k,n[k]]=$3; del[k,n[k]]=$4; st[k,n[k]]=$5; l0[k,n[k]]=$6; wa[k,n[k]]=$7 }
  function med(a, k, c,   i, j, t, v) { for (i=1;i<=c;i++) v[i]=a[k,i];
    for (i=1;i<=c;i++) for (j=i+1;j<=c;j++) if (v[j]<v[i]) { t=v[i]; v[i]=v[j]; v[j]=t }
    return (c%2) ? v[(c+1)/2] : (v[c/2]+v[c/2+1])/2 }
  END {
    print "| compaction_nice | readers ops/s | delayed write groups | stops | L0 files at the end | write-amp done |" > "'"$out"'/results.md";
    print "|---:|---:|---:|---:|---:|---:|" >> "'"$out"'/results.md";
    split("0 10 19", order, " ");
    for (o=1;o<=3;o++) { k=order[o]; if (!(k in n)) continue;
      printf "| %s | %d | %d | %d | %g | %.2f |\n", k, med(ops,k,n[k]), med(del,k,n[k]), med(st,k,n[k]), med(l0,k,n[k]), med(wa,k,n[k]) >> "'"$out"'/results.md";
      printf "readers-kops nice%s %.1f\n", k, med(ops,k,n[k])/1000 > "'"$out"'/bars.txt";
    }
  }' "$out/raw.txt"
$bin/cairn-lab plot-bars --input "$out/bars.txt" --out "$out/bars.png" \
  --title "readwhilewriting, 3 readers + 1 writer on 2 cores: readers' Kops/s by compaction nice" --ylabel "Kops/s"
cat "$out/results.md"
