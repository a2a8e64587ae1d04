#!/usr/bin/env bash
# daqnet's test suite, as the README gives it and CI runs it: every crate's tests, in a build
# with MPI (`--features mpi`) when Open MPI is there or can be installed (scripts/mpi-deps.sh
# installs it as root; without either, the MPI tests are skipped, saying so); then the Python
# package's (scripts/python-test.sh: pytest and the example notebook).
set -euo pipefail
cd "$(dirname "$0")/.."
features=()
if [ "$(id -u)" -eq 0 ] || command -v mpicc >/dev/null; then
  scripts/mpi-deps.sh
  # One build for every test: a second one with MPI would rebuild a third of the workspace.
  features=(--features daqnet/mpi)
else
  echo "test.sh: skipping the MPI tests: Open MPI is not installed and installing it needs root" >&2
fi
# Every test binary runs even after one fails, so one run shows every failure.
cargo test --release --workspace --no-fail-fast "${features[@]}"
# The tests above built target/release/daqnet, which the Python tests run.
scripts/python-test.sh
