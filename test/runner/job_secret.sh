#!/usr/bin/env bash
# A job's rendezvous store answers only to the job, end to end: while a
# 2-rank job runs, another process (store_stranger.py, which has no secret)
# tries the store that hvdrun publishes to the ranks:
#   gloo      Gloo mode: every attempt is closed after the challenge, hvdrun
#             logs the refusals with the peer's address, the job's results
#             are right; the job's secret is on no process's command line,
#             and with it (read from a rank's environment) the same store
#             serves the stranger's request
#   mpi       the same in MPI mode, where the store takes the ranks' failure
#             reports (skipped without mpirun)
#   elastic   the same against an elastic job's store (--min-np), which the
#             elastic driver and the workers share
#
# usage: job_secret.sh HVDRUN FAULT_WORKER PYTHON [--mpi]
# Prints one line per case and "N passed, M failed"; exits 1 if any failed.
set -u
HVDRUN=$(readlink -f "${1:?usage: job_secret.sh HVDRUN FAULT_WORKER PYTHON [--mpi]}")
WORKER=$(readlink -f "${2:?usage: job_secret.sh HVDRUN FAULT_WORKER PYTHON [--mpi]}")
PYTHON=${3:?usage: job_secret.sh HVDRUN FAULT_WORKER PYTHON [--mpi]}
WITH_MPI=${4:-}
HERE=$(dirname "$(readlink -f "$0")")
WORK=$(mktemp -d /tmp/hvdrun_secret.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
. "$HERE/report.sh"

# The store's host:port as hvdrun --verbose prints it (Gloo modes) or as the ranks
# get it (MPI mode), once the ranks run.
store_address() {  # log pid-of-a-rank
  local address
  address=$(grep -o 'rendezvous at [0-9.]*:[0-9]*' "$1" | head -1 | cut -d' ' -f3)
  if [ -z "$address" ] && [ -n "$2" ]; then
    address=$(tr '\0' '\n' <"/proc/$2/environ" | sed -n 's/^HOROVODCPP_HVDRUN_STORE=//p')
  fi
  echo "$address"
}

# case NAME HVDRUN-ARGS...: runs the job in the background, attacks its
# store, and checks the job, the log and the command lines.
attack() {
  local name=$1
  shift
  local log="$WORK/$name.log" stranger="$WORK/$name.stranger"
  timeout 120 "$HVDRUN" --verbose "$@" "$WORKER" --iters 300 --sleep-ms 20 --tag "$WORK" >"$log" 2>&1 &
  local job=$!
  local pid="" address="" secret=""
  for _ in $(seq 1 300); do  # the ranks' pids, printed once they run
    pid=$(sed -n 's/.*fault_worker rank 1 pid \([0-9]*\).*/\1/p' "$log" | head -1)
    [ -n "$pid" ] && break
    sleep 0.1
  done
  [ -n "$pid" ] && secret=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null |
    sed -n 's/^HOROVODCPP_JOB_SECRET=//p')
  address=$(store_address "$log" "$pid")
  local on_command_line=0
  if [ -n "$secret" ]; then
    for f in /proc/[0-9]*/cmdline; do
      tr '\0' ' ' <"$f" 2>/dev/null | grep -qF "$secret" && on_command_line=1
    done
  fi
  {
    "$PYTHON" "$HERE/store_stranger.py" "$address" &&
      "$PYTHON" "$HERE/store_stranger.py" "$address" "$secret"
  } >"$stranger" 2>&1
  local stranger_status=$?
  wait "$job"
  local status=$?
  cat "$stranger" >>"$log"
  local why=""
  if [ -z "$pid" ] || [ -z "$address" ] || [ -z "$secret" ]; then
    why="no rank pid ($pid), store address ($address) or secret in the rank's environment"
  elif [ "$stranger_status" -ne 0 ]; then
    why="the stranger was not refused everywhere, or the job's secret was not served"
  elif [ "$status" -ne 0 ]; then
    why="the job failed (exit $status)"
  elif [ "$(grep -c 'result 3 ok' "$log")" -ne 2 ]; then
    why="not every rank reported the right result"
  elif ! grep -q 'rendezvous store: refused 127\.0\.0\.1:[0-9]*: ' "$log"; then
    why="hvdrun did not log a refusal with the peer's address"
  elif [ "$on_command_line" -ne 0 ] || grep -qF "$secret" <(grep -v '^ok\|FAILED' "$log"); then
    why="the job's secret is on a command line or in the output"
  fi
  report "$name" "$why" "$log"
}

# The cases side by side: each job mostly sleeps between its steps.
cases=("attack gloo -np 2 --gloo" "attack elastic -np 2 --min-np 2")
if [ "$WITH_MPI" = "--mpi" ]; then
  cases+=("attack mpi -np 2 --mpi")
else
  echo "SKIP mpi (built without MPI)"
fi
side_by_side "$WORK" "${cases[@]}"
summary
