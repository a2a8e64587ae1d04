#!/usr/bin/env bash
# Installs Slurm (Debian's `slurm-wlm`: slurmctld, slurmd, sbatch, squeue, scancel) and MUNGE,
# if they are missing, for the test that runs `daqnet sweep --slurm` on a single-node cluster
# of its own (scripts/slurm-cluster.sh). The packages' own services are kept from starting.
# Debian/Ubuntu; needs root. Idempotent.
set -euo pipefail
. "$(dirname "$0")/apt.sh"
missing=()
command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null || missing+=(slurm-wlm)
command -v munged >/dev/null || missing+=(munge)
if [ ${#missing[@]} -gt 0 ]; then
  echo "slurm-deps: installing ${missing[*]}" >&2
  # policy-rc.d keeps the packages from starting their services during the install.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  apt_install --no-install-recommends "${missing[@]}"
fi
command -v slurmctld >/dev/null && command -v munged >/dev/null
