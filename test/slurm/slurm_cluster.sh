# A real Slurm cluster of two nodes on this machine (sourced), from
# Debian's packages: munged, slurmctld and two slurmd, configured here and
# torn down at exit. Each node is a network namespace of netns_pair.sh
# (nodea 10.203.0.1, nodeb 10.203.0.2, joined by a veth pair) with a UTS
# namespace of its own (its hostname) and a mount namespace with its own
# /etc/hosts, /tmp and /dev/shm, so ranks on the two nodes really are on different "hosts";
# the controller runs on nodea, which is also where the user's commands
# run: $ON_LOGIN COMMAND... (srun, sbatch, salloc, hvdrun inside them).
#
# Set WORK (a directory outside /tmp: the nodes get their own /tmp) and
# TAG (a word in the command line of the test's processes) first, and call
# slurm_cluster_share DIR... for what the nodes must see under /tmp (as a
# cluster's shared file system) before slurm_cluster_start.
# slurm_cluster_start returns 77 when the cluster cannot be built here
# (not root, no network namespaces, Slurm not installed) and says why;
# at exit every process in the nodes' namespaces (daemons, slurmstepd,
# tasks) and of the test is killed, the namespaces deleted and WORK removed.
. "$(dirname "${BASH_SOURCE[0]}")/../runner/netns_pair.sh"
export SLURM_CONF="$WORK/slurm.conf"

# "$ON_NODE" NODE COMMAND...: on nodea or nodeb; "$ON_LOGIN" COMMAND...:
# on nodea as a user on a login node (node_exec.sh). Scripts, so that
# `timeout` can run them.
export HVDS_WORK="$WORK" HVDS_NS_A="$NS_A" HVDS_NS_B="$NS_B" HVDS_SHARED=""
ON_NODE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/node_exec.sh"
# A script of its own (it is used unquoted, and the checkout's path may
# have a space; WORK has none).
ON_LOGIN="$WORK/on_login"
printf '#!/bin/sh\nexec "%s" login "$@"\n' "$ON_NODE" >"$ON_LOGIN"
chmod +x "$ON_LOGIN"

# Every node sees DIR (a folder under /tmp, with all below it) at the same
# path as the login node does (node_exec.sh binds it into the node's /tmp).
slurm_cluster_share() {  # dir...
  local dir
  for dir in "$@"; do HVDS_SHARED+="$dir"$'\n'; done
}

slurm_cluster_why_not() {
  [ "$(id -u)" -eq 0 ] || { echo "not root"; return; }
  local missing="" tool
  for tool in munged slurmctld slurmd srun sbatch salloc scancel scontrol nsenter unshare; do
    command -v "$tool" >/dev/null || missing+=" $tool"
  done
  [ -z "$missing" ] || echo "missing:$missing (scripts/setup.sh --tests installs Slurm)"
}

# Waits up to $1 seconds for `sinfo` to show both nodes idle.
slurm_wait_idle() {
  local deadline=$((SECONDS + $1))
  while [ $SECONDS -lt $deadline ]; do
    [ "$($ON_LOGIN sinfo -h -o '%T' -N 2>/dev/null | grep -c idle)" = 2 ] && return 0
    sleep 0.5
  done
  return 1
}

slurm_cluster_start() {
  local why
  why=$(slurm_cluster_why_not)
  if [ -n "$why" ]; then
    echo "SKIP: cannot start a Slurm cluster here: $why"
    return 77
  fi
  netns_pair_create || return $?
  printf '127.0.0.1 localhost\n%s nodea\n%s nodeb\n' "$ADDR_A" "$ADDR_B" >"$WORK/hosts"
  mkdir -p "$WORK/state" "$WORK/spool-nodea" "$WORK/spool-nodeb"
  chmod 700 "$WORK"
  head -c 1024 /dev/urandom >"$WORK/munge.key" && chmod 600 "$WORK/munge.key"
  munged --force --socket="$WORK/munge.sock" --key-file="$WORK/munge.key" \
    --pid-file="$WORK/munged.pid" --log-file="$WORK/munged.log" \
    --seed-file="$WORK/munge.seed" || return 1
  cat >"$SLURM_CONF" <<EOF
ClusterName=hvdtest
SlurmctldHost=nodea($ADDR_A)
AuthType=auth/munge
AuthInfo=socket=$WORK/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool-%n
SlurmctldPidFile=$WORK/slurmctld.pid
SlurmdPidFile=$WORK/slurmd-%n.pid
SlurmctldLogFile=$WORK/slurmctld.log
SlurmdLogFile=$WORK/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
KillWait=5
MinJobAge=600
SlurmdParameters=config_overrides
NodeName=nodea NodeAddr=$ADDR_A CPUs=4 State=UNKNOWN
NodeName=nodeb NodeAddr=$ADDR_B CPUs=4 State=UNKNOWN
PartitionName=debug Nodes=nodea,nodeb Default=YES MaxTime=INFINITE State=UP
EOF
  # The daemons start in WORK: slurmstepd returns to its daemon's directory,
  # which must exist in the node's mount namespace.
  (cd "$WORK" && $ON_LOGIN slurmctld -D -i >"$WORK/slurmctld.out" 2>&1 &)
  (cd "$WORK" && "$ON_NODE" nodea slurmd -D -N nodea >"$WORK/slurmd-a.out" 2>&1 &)
  (cd "$WORK" && "$ON_NODE" nodeb slurmd -D -N nodeb >"$WORK/slurmd-b.out" 2>&1 &)
  if ! slurm_wait_idle 30; then
    echo "FAIL: the Slurm cluster did not come up within 30 s"
    tail -n 5 "$WORK"/*.out "$WORK"/*.log
    return 1
  fi
}

slurm_cluster_cleanup() {
  local pid ns
  for pid in $(pgrep -f -- "$TAG"); do kill -KILL "$pid" 2>/dev/null; done
  # Everything that runs on the nodes: the daemons, slurmstepd, the tasks.
  for ns in "$NS_A" "$NS_B"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  done
  [ -f "$WORK/munged.pid" ] && kill -KILL "$(cat "$WORK/munged.pid")" 2>/dev/null
  netns_pair_cleanup
}
trap slurm_cluster_cleanup EXIT
trap 'exit 130' INT TERM
