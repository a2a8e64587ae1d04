#!/usr/bin/env bash
# Installs what building packetdrill needs, if it is missing: bison and flex (and a C compiler).
# Debian/Ubuntu; needs root. Idempotent. packetdrill itself (GPL-2.0) is not installed or copied:
# the conformance test builds it from ../shared/packetdrill or PACKETDRILL_DIR into target/.
set -euo pipefail
. "$(dirname "$0")/apt.sh"
missing=()
command -v bison >/dev/null || missing+=(bison)
command -v flex >/dev/null || missing+=(flex)
command -v cc >/dev/null || missing+=(gcc)
command -v make >/dev/null || missing+=(make)
if [ ${#missing[@]} -gt 0 ]; then
  echo "packetdrill-deps: installing ${missing[*]}" >&2
  apt_install "${missing[@]}"
fi
