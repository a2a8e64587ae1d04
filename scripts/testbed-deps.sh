#!/usr/bin/env bash
# Installs what the testbed needs beyond iproute2, if it is missing: clang, bpftool and the
# libbpf headers, to build daqnet's static-window TCP congestion control (a BPF program) for
# `congestion_control = "static"` scenarios; Open vSwitch (ovsdb-server, ovs-vswitchd,
# ovs-vsctl, ovs-ofctl), whose userspace datapath the parallel leaf-spine testbed runs
# (daqnet starts and stops its own daemons; the package's service is not needed).
# Debian/Ubuntu; needs root. Idempotent.
set -euo pipefail
. "$(dirname "$0")/apt.sh"
missing=()
command -v clang >/dev/null || missing+=(clang)
command -v bpftool >/dev/null || missing+=(bpftool)
[ -e /usr/include/bpf/bpf_helpers.h ] || missing+=(libbpf-dev)
command -v ovs-vswitchd >/dev/null || missing+=(openvswitch-switch)
if [ ${#missing[@]} -gt 0 ]; then
  echo "testbed-deps: installing ${missing[*]}" >&2
  apt_install "${missing[@]}"
fi
