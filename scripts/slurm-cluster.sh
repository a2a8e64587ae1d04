#!/usr/bin/env bash
# A single-node Slurm cluster on 127.0.0.1, for trying `daqnet sweep --slurm` and for its test:
#   scripts/slurm-cluster.sh DIR CTLD_PORT SLURMD_PORT
# writes DIR/slurm.conf (use it with `export SLURM_CONF=DIR/slurm.conf`), starts munged,
# slurmctld and slurmd in the foreground under this script, prints `ready` once the node takes
# jobs, and runs until its standard input closes (Ctrl-D, or the test that started it ending,
# killed or not); then cancels every job, stops the daemons and removes what it wrote. Needs root and
# scripts/slurm-deps.sh.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 DIR CTLD_PORT SLURMD_PORT" >&2; exit 2; }
dir=$1
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
dir=$(cd "$dir" && pwd)
export SLURM_CONF=$dir/slurm.conf
pids=()
stop() {
  scancel --user="$(id -un)" 2>/dev/null || true
  for _ in $(seq 50); do
    [ -z "$(squeue -h 2>/dev/null)" ] && break
    sleep 0.2
  done
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  (cd "$dir" && rm -rf state spool log slurm.conf munge.key munge.sock munge.sock.lock munged.pid munged.seed \
    slurmctld.pid slurmd.pid)
  rmdir "$dir" 2>/dev/null || true
}
trap stop EXIT
trap 'exit 1' INT TERM HUP
head -c 1024 /dev/urandom >"$dir/munge.key"
chmod 600 "$dir/munge.key"
host=$(hostname -s)
cat >"$SLURM_CONF" <<CONF
ClusterName=daqnet-test
SlurmctldHost=$host(127.0.0.1)
SlurmUser=$(id -un)
SlurmctldPort=$2
SlurmdPort=$3
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=daqnet Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
munged -F --force -S "$dir/munge.sock" --key-file="$dir/munge.key" --log-file="$dir/log/munged.log" \
  --pid-file="$dir/munged.pid" --seed-file="$dir/munged.seed" 2>/dev/null &
pids+=($!)
for _ in $(seq 100); do [ -S "$dir/munge.sock" ] && break; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" 2>/dev/null &
pids+=($!)
slurmd -D -f "$SLURM_CONF" 2>/dev/null &
pids+=($!)
for _ in $(seq 150); do
  [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && { echo ready; break; }
  sleep 0.2
done
if [ "$(sinfo -h -o %T 2>/dev/null)" != idle ]; then
  echo "slurm-cluster: the node never became idle; the daemons' logs end:" >&2
  tail -n 20 "$dir"/log/*.log >&2
  exit 1
fi
# Until standard input closes.
cat >/dev/null
