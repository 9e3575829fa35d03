#!/usr/bin/env bash
# Scans under memory pressure (issue "scans at least RocksDB's"), with what each seek costs
# (the per-seek table of every results.md: entries, runs merged, tables reached, data and index
# blocks read and cached, readahead used and unused). One budget of PCT percent of the data for
# both engines, O_DIRECT, fresh processes, configurations rotating each round:
#   rocksdb      2 write buffers of M/8, the rest a block cache holding index and filter blocks,
#                Bloom 10, 8 MiB files (scripts/lib/budget.sh), statistics on (its tickers)
#   cairn        cairn's defaults at M
#   cairn-fixed  cairn at RocksDB's static split (no tuner): write buffers M/8, the rest cache
# Each engine loads NUM keys of 16 + VALUE (100) B once (fillrandom, flush, waitforcompaction); every
# run starts on a copy. Cells under $OUT:
#   seek10, seek100      seekrandom with --seek_nexts 10 and 100 (SEEKS seeks)
#   scan10k, scan10k-rev seekrandom with --seek_nexts 10000, forward and --reverse_iterator
#   full, full-rev       readseq and readreverse (the whole database)
#   ycsb-e, ycsb-e-settled  YCSB E (RECORDS × 1 KB) as YCSB runs it, and with a wait for
#                the load's compactions before the run
# and device.txt: the device's sequential read bandwidth with O_DIRECT (dd, 1 MiB reads of the
# largest table file), against which the full scans' MB/s are read, and what one random read
# costs by its size.
#   scripts/scans.sh      (ROUNDS=3: about 30 minutes)
#   VALUE=1000 NUM=400000 CELLS="full full-rev" scripts/scans.sh   (long scans of larger
#                         entries: less CPU per byte, closer to what the device can give)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/budget.sh
out=${OUT:-docs/results/scans}
num=${NUM:-3000000}
seeks=${SEEKS:-100000}
records=${RECORDS:-300000}
ycsb_ops=${YCSB_OPS:-100000}
rounds=${ROUNDS:-3}
pct=${PCT:-5}
value=${VALUE:-100}
cells=${CELLS:-seek10 seek100 scan10k scan10k-rev full full-rev ycsb-e ycsb-e-settled}
work=${WORK:-/tmp/scans}
scripts/setup-rocksdb.sh >/dev/null
cargo build --release -q -p cairn-bench --features rocksdb,fjall
bin=./target/release
m=$((num * (16 + value) * pct / 100))
budget_flags "$m"
# RocksDB's tickers (seeks, nexts, blocks by kind, unused readahead) need its statistics on.
rocks="$rocks --statistics=1"
fixed="--engine=cairn --defaults=engine --cache_size=$((m - m / 4)) --write_buffer_size=$((m / 8))"
shape=(--num="$num" --key_size=16 --value_size=$value --compression_type=none --use_direct_reads=1 --seed=7)
mkdir -p "$out"
rm -rf "$work"
mkdir -p "$work"
loaded=false
load() {
  $loaded && return
  for e in rocksdb cairn cairn-fixed; do
    flags=$rocks
    [ "$e" = cairn ] && flags=$cairn
    [ "$e" = cairn-fixed ] && flags=$fixed
    # shellcheck disable=SC2086
    $bin/db_bench $flags --db="$work/$e" --benchmarks=fillrandom,flush,waitforcompaction "${shape[@]}" \
      > "$out/load-$e.txt"
  done
  sync
  big=$(find "$work/cairn" -name '*.sst' -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2)
  { echo "dd of $(basename "$big") ($(du -m "$big" | cut -f1) MB), 1 MiB reads, O_DIRECT:"
    dd if="$big" of=/dev/null bs=1M iflag=direct 2>&1 | tail -1
    # What one read costs by its size (the seek-readahead decider's IO_COST_BYTES).
    echo "random O_DIRECT reads of the same file, one at a time, 400 per size:"
    python3 - "$big" <<'PY'
import mmap, os, random, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
size = os.fstat(fd).st_size
random.seed(7)
for kib in (4, 8, 16, 32, 64, 128, 256):
    buf, n = mmap.mmap(-1, kib << 10), 400
    t = time.perf_counter()
    for _ in range(n):
        os.preadv(fd, [buf], random.randrange(0, size - (kib << 10)) & ~4095)
    print(f"{kib:4d} KiB  {(time.perf_counter() - t) / n * 1e6:7.1f} us per read")
PY
  } > "$out/device.txt"
  loaded=true
}
cell() { # name, db_bench flags
  local name=$1
  shift
  load
  $bin/cairn-lab compare --rounds "$rounds" --work "$work/runs" --out "$out/$name" \
    --config "rocksdb=from:$work/rocksdb $rocks" --config "cairn=from:$work/cairn $cairn" \
    --config "cairn-fixed=from:$work/cairn-fixed $fixed" -- --use_existing_db=1 "${shape[@]}" "$@"
}
for c in $cells; do
  case $c in
    seek10) cell "$c" --benchmarks=seekrandom --seek_nexts=10 --reads="$seeks" ;;
    seek100) cell "$c" --benchmarks=seekrandom --seek_nexts=100 --reads=$((seeks / 4)) ;;
    scan10k) cell "$c" --benchmarks=seekrandom --seek_nexts=10000 --reads=$((seeks / 200)) ;;
    scan10k-rev) cell "$c" --benchmarks=seekrandom --seek_nexts=10000 --reads=$((seeks / 200)) --reverse_iterator=1 ;;
    full) cell "$c" --benchmarks=readseq ;;
    full-rev) cell "$c" --benchmarks=readreverse ;;
    ycsb-e | ycsb-e-settled)
      wait=()
      [ "$c" = ycsb-e-settled ] && wait=(--wait_after_load=1)
      rm -rf "$work/ycsb"
      $bin/cairn-lab compare --tool ycsb --workload crates/cairn-bench/workloads/workloade --rounds "$rounds" \
        --work "$work/ycsb" --out "$out/$c" --config "rocksdb=$rocks" --config "cairn=$cairn" \
        --config "cairn-fixed=$fixed" -- -p recordcount="$records" -p operationcount="$ycsb_ops" \
        --use_direct_reads=1 --compression_type=none --seed=7 "${wait[@]}"
      ;;
    *) echo "unknown cell $c" >&2; exit 2 ;;
  esac
done
rm -rf "$work"
