#!/usr/bin/env bash
# hvdrun's fault handling, end to end, in MPI and Gloo mode:
#   exit      a rank exits 7 mid-run: hvdrun exits non-zero within 10 s and
#             its output names the failed rank
#   sigkill   a rank SIGKILLs itself with a collective in flight: non-zero
#             within 10 s
#   sigint    hvdrun gets SIGINT while the ranks run: non-zero within 10 s
#   unreachable  (Gloo) a listed host never answers: hvdrun gives up after
#             --start-timeout with a line naming the host
#   shm survivors  (Gloo transport, ranks started without hvdrun, so that
#             nobody tears them down) rank 2 is SIGKILLed while the ranks
#             are inside a 64 MiB allreduce on the shared-memory path: the
#             survivors fail by themselves, naming rank 2, within 10 s (the
#             roll call of a kill that lands in the negotiation takes 2 s)
#   staged survivors  (Gloo, without hvdrun) the same across two hosts of
#             two ranks (two-level allreduce): a SIGKILLed rank makes the
#             three others fail within 10 s; again with survivors that stay
#             alive after their error
#   LOOP stop / LOOP kill  a 3-rank training loop runs under hvdrun
#             --peer-timeout 4 (LOOP: cpp, fault_worker submitting 4
#             tensors of 4 MB a step; torch, fault_train.py with horovodcpp.torch's
#             DistributedOptimizer); the script SIGSTOPs or SIGKILLs rank 1
#             from outside, as a user would. hvdrun must exit non-zero within
#             STOP_LIMIT / KILL_LIMIT seconds of the signal with a line
#             naming rank 1, and both survivors name rank 1 (but after SIGKILL
#             under MPI: mpirun kills them at once). The PASS line gives
#             the time from the signal to hvdrun's exit.
#   busy      rank 1 of the C++ loop sleeps 7 s in one step (longer than the
#             peer timeout, as a checkpoint would): the job must succeed.
# The modes' cases, and the busy cases, run side by side (they mostly wait).
# After each case no process of the job may remain (found by a unique
# --tag), and no shared-memory segment of horovodcpp (/dev/shm/hvdcpp-*)
# that was not there before.
#
# usage: fault_tests.sh HVDRUN FAULT_WORKER [MODE...] [--shm] [--torch PYTHON SCRIPT]
# (default modes: --mpi --gloo)
# --shm: the build has the shared-memory path: also run "shm survivors"
# and "staged survivors" (with --gloo).
# --torch: run the torch loop too, SCRIPT (fault_train.py) with PYTHON
# (skipped, with a note, when that Python cannot import horovodcpp.torch).
# Prints one line per case and "N passed, M failed"; exits 1 if any failed.
set -u

HVDRUN=$(readlink -f "${1:?usage: fault_tests.sh HVDRUN FAULT_WORKER [MODE...]}")
WORKER=$(readlink -f "${2:?usage: fault_tests.sh HVDRUN FAULT_WORKER [MODE...]}")
shift 2
MODES=()
SHM=0
PYTHON=""
TRAIN_SCRIPT=""
while [ $# -gt 0 ]; do
  case $1 in
    --shm) SHM=1 ;;
    --torch) PYTHON=$2; TRAIN_SCRIPT=$(readlink -f "$3"); shift 2 ;;
    *) MODES+=("$1") ;;
  esac
  shift
done
[ ${#MODES[@]} -eq 0 ] && MODES=(--mpi --gloo)
LOOPS=(cpp)
if [ -n "$PYTHON" ]; then
  if "$PYTHON" -c "import torch, horovodcpp.torch" 2>/dev/null; then
    LOOPS+=(torch)
  else
    echo "note: $PYTHON cannot import torch and horovodcpp.torch: the torch loop is not run"
  fi
fi

NP=3
LIMIT=10            # seconds hvdrun may take to fail
SAFETY=60           # hard stop for a hung hvdrun
PEER_TIMEOUT=4      # hvdrun --peer-timeout of the training loops
# From the signal to hvdrun's exit. SIGSTOP: the peer timeout (4 s), the
# roll call (2 s), hvdrun's failure grace (over a second after every rank
# has reported or been named, as the stopped one is), the flight
# recorder's dump grace (0.5 s) and the exit: 7-8 s. The limit leaves room
# for a loaded machine but not for a second peer timeout (11 s and more),
# as when a rank that lost a peer in a transfer went on to negotiate the
# next collective with it. The C++ loop's tensors are large enough (4 x 4
# MB a step) that the signal lands in a transfer, not in a negotiation.
# SIGKILL: the roll call and a second, or mpirun at once.
STOP_LIMIT=10
KILL_LIMIT=10
WORKER_COMM=$(basename "$WORKER" | cut -c1-15)

WORK=$(mktemp -d /tmp/hvdrun_fault.XXXXXX)
. "$(dirname "$(readlink -f "$0")")/report.sh"
# Every job's tag starts with this (also in subshells: $$ is this script's).
TAG_PREFIX="hvdft-$$-"

# Pids of processes whose command line carries the tag.
job_pids() { pgrep -f -- "$1" || true; }

# Only processes this script started: those carrying one of its tags.
cleanup() {
  local pid
  for pid in $(job_pids "$TAG_PREFIX"); do kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
elapsed() { echo "$(now) - $1" | bc; }

# Fails the case if any process of the job is still there.
leftovers() {
  local pids
  pids=$(job_pids "$1" | tr '\n' ' ')
  [ -z "$pids" ] && return 1
  echo "processes left: $pids"; ps -o pid,ppid,pgid,stat,args -p "${pids// /,}" | tail -n +2 >&2
  return 0
}

# horovodcpp's shared-memory segments; the ranks remove the names once all
# have mapped them, so none may outlive a case, however it ended.
shm_segments() { ls /dev/shm 2>/dev/null | grep '^hvdcpp-' | sort || true; }
# (Jobs running beside this script create segments too, each for the
# moments until its ranks have mapped it: only one still there 2 s later
# counts.)
new_segments() {  # before-list
  local left
  left=$(comm -13 <(echo "$1") <(shm_segments) | tr '\n' ' ')
  [ -z "${left// /}" ] && return 1
  sleep 2
  left=$(comm -12 <(echo "$left" | tr ' ' '\n' | sort) <(shm_segments) | tr '\n' ' ')
  [ -z "${left// /}" ] && return 1
  echo "left in /dev/shm: $left"
  return 0
}

# Waits until NP workers run (up to 30 s).
wait_for_workers() {
  local tag=$1 i pid n
  for i in $(seq 300); do
    n=0
    for pid in $(job_pids "$tag"); do
      [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = "$WORKER_COMM" ] && n=$((n + 1))
    done
    [ "$n" -ge "$NP" ] && return 0
    sleep 0.1
  done
  return 1
}

run_case() {  # mode case
  local mode=$1 case=$2 tag="$TAG_PREFIX$BASHPID-$RANDOM" name="${1#--} $2"
  local log="$WORK/${mode#--}-$case.log" start rc took pid why="" segments
  segments=$(shm_segments)
  local args=(-np "$NP" "$mode" "$WORKER" --tag "$tag")
  case $case in
    exit)
      start=$(now)
      timeout -s KILL "$SAFETY" "$HVDRUN" "${args[@]}" --iters 100000 --sleep-ms 10 \
        --exit-rank 1 --exit-at 20 --exit-code 7 >"$log" 2>&1
      rc=$?
      took=$(elapsed "$start")
      ;;
    sigkill)
      start=$(now)
      timeout -s KILL "$SAFETY" "$HVDRUN" "${args[@]}" --iters 100000 --sleep-ms 10 \
        --kill-rank 2 --kill-at 20 >"$log" 2>&1
      rc=$?
      took=$(elapsed "$start")
      ;;
    sigint)
      timeout -s KILL "$SAFETY" "$HVDRUN" "${args[@]}" --iters 10000000 --sleep-ms 5 \
        >"$log" 2>&1 &
      pid=$!
      if ! wait_for_workers "$tag"; then why="the workers did not start; "; fi
      sleep 1
      # `timeout` forwards the signal to hvdrun.
      start=$(now)
      kill -INT "$pid"
      wait "$pid"
      rc=$?
      took=$(elapsed "$start")
      ;;
  esac
  if [ "$rc" -eq 0 ]; then why+="hvdrun exited 0; "; fi
  if [ "$(echo "$took >= $SAFETY" | bc)" = 1 ]; then why+="hvdrun hung (killed after ${SAFETY}s); "; fi
  if [ "$(echo "$took > $LIMIT" | bc)" = 1 ]; then why+="took ${took}s (limit ${LIMIT}s); "; fi
  if [ "$case" = exit ]; then
    # hvdrun's own line (Gloo) or mpirun's "Process name: [[job,1],1]".
    if ! grep -qE 'rank 1 \(.*exited with code 7|Process name: \[\[[0-9]+,[0-9]+\],1\]' "$log"; then
      why+="output does not name rank 1; "
    fi
  fi
  local left
  if left=$(leftovers "$tag"); then why+="$left; "; fi
  if left=$(new_segments "$segments"); then why+="$left; "; fi
  if [ -z "$why" ]; then
    report_pass "$name" "exit code $rc after $(printf '%.1f' "$took")s, no process or segment left"
  else
    report "$name" "$why(exit code $rc)" "$log"
  fi
}

# A remote host that never answers: the "remote shell" is a script that
# hangs, so no traffic leaves this machine.
unreachable_host() {
  local tag="$TAG_PREFIX$BASHPID-$RANDOM" log="$WORK/unreachable.log" start rc took why=""
  printf '#!/bin/sh\nexec sleep 100\n' >"$WORK/hanging_shell"
  chmod +x "$WORK/hanging_shell"
  start=$(now)
  timeout -s KILL "$SAFETY" "$HVDRUN" -np 2 --gloo -H localhost:1,unreachable-host.invalid:1 \
    --start-timeout 2 --remote-shell "$WORK/hanging_shell {host}" "$WORKER" --tag "$tag" \
    >"$log" 2>&1
  rc=$?
  took=$(elapsed "$start")
  if [ "$rc" -eq 0 ]; then why+="hvdrun exited 0; "; fi
  if [ "$(echo "$took > $LIMIT" | bc)" = 1 ]; then why+="took ${took}s (limit ${LIMIT}s); "; fi
  grep -q "unreachable-host.invalid did not answer within 2" "$log" || why+="no line naming the host; "
  pkill -f -- "$WORK/hanging_shell" 2>/dev/null
  local left
  if left=$(leftovers "$tag"); then why+="$left; "; fi
  if [ -z "$why" ]; then
    report_pass "gloo unreachable" "exit code $rc after $(printf '%.1f' "$took")s"
  else
    report "gloo unreachable" "$why(exit code $rc)" "$log"
  fi
}

# Starts NP ranks of the worker without hvdrun (Gloo through a file store),
# rank R with the environment `PLACE R` prints, and SIGKILLs rank KILLED
# inside a 64 MiB allreduce (KILL_AFTER_MS after submitting it, default
# 20). Every other rank must fail by itself within LIMIT seconds of the
# kill and exit 3, leaving no process and no segment.
# With LINGER_MS, the survivors stay alive that long after their error (the
# others must not rely on their exit), and the time of failure is the one
# each prints. Sets WHY (what went wrong, empty if nothing) and TOOK
# (seconds from the kill to the last survivor's failure). Logs:
# $WORK/NAME-R.log, all in $WORK/NAME.log.
run_survivors() {  # name np killed place [linger_ms [kill_after_ms]]
  local name=$1 np=$2 killed_rank=$3 place=$4 linger=${5:-0} after=${6:-20}
  local tag="$TAG_PREFIX$BASHPID-$RANDOM" store r rc
  local pids=() segments killed left
  store=$(mktemp -d "$WORK/store.XXXXXX")
  segments=$(shm_segments)
  WHY=""
  for r in $(seq 0 $((np - 1))); do
    # shellcheck disable=SC2046  # one word per variable
    env $($place "$r") HOROVODCPP_GLOO_FILE_STORE="$store" HOROVODCPP_CPU_OPERATIONS=gloo \
      HOROVODCPP_LOG_LEVEL=info timeout -s KILL "$SAFETY" "$WORKER" --iters 100000 \
      --count 16777216 --kill-rank "$killed_rank" --kill-at 3 --kill-after-ms "$after" \
      --linger-ms "$linger" --tag "$tag" >"$WORK/$name-$r.log" 2>&1 &
    pids+=($!)
  done
  for r in $(seq 0 $((np - 1))); do
    [ "$r" -eq "$killed_rank" ] && continue
    wait "${pids[$r]}"
    rc=$?
    [ "$rc" -eq 3 ] || WHY+="rank $r exited with $rc, not 3 (an error); "
  done
  TOOK=$(now)
  wait "${pids[$killed_rank]}" 2>/dev/null
  cat "$WORK/$name"-*.log >"$WORK/$name.log"
  killed=$(sed -n 's/.*raises SIGKILL at iteration [0-9]* at \([0-9.]*\).*/\1/p' "$WORK/$name.log")
  if [ "$linger" -gt 0 ]; then
    TOOK=$(sed -n 's/.*fault_worker rank [0-9]* failed at \([0-9.]*\).*/\1/p' "$WORK/$name.log" |
      sort -n | tail -n 1)
    [ -n "$TOOK" ] || TOOK=$(now)
  fi
  if [ -z "$killed" ]; then
    WHY+="rank $killed_rank never raised SIGKILL; "
  else
    TOOK=$(echo "$TOOK - $killed" | bc)
    if [ "$(echo "$TOOK > $LIMIT" | bc)" = 1 ]; then WHY+="the survivors took ${TOOK}s (limit ${LIMIT}s); "; fi
  fi
  if left=$(leftovers "$tag"); then WHY+="$left; "; fi
  if left=$(new_segments "$segments"); then WHY+="$left; "; fi
}

# One host of three ranks (shared memory).
one_host_place() {
  echo "HOROVODCPP_RANK=$1 HOROVODCPP_SIZE=3 HOROVODCPP_LOCAL_RANK=$1 HOROVODCPP_LOCAL_SIZE=3" \
    "HOROVODCPP_CROSS_RANK=0 HOROVODCPP_CROSS_SIZE=1"
}

shm_survivors() {
  local r
  run_survivors shm-survivors 3 2 one_host_place
  # In shared memory it "died"; a kill that lands in the negotiation
  # instead makes the transport's roll call name it.
  for r in 0 1; do
    grep -qE "rank 2 (\(pid [0-9]+\) died|stopped answering)" "$WORK/shm-survivors-$r.log" ||
      WHY+="rank $r's error does not name rank 2; "
  done
  if [ -z "$WHY" ]; then
    report_pass "shm survivors" "both failed $(printf '%.1f' "$TOOK")s after the kill: $(grep -m1 -o 'fault_worker: .*' "$WORK/shm-survivors-0.log" | cut -c15-)"
  else
    report "shm survivors" "$WHY" "$WORK/shm-survivors.log"
  fi
}

# Two hosts of two ranks, 127.0.0.1 and 127.0.0.2 (two-level allreduce).
two_host_place() {
  echo "HOROVODCPP_RANK=$1 HOROVODCPP_SIZE=4 HOROVODCPP_LOCAL_RANK=$(($1 % 2))" \
    "HOROVODCPP_LOCAL_SIZE=2 HOROVODCPP_CROSS_RANK=$(($1 / 2)) HOROVODCPP_CROSS_SIZE=2" \
    "HOROVODCPP_HOSTNAME=127.0.0.$(($1 / 2 + 1))"
}

# Rank 1 dies: its host peer (shared memory), its cross-host peer (Gloo) and
# the last rank (told through its host's segment, or by its Gloo peer) all
# fail by themselves.
# (lingering: the survivors stay alive 12 s after their error, so the
# failure must spread through the closed connections and the segment.)
staged_survivors() {  # [linger_ms]
  local errors name=staged-survivors case="staged survivors"
  if [ "${1:-0}" -gt 0 ]; then name=staged-lingering case="staged survivors, lingering"; fi
  local attempt
  for attempt in 1 2 3; do
    # A loaded machine negotiates slower: later kills land in the allreduce.
    run_survivors "$name" 4 1 two_host_place "${1:-0}" $((20 * attempt))
    # The kill must land inside the allreduce (rank 0 then fails in shared
    # memory); one that lands in negotiation tests the flat transport,
    # whose survivors wait for a lingering peer up to the Gloo timeout.
    grep -q "fault_worker: shm " "$WORK/$name-0.log" && break
    echo "note: $case: the kill landed outside the allreduce (attempt $attempt)"
  done
  grep -q "shm+gloo: 2 hosts" "$WORK/$name.log" || WHY+="the two-level backend was not used; "
  grep -q "rank 1 .*died" "$WORK/$name-0.log" ||
    WHY+="rank 0's error does not say that its host peer rank 1 died; "
  grep -q "fault_worker: .*Gloo .*rank 1 stopped answering" "$WORK/$name-3.log" ||
    WHY+="rank 3's error does not name its Gloo peer rank 1; "
  grep -q "fault_worker: .*\(gave up\|died\|stopped answering\)" "$WORK/$name-2.log" ||
    WHY+="rank 2's error does not say why; "
  if [ -z "$WHY" ]; then
    errors=$(grep -h -m1 -o 'fault_worker: .*' "$WORK/$name"-[023].log | cut -c1-160 |
      sed 's/^/      /')
    report_pass "$case" "all three failed $(printf '%.1f' "$TOOK")s after the kill:
$errors"
  else
    report "$case" "$WHY" "$WORK/$name.log"
  fi
}

# Starts a 3-rank training loop under hvdrun in the background (sets
# HVDRUN_PID) and waits until it runs: rank 0 past step 20 and rank 1's pid
# printed (sets VICTIM; empty if the loop did not get there in 60 s).
start_loop() {  # mode loop tag log [worker flags...]
  local mode=$1 loop=$2 tag=$3 log=$4 i
  shift 4
  local command=("$WORKER" --iters 100000000 --sleep-ms 1 --tensors 4 --count 1000000 "$@")
  [ "$loop" = torch ] && command=("$PYTHON" "$TRAIN_SCRIPT")
  # Python ranks importing torch on a loaded machine take a while to start.
  timeout -s KILL $((2 * SAFETY)) "$HVDRUN" -np "$NP" "$mode" --peer-timeout "$PEER_TIMEOUT" \
    "${command[@]}" --tag "$tag" >"$log" 2>&1 &
  HVDRUN_PID=$!
  VICTIM=""
  for i in $(seq $((10 * SAFETY))); do
    VICTIM=$(grep -o "fault_[a-z]* rank 1 pid [0-9]*" "$log" | head -n 1 | awk '{print $NF}')
    [ -n "$VICTIM" ] && grep -qE "fault_[a-z]* step ([2-9][0-9]|[0-9]{3,})$" "$log" && return
    kill -0 "$HVDRUN_PID" 2>/dev/null || break
    sleep 0.1
  done
  VICTIM=""
}

# A rank of a training loop stopped or killed from outside.
train_case() {  # mode loop stop|kill
  local mode=$1 loop=$2 fault=$3 tag="$TAG_PREFIX$BASHPID-$RANDOM" name="${1#--} $2 $3"
  local log="$WORK/${mode#--}-$loop-$fault.log" start rc took why="" segments limit r left
  segments=$(shm_segments)
  start_loop "$mode" "$loop" "$tag" "$log"
  if [ -z "$VICTIM" ]; then
    for left in $(job_pids "$tag"); do kill -KILL "$left" 2>/dev/null; done
    wait "$HVDRUN_PID"
    report "$name" "the loop did not start: $(grep -o 'fault_[a-z]* rank [0-9] pid [0-9]*' "$log" |
      tr '\n' ' ')$(grep -c 'step' "$log") steps" "$log"
    return
  fi
  start=$(now)
  if [ "$fault" = stop ]; then kill -STOP "$VICTIM"; else kill -KILL "$VICTIM"; fi
  wait "$HVDRUN_PID"
  rc=$?
  took=$(elapsed "$start")
  limit=$KILL_LIMIT
  [ "$fault" = stop ] && limit=$STOP_LIMIT
  if [ "$rc" -eq 0 ]; then why+="hvdrun exited 0; "; fi
  if [ "$(echo "$took > $limit" | bc)" = 1 ]; then why+="took ${took}s (limit ${limit}s); "; fi
  if [ "$fault" = stop ]; then
    grep -q "^hvdrun: rank 1 stopped answering" "$log" || why+="hvdrun's line does not name rank 1; "
  else
    grep -qE "^hvdrun: rank 1 (.*killed by signal 9|stopped answering)" "$log" ||
      why+="hvdrun's line does not name rank 1; "
  fi
  # Under MPI, mpirun kills the survivors the moment a rank dies, before
  # they can say anything; everywhere else each survivor names rank 1.
  if [ "$fault" = stop ] || [ "$mode" != --mpi ]; then
    for r in 0 2; do
      # Gloo labels "[0]<stderr>: ", Open MPI "[1,0]<stderr>:".
      grep -qE "^\[(1,)?$r\]<std(err|out)>:.*rank 1 (stopped answering|\(pid [0-9]+\) died)" \
        "$log" || why+="survivor rank $r does not name rank 1; "
    done
  fi
  if left=$(leftovers "$tag"); then why+="$left; "; fi
  if left=$(new_segments "$segments"); then why+="$left; "; fi
  if [ -z "$why" ]; then
    report_pass "$name" "hvdrun exited $(printf '%.1f' "$took")s after SIG${fault^^}, exit code $rc: $(grep -m1 '^hvdrun: ' "$log" | cut -c1-150)"
  else
    report "$name" "$why(exit code $rc)" "$log"
  fi
}

# Rank 1 busy in its own code for longer than the peer timeout (the others
# wait for its tensors, not inside a collective): the job goes on.
busy_case() {  # mode
  local mode=$1 tag="$TAG_PREFIX$BASHPID-$RANDOM" name="${1#--} busy" log="$WORK/${1#--}-busy.log" rc why=""
  timeout -s KILL "$SAFETY" "$HVDRUN" -np "$NP" "$mode" --peer-timeout "$PEER_TIMEOUT" "$WORKER" \
    --iters 40 --sleep-ms 10 --tensors 4 --busy-rank 1 --busy-at 20 --busy-ms 7000 \
    --tag "$tag" >"$log" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || why+="hvdrun exited $rc; "
  [ "$(grep -c "fault_worker rank [0-9] of 3 host .* ok" "$log")" -eq 3 ] || why+="not every rank finished; "
  if [ -z "$why" ]; then
    report_pass "$name" "rank 1 busy 7 s with --peer-timeout $PEER_TIMEOUT: the job succeeded"
  else
    report "$name" "$why" "$log"
  fi
}

timed_cases() {  # mode: its cases with a time limit under hvdrun, one after the other
  local mode=$1 loop case
  for case in exit sigkill sigint; do
    run_case "$mode" "$case"
  done
  for loop in "${LOOPS[@]}"; do
    train_case "$mode" "$loop" stop
    train_case "$mode" "$loop" kill
  done
}

# Gloo's: a host that never answers, and ranks without hvdrun.
gloo_cases() {
  unreachable_host
  [ "$SHM" = 1 ] && shm_survivors
  [ "$SHM" = 1 ] && staged_survivors
  [ "$SHM" = 1 ] && staged_survivors 12000
}

busy_cases() {
  local mode
  for mode in "${MODES[@]}"; do busy_case "$mode"; done
}

# Each mode's timed cases beside the other's (the cases mostly wait out
# timeouts), and Gloo's own and the busy cases (a rank asleep for 7 s, the
# others waiting) beside them.
commands=()
for mode in "${MODES[@]}"; do
  commands+=("timed_cases $mode")
  [ "$mode" = --gloo ] && commands+=(gloo_cases)
done
side_by_side "$WORK" "${commands[@]}" busy_cases
summary
