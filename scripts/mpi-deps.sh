#!/usr/bin/env bash
# Installs what daqnet's `mpi` feature needs, if it is missing: Open MPI (mpirun, and the
# headers and mpicc the rsmpi crate builds against) and libclang (rsmpi generates its MPI
# bindings with bindgen). Debian/Ubuntu; needs root. Idempotent.
set -euo pipefail
. "$(dirname "$0")/apt.sh"
missing=()
command -v mpirun >/dev/null || missing+=(openmpi-bin)
command -v mpicc >/dev/null || missing+=(libopenmpi-dev)
ldconfig -p | grep -q 'libclang\(-[0-9.]*\)\?\.so' || missing+=(libclang-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "mpi-deps: installing ${missing[*]}" >&2
  apt_install "${missing[@]}"
fi
