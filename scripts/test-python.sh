#!/usr/bin/env bash
# The Python package's tests: builds crates/cairn-py with maturin (pip's PEP 517 build) into a
# virtual environment under target/pyenv and runs its pytest suite. Installs Debian's python3
# and venv support when the machine lacks them.
#   scripts/test-python.sh
set -euo pipefail
cd "$(dirname "$0")/.."
env=target/pyenv
if [ ! -x "$env/bin/python" ]; then
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -m venv "$env" >/dev/null 2>&1; then
    apt-get update && apt-get install -y --no-install-recommends python3 python3-venv python3-pip
    rm -rf "$env"
    python3 -m venv "$env"
  fi
fi
"$env/bin/pip" install -q --disable-pip-version-check "maturin>=1.7,<2" pytest
"$env/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps ./crates/cairn-py
"$env/bin/python" -m pytest -q crates/cairn-py/tests
