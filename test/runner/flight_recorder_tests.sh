#!/usr/bin/env bash
# The flight recorder end to end, in each mode given (side by side): 3-rank jobs
# (flight_recorder_job.py) that go wrong, and the analysis hvdrun prints.
#   skip    rank 1 never submits grad.fc3 (the stall shutdown, 3 s): the
#           others wait in it, rank 1 stopped submitting after grad.fc2; the
#           job ends without waiting for rank 1 (asleep in its own code)
#   order   rank 0 reduces a then b, the others b then a: each waits for
#           the other, "different orders"
#   stop    rank 1 SIGSTOPped (--peer-timeout 3): the others wait in
#           grad.fc1; no dump from rank 1
#   kill    rank 1 SIGKILLed: the same
#   usr1    SIGUSR1 to every rank of a healthy job: every rank dumps, the job
#           succeeds, and `hvdrun --analyze DIR` says no rank waited
# usage: flight_recorder_tests.sh HVDRUN PYTHON MODE...
set -u
HVDRUN=$(readlink -f "$1")
PYTHON=$2
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
JOB="$HERE/flight_recorder_job.py"
. "$HERE/report.sh"
WORK=$(mktemp -d /tmp/hvd_flight.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS=3 HOROVODCPP_STALL_CHECK_TIME_SECONDS=1

run_job() {  # log mode scenario [signal]: the job; SIGNAL goes to rank 1 once it runs
  local log=$1 mode=$2 scenario=$3 sig=${4:-} pid
  (cd "$WORK" && timeout -s KILL 90 "$HVDRUN" -np 3 --"$mode" --peer-timeout 3 "$PYTHON" "$JOB" \
    "$scenario" >"$log" 2>&1) &
  local job=$!
  if [ -n "$sig" ]; then
    for _ in $(seq 1 150); do
      pid=$(sed -n 's/.*flight_recorder_job rank 1 pid \([0-9]*\).*/\1/p' "$log" | head -n1)
      [ -n "$pid" ] && break
      sleep 0.2
    done
    sleep 1
    [ -n "$pid" ] && kill -"$sig" "$pid"
  fi
  wait "$job"
}

expect() {  # name log why pattern...: every extended regex among hvdrun's lines
  local name=$1 log=$2 why=$3 pattern
  shift 3
  for pattern in "$@"; do
    grep -E '^hvdrun:' "$log" | grep -qE -- "$pattern" || why+="no line like '$pattern'; "
  done
  report "$name" "$why" "$log"
}

checks() {  # mode dir: the mode's jobs, run in DIR
  local mode=$1 WORK=$2 log fault rc dir why analysis r start took
  log="$WORK/skip-$mode.log"
  start=$SECONDS
  run_job "$log" "$mode" skip
  took=$((SECONDS - start))
  why=""
  # (Rank 1 sleeps 60 s: a job that waits for it to wake ends too late.)
  [ "$took" -lt 30 ] || why="the job took $took s: it waited for the sleeping rank 1; "
  expect "$mode skip: the ranks that wait, and the rank that stopped submitting" "$log" "$why" \
    "flight recorder \(hvdrun --analyze " \
    "last collective every rank completed: allreduce\.grad\.fc2" \
    "ranks 0, 2 wait in allreduce\.grad\.fc3 .*never submitted by rank 1: rank 1 stopped submitting after allreduce\.grad\.fc2"

  log="$WORK/order-$mode.log"
  run_job "$log" "$mode" order
  expect "$mode order: each waits for the other" "$log" "" \
    "rank 0 in allreduce\.a and ranks 1-2 in allreduce\.b each wait for the other: collectives submitted in different orders"

  for fault in STOP KILL; do
    log="$WORK/$fault-$mode.log"
    run_job "$log" "$mode" loop "$fault"
    expect "$mode $fault: the survivors wait in grad.fc1, no dump from rank 1" "$log" "" \
      "ranks 0, 2 wait in allreduce\.grad\.fc1" "no dump from rank 1 "
  done

  log="$WORK/usr1-$mode.log"
  rm -rf "$WORK"/hvdrun-flight-recorder.*
  run_job "$log" "$mode" usr1
  rc=$?
  dir=$(ls -d "$WORK"/hvdrun-flight-recorder.* 2>/dev/null | head -n1)
  why=""
  [ "$rc" -ne 0 ] && why+="the job exited $rc; "
  for r in 0 1 2; do
    [ -f "$dir/horovodcpp-flight-recorder.rank$r.txt" ] || why+="no dump from rank $r; "
  done
  analysis=$("$HVDRUN" --analyze "$dir" 2>&1)
  for r in 0 1 2; do
    grep -q "^rank $r waited in no collective (its last: " <<<"$analysis" ||
      why+="the analysis does not say rank $r waited in nothing; "
  done
  echo "$analysis" >>"$log"
  report "$mode usr1: every rank dumps a healthy job, hvdrun --analyze reads them" "$why" "$log"
}

# The modes side by side: the jobs mostly wait (stall and peer timeouts).
groups=()
for mode in "$@"; do
  mkdir "$WORK/$mode"
  groups+=("checks $mode $WORK/$mode")
done
side_by_side "$WORK" "${groups[@]}"
summary
