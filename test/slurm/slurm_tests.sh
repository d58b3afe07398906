#!/usr/bin/env bash
# horovodcpp under a real Slurm (two nodes, slurm_cluster.sh), as a user of
# a Slurm cluster runs it:
#   srun         `srun -n 4 --ntasks-per-node=2 fault_worker` with no launcher
#                (the C++ API): every rank's place from Slurm, over Gloo with
#                rank 0's store; with --mpi also `srun --mpi=pmix` over MPI
#   mnist        `srun -n 4 --ntasks-per-node=2 python mnist.py` (torch)
#   sbatch       a job script (#SBATCH lines, srun python ..., a checkpoint
#                on rank 0) ends COMPLETED with the accuracy in its output
#   torchrun     `srun torchrun --nnodes=2 --nproc_per_node=2 --rdzv-backend
#                c10d ...` (with --torchrun, the current PyTorch): a DDP
#                script on backend horovodcpp, and a Horovod-API script, each
#                one job of 4 ranks over the two nodes
#   hvdrun       hvdrun inside salloc, no -H: Gloo mode (one srun step, and
#                -np 3 placed as it says), MPI mode (mpirun over srun); an
#                ssh that records any call must stay unused
#   killed       a rank SIGKILLed under bare srun and under hvdrun: every
#                survivor names it, the step ends within 20 s, nothing left
#   scancel      scancel of a running job ends every rank within 15 s
#   port taken   rank 0's rendezvous port held by another process: a clear
#                error on every rank, within the timeout
#   rank 0 node  rank 0 placed off the step's first node (arbitrary
#                distribution): the same
# The programs, the example and PYTHONPATH's packages run from a copy under
# /tmp in a folder whose name has a space (tmp_copy.sh): each node has a
# /tmp of its own, and a checkout or build there must work as elsewhere.
#
# usage: slurm_tests.sh HVDRUN FAULT_WORKER [--torch PYTHON MNIST_PY]
#                       [--torchrun TORCH_PYTHON SCRIPTS_DIR] [--mpi]
# (root). Exit 77 (skip) when the cluster cannot be built here; under CI
# (CI=true) that is a failure instead.
set -u

HVDRUN=$(readlink -f "${1:?usage: slurm_tests.sh HVDRUN FAULT_WORKER}")
WORKER=$(readlink -f "${2:?usage: slurm_tests.sh HVDRUN FAULT_WORKER}")
shift 2
PYTHON="" MNIST="" MPI=0 TORCH_PYTHON="" SCRIPTS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --torch) PYTHON=$2 MNIST=$(readlink -f "$3"); shift 3 ;;
    --torchrun) TORCH_PYTHON=$2 SCRIPTS=$(readlink -f "$3"); shift 3 ;;
    --mpi) MPI=1; shift ;;
    *) echo "unknown argument $1"; exit 2 ;;
  esac
done
TAG="hvdslurm-$$-$RANDOM$RANDOM"
WORK=$(mktemp -d /var/tmp/hvd_slurm.XXXXXX)

. "$(dirname "$0")/slurm_cluster.sh"
. "$(dirname "$0")/../runner/report.sh"
. "$(dirname "$0")/../runner/tmp_copy.sh"
trap 'slurm_cluster_cleanup; tmp_copy_cleanup' EXIT

tmp_copy_make || { echo "FAIL: cannot make a folder under /tmp"; exit 1; }
tmp_copy_library "$WORKER" || exit 1
HVDRUN=$(tmp_copy "$HVDRUN") && WORKER=$(tmp_copy "$WORKER") || exit 1
if [ -n "$MNIST" ]; then MNIST=$(tmp_copy "$MNIST" examples) || exit 1; fi
if [ -n "$SCRIPTS" ]; then SCRIPTS=$(tmp_copy "$SCRIPTS" examples) || exit 1; fi
copied_path=""
IFS=: read -ra python_dirs <<<"${PYTHONPATH:-}"
for dir in "${python_dirs[@]}"; do
  [ -d "$dir" ] || continue
  mkdir -p "$TMP_COPY/python" && cp -a "$dir/." "$TMP_COPY/python/" || exit 1
  copied_path="$TMP_COPY/python"
done
[ -n "${PYTHONPATH:-}" ] && export PYTHONPATH="$copied_path"
slurm_cluster_share "$TMP_COPY"

slurm_cluster_start
case $? in
  0) ;;
  77) [ "${CI:-}" = true ] && { echo "FAIL: CI must run the Slurm tests"; exit 1; }; exit 77 ;;
  *) echo "FAIL: cannot start the Slurm cluster"; exit 1 ;;
esac
cd "$WORK" || exit 1
# An ssh that only records that it was called: nothing here may use it.
mkdir -p "$WORK/bin"
printf '#!/bin/sh\necho "ssh $*" >>%s/ssh.log\nexit 255\n' "$WORK" >"$WORK/bin/ssh"
chmod +x "$WORK/bin/ssh"
export PATH="$WORK/bin:$PATH"

# fault_worker's result lines: rank R on NODE, for R in 0..N-1.
expect_results() {  # log n nodes...: why-text for each rank missing its line
  local log=$1 n=$2 r why=""
  shift 2
  local nodes=("$@")
  for ((r = 0; r < n; r++)); do
    grep -qE "fault_worker rank $r of $n host ${nodes[$r]} result $((n * (n + 1) / 2)) ok" "$log" ||
      why+="no correct result from rank $r on ${nodes[$r]}; "
  done
  echo "$why"
}

leftovers() { pgrep -f -- "$TAG" | tr '\n' ' '; }

# 1. srun with no launcher: Gloo, rank 0's store, every place from Slurm.
log="$WORK/srun-gloo.log"
HOROVODCPP_LOG_LEVEL=info timeout -s KILL 120 $ON_LOGIN srun -n 4 --ntasks-per-node=2 \
  "$WORKER" --iters 20 --tag "$TAG" >"$log" 2>&1
rc=$?
why=$(expect_results "$log" 4 nodea nodea nodeb nodeb)
[ "$rc" -ne 0 ] && why+="srun exited $rc; "
grep -q "shm+gloo: 2 hosts" "$log" || why+="not Gloo across the two nodes; "
report "srun -n 4 --ntasks-per-node=2 (C++ API, no launcher): Gloo, places from Slurm" "$why" "$log"

if [ "$MPI" = 1 ]; then
  log="$WORK/srun-pmix.log"
  HOROVODCPP_LOG_LEVEL=info timeout -s KILL 120 $ON_LOGIN srun --mpi=pmix -n 4 \
    --ntasks-per-node=2 "$WORKER" --iters 20 --tag "$TAG" >"$log" 2>&1
  rc=$?
  why=$(expect_results "$log" 4 nodea nodea nodeb nodeb)
  [ "$rc" -ne 0 ] && why+="srun exited $rc; "
  grep -q "shm+mpi: 2 hosts" "$log" || why+="not MPI across the two nodes; "
  report "srun --mpi=pmix -n 4: over MPI" "$why" "$log"
fi

# 2. The torch example under srun.
if [ -n "$PYTHON" ]; then
  log="$WORK/mnist.log"
  timeout -s KILL 300 $ON_LOGIN srun -n 4 --ntasks-per-node=2 "$PYTHON" "$MNIST" --epochs 1 \
    --train-images 8000 --log-interval 1000 >"$log" 2>&1
  rc=$?
  why=""
  [ "$rc" -ne 0 ] && why+="srun exited $rc; "
  grep -q "^test accuracy=0\.[0-9]*$" "$log" || why+="no accuracy line; "
  grep -q "parameters identical on all 4 ranks" "$log" || why+="not 4 ranks in step; "
  report "srun -n 4 --ntasks-per-node=2 python mnist.py" "$why" "$log"

  # 3. sbatch of a job script in the style users copy.
  cat >"$WORK/train.sbatch" <<EOF
#!/bin/bash
#SBATCH --job-name=mnist-$TAG
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --time=00:10:00
#SBATCH --output=$WORK/slurm-%j.out
export HOROVODCPP_JOB_SECRET=\$(od -An -tx1 -N16 /dev/urandom | tr -d ' \\n')
srun $(printf '%q %q' "$PYTHON" "$MNIST") --epochs 1 --train-images 8000 --log-interval 1000 \\
  --checkpoint-dir $WORK/checkpoints
EOF
  log="$WORK/sbatch.log"
  job=$($ON_LOGIN sbatch --parsable "$WORK/train.sbatch" 2>"$log")
  state=""
  deadline=$((SECONDS + 300))
  while [ -n "$job" ] && [ $SECONDS -lt $deadline ]; do
    state=$($ON_LOGIN scontrol show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
    case "$state" in PENDING | RUNNING | CONFIGURING | COMPLETING | "") sleep 1 ;; *) break ;; esac
  done
  out="$WORK/slurm-$job.out"
  [ -f "$out" ] && cat "$out" >>"$log"
  why=""
  [ -z "$job" ] && why+="sbatch failed; "
  [ "$state" != COMPLETED ] && why+="job state '$state', not COMPLETED; "
  grep -q "^test accuracy=0\.[0-9]*$" "$out" 2>/dev/null || why+="no accuracy line in $out; "
  [ -f "$WORK/checkpoints/checkpoint-1.pt" ] || why+="no checkpoint from rank 0; "
  grep -q "guarded only by the job" "$out" 2>/dev/null && why+="the exported secret was not used; "
  report "sbatch job script (srun python mnist.py, checkpoint): $state" "$why" "$log"
fi

# 3b. srun torchrun, as the wikis have it: one agent per node, c10d rendezvous on nodea.
if [ -n "$TORCH_PYTHON" ]; then
  for script in launched_ddp launched_horovod_api; do
    log="$WORK/torchrun-$script.log"
    timeout -s KILL 180 $ON_LOGIN srun -N 2 --ntasks-per-node=1 \
      "$(dirname "$TORCH_PYTHON")/torchrun" --nnodes=2 --nproc_per_node=2 --rdzv-backend=c10d \
      --rdzv-endpoint=nodea:29411 --rdzv-id="$TAG" "$SCRIPTS/$script.py" >"$log" 2>&1
    rc=$?
    why=""
    [ "$rc" -ne 0 ] && why+="srun exited $rc; "
    for r in 0 1 2 3; do
      if [ "$script" = launched_ddp ]; then
        line="ddp rank $r of 4 gradient ok"
      else
        line="horovod api rank $r of 4 local $((r % 2)) of 2 sum 10 transport gloo"
      fi
      grep -q "$line" "$log" || why+="no '$line'; "
    done
    report "srun -N 2 torchrun --nnodes=2 --nproc_per_node=2: $script.py, one job of 4" "$why" \
      "$log"
  done
fi

# 4. hvdrun inside an allocation, no -H: srun (Gloo) or mpirun's Slurm launcher (MPI).
hvdrun_in_salloc() {  # log hvdrun-args...
  local log=$1
  shift
  timeout -s KILL 120 $ON_LOGIN salloc -N 2 -n 4 --ntasks-per-node=2 "$HVDRUN" "$@" >"$log" 2>&1
}
log="$WORK/hvdrun-gloo.log"
HOROVODCPP_LOG_LEVEL=info hvdrun_in_salloc "$log" --gloo "$WORKER" --iters 20 --tag "$TAG"
rc=$?
why=$(expect_results "$log" 4 nodea nodea nodeb nodeb)
[ "$rc" -ne 0 ] && why+="hvdrun exited $rc; "
for r in 0 1 2 3; do
  grep -q "^\[$r\]<stdout>: fault_worker rank $r of 4 " "$log" || why+="rank $r's lines not labelled [$r]; "
done
grep -q "shm+gloo: 2 hosts" "$log" || why+="not Gloo across the two nodes; "
[ -f "$WORK/ssh.log" ] && why+="ssh was called: $(head -n1 "$WORK/ssh.log"); "
report "hvdrun --gloo inside salloc: one srun step, no ssh" "$why" "$log"

log="$WORK/hvdrun-np3.log"
hvdrun_in_salloc "$log" -np 3 --gloo "$WORKER" --iters 20 --tag "$TAG"
rc=$?
why=$(expect_results "$log" 3 nodea nodea nodeb)
[ "$rc" -ne 0 ] && why+="hvdrun exited $rc; "
grep -q "hvdrun: 3 ranks in the Slurm allocation of 4 slots (nodea:2,nodeb:2): nodea:2,nodeb:1" \
  "$log" || why+="no placement line; "
report "hvdrun -np 3 in an allocation of 4: says where, places there" "$why" "$log"

if [ "$MPI" = 1 ]; then
  log="$WORK/hvdrun-mpi.log"
  HOROVODCPP_LOG_LEVEL=info hvdrun_in_salloc "$log" --mpi "$WORKER" --iters 20 --tag "$TAG"
  rc=$?
  why=$(expect_results "$log" 4 nodea nodea nodeb nodeb)
  [ "$rc" -ne 0 ] && why+="hvdrun exited $rc; "
  grep -q "shm+mpi: 2 hosts" "$log" || why+="not MPI across the two nodes; "
  [ -f "$WORK/ssh.log" ] && why+="ssh was called: $(head -n1 "$WORK/ssh.log"); "
  report "hvdrun --mpi inside salloc: mpirun's daemons through srun, no ssh" "$why" "$log"
fi

# 5. A rank killed: every survivor names it, the step ends, nothing is left.
killed_checks() {  # log rc seconds survivors-pattern...: why-text
  local log=$1 rc=$2 took=$3 why=""
  shift 3
  [ "$rc" -eq 0 ] && why+="exited 0; "
  [ "$took" -gt 20 ] && why+="took ${took}s (bound 20 s); "
  # A peer on rank 3's node may see the death first in shared memory
  # ("rank 3 (pid N) died"), the others as a silent peer.
  for pattern in "$@"; do
    grep -qE "$pattern.*rank 3 (stopped answering|\(pid [0-9]+\) died)" "$log" ||
      why+="'$pattern' does not name rank 3; "
  done
  sleep 1
  local left
  left=$(leftovers)
  [ -n "$left" ] && why+="processes left: $left; "
  echo "$why"
}
log="$WORK/killed-srun.log"
start=$SECONDS
timeout -s KILL 120 $ON_LOGIN srun --label -n 4 --ntasks-per-node=2 "$WORKER" --iters 100000 \
  --sleep-ms 10 --kill-rank 3 --kill-at 20 --tag "$TAG" >"$log" 2>&1
rc=$?
took=$((SECONDS - start))
why=$(killed_checks "$log" "$rc" "$took" "^ *0: fault_worker:" "^ *1: fault_worker:" \
  "^ *2: fault_worker:")
report "srun: rank 3 killed, every survivor names it, nothing left (${took}s)" "$why" "$log"

log="$WORK/killed-hvdrun.log"
start=$SECONDS
hvdrun_in_salloc "$log" --gloo "$WORKER" --iters 100000 --sleep-ms 10 --kill-rank 3 --kill-at 20 \
  --tag "$TAG"
rc=$?
took=$((SECONDS - start))
why=$(killed_checks "$log" "$rc" "$took" "^\[0\]<stderr>: fault_worker:" \
  "^\[1\]<stderr>: fault_worker:" "^\[2\]<stderr>: fault_worker:")
grep -q "^hvdrun: rank 3 (host nodeb) was killed" "$log" || why+="hvdrun does not name rank 3; "
report "hvdrun in salloc: rank 3 killed, every survivor and hvdrun name it (${took}s)" "$why" "$log"

# 6. scancel of a running batch job.
cat >"$WORK/long.sbatch" <<EOF
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --output=$WORK/long-%j.out
srun $(printf '%q' "$WORKER") --iters 100000000 --sleep-ms 10 --tag $TAG
EOF
log="$WORK/scancel.log"
job=$($ON_LOGIN sbatch --parsable "$WORK/long.sbatch" 2>"$log")
deadline=$((SECONDS + 60))
while [ $SECONDS -lt $deadline ] && [ "$(pgrep -f -- "^$WORKER .*$TAG" | wc -l)" -lt 4 ]; do sleep 0.5; done
running=$(pgrep -f -- "^$WORKER .*$TAG" | wc -l)
sleep 2  # the ranks are past init and in their loop
start=$SECONDS
$ON_LOGIN scancel "$job" >>"$log" 2>&1
while [ $((SECONDS - start)) -lt 30 ] && [ -n "$(leftovers)" ]; do sleep 0.5; done
took=$((SECONDS - start))
cat "$WORK/long-$job.out" >>"$log" 2>/dev/null
why=""
[ "$running" -lt 4 ] && why+="only $running ranks ever ran; "
[ "$took" -gt 15 ] && why+="ranks still running ${took}s after scancel (bound 15 s): $(leftovers); "
report "scancel of a running job ends every rank (${took}s)" "$why" "$log"

# A 2-rank srun (SRUN_ARGS...) whose rendezvous cannot happen: it fails
# within 20 s, rank 0 and rank 1 each saying why (extended regexes).
rendezvous_fails() {  # name log rank0-says rank1-says srun-args...
  local name=$1 log=$2 rank0=$3 rank1=$4 start=$SECONDS rc took why=""
  shift 4
  HOROVODCPP_GLOO_TIMEOUT_SECONDS=5 timeout -s KILL 120 $ON_LOGIN srun --label -n 2 "$@" \
    "$WORKER" --iters 5 --tag "$TAG" >"$log" 2>&1
  rc=$?
  took=$((SECONDS - start))
  [ "$rc" -eq 0 ] && why+="srun exited 0; "
  [ "$took" -gt 20 ] && why+="took ${took}s; "
  grep -qE "^ *0: .*$rank0" "$log" || why+="rank 0 does not say '$rank0'; "
  grep -qE "^ *1: .*$rank1" "$log" || why+="rank 1 does not say '$rank1'; "
  report "$name: both ranks say so (${took}s)" "$why" "$log"
}

# 7. Rank 0's rendezvous port is taken on nodea.
port=23456
"$ON_NODE" nodea "${PYTHON:-python3}" -c "import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', $port)); s.listen(8); time.sleep(120)  # $TAG" >/dev/null 2>&1 &
sleep 1
HOROVODCPP_GLOO_RENDEZVOUS_PORT=$port rendezvous_fails "rendezvous port taken" "$WORK/port.log" \
  "rank 0 cannot host the rendezvous store on port $port of nodea" \
  "rank 1 cannot reach the rendezvous store of rank 0 at nodea:$port" --ntasks-per-node=1

# 8. Rank 0 placed off the step's first node (arbitrary distribution).
printf 'nodeb\nnodea\n' >"$WORK/rank0-second.hosts"
SLURM_HOSTFILE="$WORK/rank0-second.hosts" rendezvous_fails "rank 0 off the step's first node" \
  "$WORK/rank0-node.log" "rank 0 runs on nodeb, not on the step's first node nodea" \
  "cannot reach the rendezvous store of rank 0 at nodea" --distribution=arbitrary

summary
