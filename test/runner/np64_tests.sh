#!/usr/bin/env bash
# 64 ranks on this machine (oversubscribed), in Gloo and MPI mode:
#   train     hvdrun -np 64 mnist_mlp --epochs 1: exits 0 with identical
#             parameters on all 64 ranks
#   resources 64 ranks in a loop, hvdrun and each rank started with a soft
#             limit of 100 open descriptors (each raises its own): per rank,
#             once every rank has started,
#             its threads, open descriptors and resident memory (private,
#             and shared-memory slots), and the time from launch to the
#             last rank's start (printed)
#   killed    one of them SIGKILLed: hvdrun exits non-zero within 30 s
#             naming it, and no process or shared-memory segment is left
#
# usage: np64_tests.sh HVDRUN FAULT_WORKER MNIST_MLP [--mpi]
set -u

HVDRUN=$(readlink -f "${1:?usage: np64_tests.sh HVDRUN FAULT_WORKER MNIST_MLP [--mpi]}")
WORKER=$(readlink -f "${2:?usage: np64_tests.sh HVDRUN FAULT_WORKER MNIST_MLP [--mpi]}")
MNIST=$(readlink -f "${3:?usage: np64_tests.sh HVDRUN FAULT_WORKER MNIST_MLP [--mpi]}")
MODES="gloo"
[ "${4:-}" = --mpi ] && MODES="gloo mpi"
NP=64
KILLED=37
TAG="hvdnp64-$$-$RANDOM$RANDOM"
WORK=$(mktemp -d /tmp/hvd_np64.XXXXXX)
trap 'for p in $(pgrep -f -- "$TAG"); do kill -KILL "$p" 2>/dev/null; done; rm -rf "$WORK"' EXIT

. "$(dirname "$0")/report.sh"

# "min-max" (or "n") of the numbers on stdin, one per line; median with -m.
range() {
  sort -n | awk -v median="${1:-}" '{ v[NR] = $1 } END {
    if (median) print v[int((NR + 1) / 2)]; else if (v[1] == v[NR]) print v[1]; else print v[1] "-" v[NR] }'
}

for mode in $MODES; do
  log="$WORK/train-$mode.log"
  timeout -s KILL 600 "$HVDRUN" -np $NP --$mode "$MNIST" --epochs 1 >"$log" 2>&1
  rc=$?
  why=""
  [ "$rc" -ne 0 ] && why+="hvdrun exited $rc; "
  grep -q "parameters identical on all $NP ranks" "$log" || why+="no identical-parameters line; "
  grep -q "test accuracy=0\.[0-9]*" "$log" || why+="no accuracy line; "
  report "$mode: hvdrun -np $NP mnist_mlp --epochs 1" "$why" "$log"

  log="$WORK/loop-$mode.log"
  start=$(date +%s.%N)
  # hvdrun and every rank start with room for only 100 descriptors (a soft
  # limit below what 64 ranks take): each raises its own.
  timeout -s KILL 600 bash -c 'ulimit -Sn 100 && exec "$@"' sh "$HVDRUN" -np $NP --$mode \
    sh -c 'ulimit -Sn 100 && exec "$0" "$@"' "$WORKER" --iters 100000000 --sleep-ms 20 \
    --tag "$TAG" >"$log" 2>&1 &
  hvdrun_pid=$!
  deadline=$((SECONDS + 300))
  while [ $SECONDS -lt $deadline ] && [ "$(grep -c "fault_worker rank [0-9]* pid" "$log")" -lt $NP ]; do
    sleep 0.2
  done
  started=$(echo "$(date +%s.%N) - $start" | bc)
  pids=$(grep -o "fault_worker rank [0-9]* pid [0-9]*" "$log" | awk '{ print $5 }')
  why=""
  [ "$(echo "$pids" | grep -c .)" -lt $NP ] && why+="only $(echo "$pids" | grep -c .) ranks started; "
  sleep 2  # every rank in its loop
  threads=$(for p in $pids; do awk '/^Threads:/ { print $2 }' "/proc/$p/status"; done | range)
  fds=$(for p in $pids; do ls "/proc/$p/fd" | wc -l; done | range)
  # Private memory, and the shared-memory slots the rank has touched.
  anon=$(for p in $pids; do awk '/^RssAnon:/ { printf "%.1f\n", $2 / 1024 }' "/proc/$p/status"; done | range -m)
  shmem=$(for p in $pids; do awk '/^RssShmem:/ { printf "%.1f\n", $2 / 1024 }' "/proc/$p/status"; done | range -m)
  victim=$(grep -o "fault_worker rank $KILLED pid [0-9]*" "$log" | awk '{ print $5 }')
  killed_at=$(date +%s.%N)
  kill -KILL "$victim" 2>/dev/null
  wait "$hvdrun_pid"
  rc=$?
  took=$(echo "$(date +%s.%N) - $killed_at" | bc)
  [ "$rc" -eq 0 ] && why+="hvdrun exited 0; "
  [ "$(echo "$took > 30" | bc)" = 1 ] && why+="hvdrun took ${took}s after the kill (bound 30 s); "
  grep -qE "hvdrun: .*rank $KILLED\b" "$log" || why+="hvdrun's line does not name rank $KILLED; "
  sleep 1
  left=$(pgrep -f -- "$TAG" | tr '\n' ' ')
  [ -n "$left" ] && why+="processes left: $left; "
  ls /dev/shm/hvdcpp-* >/dev/null 2>&1 && why+="shared memory left: $(ls /dev/shm/hvdcpp-* | head -n 3); "
  report "$mode: $NP ranks started in $(printf '%.1f' "$started")s; per rank $threads threads, $fds descriptors, ${anon} MiB private + ${shmem} MiB shared memory resident (medians); rank $KILLED killed: hvdrun out in $(printf '%.1f' "$took")s, nothing left" "$why" "$log"
done

summary
