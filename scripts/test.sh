#!/usr/bin/env bash
# daqnet's test suite, as the README gives it and CI runs it: every crate's tests; the Python
# package's (scripts/python-test.sh: pytest and the example notebook); then the DAQPIPE tests
# again in a build with MPI (`--features mpi`), after installing Open MPI if it is missing
# (scripts/mpi-deps.sh; needs root — without it the MPI part says so and is skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --workspace
# The tests above built target/release/daqnet, which the Python tests run.
scripts/python-test.sh
if [ "$(id -u)" -ne 0 ] && ! command -v mpicc >/dev/null; then
  echo "test.sh: skipping the MPI tests: Open MPI is not installed and installing it needs root" >&2
  exit 0
fi
scripts/mpi-deps.sh
# --workspace keeps the other crates' features as above: only what MPI changes is rebuilt.
cargo test --release --workspace --features daqnet/mpi --test pipe
