#!/usr/bin/env bash
# Installs tshark (Debian's `tshark` package: Wireshark's dissectors and TCP analysis on the
# command line), if it is missing, for the test that reads the simulator's packet captures
# (`daqnet sim --pcap`) with it. Debian/Ubuntu; needs root. Idempotent.
set -euo pipefail
. "$(dirname "$0")/apt.sh"
if ! command -v tshark >/dev/null; then
  echo "tshark-deps: installing tshark" >&2
  # Non-interactive (apt_install): the package asks whether non-root users may capture (no).
  apt_install --no-install-recommends tshark
fi
command -v tshark >/dev/null
