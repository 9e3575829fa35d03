#!/usr/bin/env bash
# Installs what the `rocksdb` engine adapter of cairn-bench needs: Debian's RocksDB 7.8.3 shared
# library and headers (librocksdb-dev), libclang for the bindings generator, and Debian's
# db_bench (rocksdb-tools) for calibration. The build finds the library through
# .cargo/config.toml (ROCKSDB_LIB_DIR); the script prints those settings for other shells.
#   scripts/setup-rocksdb.sh && cargo build --release -p cairn-bench --features rocksdb,fjall
set -euo pipefail
env_only=${1:-}
need=()
[ -e /usr/include/rocksdb/c.h ] || need+=(librocksdb-dev)
dpkg -s libclang-dev >/dev/null 2>&1 || need+=(libclang-dev)
command -v db_bench >/dev/null 2>&1 || need+=(rocksdb-tools)
if [ "$env_only" != --env ] && [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi
libdir=$(dirname "$(ls /usr/lib/*/librocksdb.so 2>/dev/null | head -1)")
echo "export ROCKSDB_LIB_DIR=$libdir"
echo "export ROCKSDB_INCLUDE_DIR=/usr/include"
