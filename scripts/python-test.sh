#!/usr/bin/env bash
# The Python package's tests (python/tests, the example notebook included), as scripts/test.sh
# runs them: builds the package into a virtual environment in target/python-venv with
# `pip install ./python[test]` (maturin builds the native module with cargo), then pytest.
# Needs Python >= 3.11 with venv; on Debian without it, installs python3-venv with apt (root).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if ! "$python" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null; then
  echo "python-test.sh: the daqnet Python package needs Python >= 3.11 ($python: $("$python" --version 2>&1 || echo missing))" >&2
  exit 1
fi
venv=target/python-venv
if [ ! -x "$venv/bin/python" ]; then
  if ! "$python" -m venv "$venv" 2>/dev/null; then
    rm -rf "$venv"
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
      . scripts/apt.sh
      apt_install python3-venv
      "$python" -m venv "$venv"
    else
      echo "python-test.sh: '$python -m venv' fails: install your Python's venv module (Debian: python3-venv)" >&2
      exit 1
    fi
  fi
fi
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q "./python[test]"
DAQNET_BIN="$PWD/target/release/daqnet" "$venv/bin/python" -m pytest -q python/tests
