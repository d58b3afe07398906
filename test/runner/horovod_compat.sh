#!/usr/bin/env bash
# A Horovod job script with horovodrun replaced by hvdrun, end to end:
#   gloo env      every Gloo rank sees HOROVOD_RANK, _SIZE, _LOCAL_RANK,
#                 _LOCAL_SIZE, _CROSS_RANK, _CROSS_SIZE, _HOSTNAME (on two
#                 "hosts", 127.0.0.1:2 and 127.0.0.2:1), an inherited
#                 HOROVOD_RANK notwithstanding
#   log level     HOROVOD_LOG_LEVEL=DEBUG (upper case, as horovodrun passes
#                 it) makes the ranks log at debug; HOROVOD_LOG_HIDE_TIME=0
#                 puts the time on each line
#   config file   Horovod's nested YAML reaches the ranks
#   version, -cb  print and exit 0
#   jsrun         fails at once, exit 2, with one line saying why
#   elastic       --min-np runs the job (Gloo); with --mpi it fails at once as jsrun
#   tuning knobs  Horovod's tuning flags and HOROVOD_* knobs that horovodcpp does
#                 not act on: the job runs, rank 0 says once per knob what
#                 happens instead, no other rank says it
#   affinity      --thread-affinity pins each rank's coordinator thread to its
#                 CPU; a list too short for the host fails every rank at init
#   output        lines written in pieces (text, then its newline) come out
#                 whole with the rank tag first and once, in Gloo mode and
#                 through mpirun --tag-output (MPI mode, where mpirun exists);
#                 --prefix-output-with-timestamp puts the time first
#
# usage: horovod_compat.sh HVDRUN FAULT_WORKER
# Prints one line per case and "N passed, M failed"; exits 1 if any failed.
set -u
HVDRUN=$(readlink -f "${1:?usage: horovod_compat.sh HVDRUN FAULT_WORKER}")
WORKER=$(readlink -f "${2:?usage: horovod_compat.sh HVDRUN FAULT_WORKER}")
WORK=$(mktemp -d /tmp/hvdrun_compat.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
. "$(dirname "$(readlink -f "$0")")/report.sh"
pass() { report "$1" "" "$WORK/out"; }
fail() { report "$1" "$2" "$WORK/out"; }
# run NAME COMMAND...: output in $WORK/out, exit status in $STATUS (60 s bound)
run() {
  timeout 60 "$@" >"$WORK/out" 2>&1
  STATUS=$?
}

# -- gloo env ---------------------------------------------------------------
run env HOROVOD_RANK=99 "$HVDRUN" -np 3 --gloo -H 127.0.0.1:2,127.0.0.2:1 sh -c \
  'echo "vars $HOROVOD_RANK $HOROVOD_SIZE $HOROVOD_LOCAL_RANK $HOROVOD_LOCAL_SIZE $HOROVOD_CROSS_RANK $HOROVOD_CROSS_SIZE $HOROVOD_HOSTNAME"'
expected="vars 0 3 0 2 0 2 127.0.0.1
vars 1 3 1 2 0 1 127.0.0.1
vars 2 3 0 1 1 2 127.0.0.2"
got=$(grep -o 'vars .*' "$WORK/out" | sort)
if [ "$STATUS" -eq 0 ] && [ "$got" = "$expected" ]; then
  pass "gloo env"
else
  fail "gloo env" "exit $STATUS; expected:
$expected"
fi

# -- log level --------------------------------------------------------------
run env HOROVOD_LOG_LEVEL=DEBUG HOROVOD_LOG_HIDE_TIME=0 "$HVDRUN" -np 2 --gloo "$WORKER" --iters 1
time_re='[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}'
if [ "$STATUS" -eq 0 ] && grep -Eq "\[horovodcpp 1\] $time_re DEBUG: " "$WORK/out"; then
  pass "log level"
else
  fail "log level" "exit $STATUS; no timed DEBUG line of rank 1"
fi

# -- config file --------------------------------------------------------------
cat >"$WORK/horovod.yaml" <<'YAML'
controller: gloo
params:
  cycle_time_ms: 7
stall_check:
  enabled: false
YAML
run "$HVDRUN" -np 2 --config-file "$WORK/horovod.yaml" sh -c \
  'echo "settings $HOROVODCPP_CPU_OPERATIONS $HOROVODCPP_CYCLE_TIME $HOROVODCPP_STALL_CHECK_DISABLE"'
if [ "$STATUS" -eq 0 ] && [ "$(grep -c 'settings gloo 7 1$' "$WORK/out")" -eq 2 ]; then
  pass "config file"
else
  fail "config file" "exit $STATUS; expected 'settings gloo 7 1' from both ranks"
fi

# -- version, -cb -------------------------------------------------------------
run "$HVDRUN" --version
if [ "$STATUS" -eq 0 ] && grep -Eqx '[0-9]+\.[0-9]+\.[0-9]+' "$WORK/out"; then
  pass "version"
else
  fail "version" "exit $STATUS"
fi
run "$HVDRUN" -cb
if [ "$STATUS" -eq 0 ] && grep -Eq '^horovodcpp v[0-9.]+:$' "$WORK/out" &&
   grep -q '^Available Controllers:$' "$WORK/out"; then
  pass "check build"
else
  fail "check build" "exit $STATUS"
fi

# -- jsrun, elastic -----------------------------------------------------------
run "$HVDRUN" -np 2 --jsrun true
if [ "$STATUS" -eq 2 ] && grep -q '^hvdrun: error: --jsrun is not supported: ' "$WORK/out"; then
  pass "jsrun"
else
  fail "jsrun" "exit $STATUS"
fi
run "$HVDRUN" -np 2 --min-np 1 true
if [ "$STATUS" -eq 0 ] && grep -q '^hvdrun: elastic: round 1: 2 rank(s) on localhost:2' "$WORK/out"; then
  pass "elastic"
else
  fail "elastic" "exit $STATUS"
fi
run "$HVDRUN" -np 2 --min-np 1 --mpi true
if [ "$STATUS" -eq 2 ] &&
   grep -q '^hvdrun: error: elastic training (--min-np, --host-discovery-script) runs in Gloo mode' \
     "$WORK/out"; then
  pass "elastic with --mpi"
else
  fail "elastic with --mpi" "exit $STATUS"
fi

# -- tuning knobs ---------------------------------------------------------------
run env HOROVOD_CCL_CACHE=1 HOROVOD_BATCH_D2D_MEMCOPIES=1 "$HVDRUN" -np 2 --gloo \
  --torus-allreduce --hierarchical-allgather --num-nccl-streams 2 --mpi-threads-disable \
  --autotune-gaussian-process-noise 0.5 "$WORKER" --iters 2
knobs=$(grep -c 'is accepted and has no effect: ' "$WORK/out")
from_rank0=$(grep -c '\[horovodcpp 0\] .*WARNING: HOROVOD[A-Z_]*=[^ ]* is accepted and has no effect: ' "$WORK/out")
if [ "$STATUS" -eq 0 ] && [ "$knobs" -eq 6 ] && [ "$from_rank0" -eq 6 ] &&
   grep -q 'HOROVODCPP_TORUS_ALLREDUCE=1 is accepted and has no effect: there is no 2D torus' "$WORK/out" &&
   grep -q 'HOROVOD_CCL_CACHE=1 is accepted' "$WORK/out" &&
   ! grep -q 'BATCH_D2D_MEMCOPIES' "$WORK/out" &&
   [ "$(grep -c 'result 3 ok' "$WORK/out")" -eq 2 ]; then
  pass "tuning knobs"
else
  fail "tuning knobs" "exit $STATUS; $knobs knob lines, $from_rank0 from rank 0 (expected 6 and 6)"
fi

# -- affinity -------------------------------------------------------------------
cpus=($(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status | tr ',' '\n' |
        while IFS=- read -r lo hi; do seq "$lo" "${hi:-$lo}"; done))
first=${cpus[0]}
last=${cpus[${#cpus[@]}-1]}
run "$HVDRUN" -np 2 --gloo --thread-affinity "$last,$first" "$WORKER" --iters 1
if [ "$STATUS" -eq 0 ] && grep -q "rank 0 coordinator CPUs $last\$" "$WORK/out" &&
   grep -q "rank 1 coordinator CPUs $first\$" "$WORK/out"; then
  pass "affinity"
else
  fail "affinity" "exit $STATUS; expected rank 0 on CPU $last, rank 1 on CPU $first"
fi
run "$HVDRUN" -np 2 --gloo --thread-affinity "$first" "$WORKER" --iters 1
if [ "$STATUS" -ne 0 ] && [ "$(grep -c "names 1 CPU(s) for the 2 ranks of this host" "$WORK/out")" -ge 2 ]; then
  pass "affinity too short"
else
  fail "affinity too short" "exit $STATUS; expected the error on both ranks"
fi

# -- output ---------------------------------------------------------------------
pieces='printf "epoch 1"; sleep 0.2; printf " acc=0.9"; sleep 0.2; printf "\n"'
run "$HVDRUN" -np 2 --gloo sh -c "$pieces"
if [ "$STATUS" -eq 0 ] && [ "$(grep -cx '\[[01]\]<stdout>: epoch 1 acc=0.9' "$WORK/out")" -eq 2 ]; then
  pass "output in pieces (Gloo mode)"
else
  fail "output in pieces (Gloo mode)" "exit $STATUS"
fi
if command -v mpirun >/dev/null; then
  run "$HVDRUN" -np 2 --mpi sh -c "$pieces"
  if [ "$STATUS" -eq 0 ] && [ "$(grep -cx '\[1,[01]\]<stdout>:epoch 1 acc=0.9' "$WORK/out")" -eq 2 ] &&
     ! grep -q '.\[1,[01]\]<' "$WORK/out"; then
    pass "output in pieces (MPI mode)"
  else
    fail "output in pieces (MPI mode)" "exit $STATUS; expected two whole lines, each tag first"
  fi
fi
run "$HVDRUN" -np 2 --gloo --prefix-output-with-timestamp sh -c 'echo hi'
stamp='[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} [0-9]{4}'
if [ "$STATUS" -eq 0 ] && [ "$(grep -Ecx "$stamp\[[01]\]<stdout>: hi" "$WORK/out")" -eq 2 ]; then
  pass "output timestamps"
else
  fail "output timestamps" "exit $STATUS"
fi

summary
