#!/bin/sh
# daqnet's settings for its own packetdrill scripts, run in the script's fresh network namespace
# (packetdrill's own defaults.sh is not used). Linux's defaults where the model follows them:
# SACK, D-SACK, timestamps, F-RTO, RACK with tail-loss probes; no slow start after idle, no
# metrics remembered between connections. Each script sets cubic on its socket
# (TCP_CONGESTION): a new namespace allows only reno and bbr as its default.
sysctl -q net.ipv4.tcp_timestamps=1 net.ipv4.tcp_sack=1 net.ipv4.tcp_dsack=1 net.ipv4.tcp_frto=2 \
  net.ipv4.tcp_reordering=3 net.ipv4.tcp_slow_start_after_idle=0 net.ipv4.tcp_early_retrans=3 \
  net.ipv4.tcp_recovery=1 net.ipv4.tcp_no_metrics_save=1 \
  net.ipv4.tcp_rmem="4096 540000 15728640" net.ipv4.tcp_wmem="4096 262144 4194304"
