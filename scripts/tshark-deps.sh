#!/usr/bin/env bash
# Installs tshark (Debian's `tshark` package: Wireshark's dissectors and TCP analysis on the
# command line), if it is missing, for the test that reads the simulator's packet captures
# (`daqnet sim --pcap`) with it. Debian/Ubuntu; needs root. Idempotent.
set -euo pipefail
if ! command -v tshark >/dev/null; then
  echo "tshark-deps: installing tshark" >&2
  apt-get update -qq
  # Non-interactive: the package asks whether non-root users may capture (no).
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tshark >/dev/null
fi
command -v tshark >/dev/null
