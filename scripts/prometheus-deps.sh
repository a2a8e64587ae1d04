#!/usr/bin/env bash
# Installs Prometheus (Debian's `prometheus` package: the server and promtool), if it is missing,
# for the test that scrapes a live `daqnet run --metrics`. The package's own service is stopped
# and disabled: the test starts its own server on loopback. Debian/Ubuntu; needs root.
# Idempotent.
set -euo pipefail
. "$(dirname "$0")/apt.sh"
if ! command -v prometheus >/dev/null; then
  echo "prometheus-deps: installing prometheus" >&2
  # policy-rc.d keeps the package from starting its service during the install.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  apt_install --no-install-recommends prometheus
fi
command -v prometheus >/dev/null
