#!/usr/bin/env bash
# A two-host Gloo job on one machine: two network namespaces joined by a
# veth pair stand in for two hosts (10.203.0.1 and 10.203.0.2, only inside
# the namespaces). hvdrun runs in the first; it reaches the second through a
# remote shell that maps an address to its namespace (`ip netns exec`).
#   allreduce  -np 4 -H 10.203.0.1:2,10.203.0.2:2: every rank prints the
#              right sum, ranks 2-3 really ran in the second namespace, on
#              the two-level backend (shared memory inside each host)
#   fault      a rank on the second host exits 1: hvdrun fails within 10 s
#              and no process of the job is left in either namespace
#   float16    -np 2, one rank per namespace: allreduces of 8 MiB of float16
#              send at most 0.55x the bytes of the same elements in float32
#              (counted on the veth pair), both summed right
# With --mpi COLLECTIVE_TESTS, the same under hvdrun --mpi (each namespace
# also gets a hostname of its own, a UTS namespace, so that Open MPI sees
# two nodes): the allreduce on shm+mpi, and collective_tests (every dtype
# and op) on 2+2 and 2+1 ranks, asserting shm+mpi and the topology.
#
# The programs run from a copy under /tmp in a folder whose name has a
# space (tmp_copy.sh), as they would from a checkout there.
#
# usage: two_host_netns.sh HVDRUN FAULT_WORKER [--mpi COLLECTIVE_TESTS]
#        (root; needs ip netns)
# Exit 77 (skip) when network namespaces cannot be created here.
set -u

HVDRUN=$(readlink -f "${1:?usage: two_host_netns.sh HVDRUN FAULT_WORKER}")
WORKER=$(readlink -f "${2:?usage: two_host_netns.sh HVDRUN FAULT_WORKER}")
COLLECTIVE_TESTS=""
if [ "${3:-}" = --mpi ]; then
  COLLECTIVE_TESTS=$(readlink -f "${4:?usage: two_host_netns.sh HVDRUN FAULT_WORKER --mpi COLLECTIVE_TESTS}")
fi
TAG="hvdnet-$$-$RANDOM$RANDOM"
WORK=$(mktemp -d /tmp/hvdrun_netns.XXXXXX)

. "$(dirname "$0")/netns_pair.sh"
. "$(dirname "$0")/report.sh"
. "$(dirname "$0")/tmp_copy.sh"
trap 'netns_pair_cleanup; tmp_copy_cleanup' EXIT

tmp_copy_make && tmp_copy_library "$WORKER" || { echo "FAIL: cannot copy to /tmp"; exit 1; }
HVDRUN=$(tmp_copy "$HVDRUN") && WORKER=$(tmp_copy "$WORKER") || exit 1
if [ -n "$COLLECTIVE_TESTS" ]; then COLLECTIVE_TESTS=$(tmp_copy "$COLLECTIVE_TESTS") || exit 1; fi

netns_pair_create
case $? in
  0) ;;
  77) exit 77 ;;
  *) echo "FAIL: cannot set up the namespaces"; exit 1 ;;
esac

# mpirun's agent: AGENT HOST COMMAND...; the namespace's own hostname too.
cat >"$WORK/mpirsh" <<EOF
#!/bin/sh
host=\$1
shift
case "\$host" in
  $ADDR_A) ns=$NS_A ;;
  $ADDR_B) ns=$NS_B ;;
  *) echo "mpirsh: unknown host \$host" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$ns; \$*"
EOF
chmod +x "$WORK/mpirsh"
NETNS_B=$(ip netns exec "$NS_B" readlink /proc/self/ns/net)
NETNS_A=$(ip netns exec "$NS_A" readlink /proc/self/ns/net)

if command -v ping >/dev/null && ! ip netns exec "$NS_A" ping -c1 -W2 "$ADDR_B" >/dev/null 2>&1; then
  echo "note: ping $ADDR_B from $NS_A failed (continuing)"
fi

hvdrun_in_a() {  # log args...
  local log=$1
  shift
  timeout -s KILL 120 ip netns exec "$NS_A" "$HVDRUN" -np 4 --gloo \
    -H "$ADDR_A:2,$ADDR_B:2" --remote-shell "$WORK/rsh {host}" "$@" >"$log" 2>&1
}


# 1. allreduce across both namespaces
log="$WORK/allreduce.log"
HOROVODCPP_LOG_LEVEL=info hvdrun_in_a "$log" "$WORKER" --iters 20 --tag "$TAG"
rc=$?
why=""
[ "$rc" -ne 0 ] && why+="hvdrun exited $rc; "
# Two ranks per namespace: shared memory inside each, Gloo between them.
grep -q "shm+gloo: 2 hosts" "$log" || why+="the two-level backend (shm+gloo) was not used; "
for r in 0 1 2 3; do
  if [ "$r" -lt 2 ]; then host=$ADDR_A netns=$NETNS_A; else host=$ADDR_B netns=$NETNS_B; fi
  if ! grep -qF "[$r]<stdout>: fault_worker rank $r of 4 host $host result 10 ok netns $netns" \
       "$log"; then
    why+="no correct result line from rank $r on $host; "
  fi
done
report "allreduce -np 4 over two namespaces (sum 10 on every rank)" "$why" "$log"

# 2. a rank on the second host fails
log="$WORK/fault.log"
start=$(date +%s.%N)
hvdrun_in_a "$log" "$WORKER" --iters 100000 --sleep-ms 10 --exit-rank 3 --exit-at 10 \
  --exit-code 1 --tag "$TAG"
rc=$?
took=$(echo "$(date +%s.%N) - $start" | bc)
why=""
[ "$rc" -eq 0 ] && why+="hvdrun exited 0; "
[ "$(echo "$took > 10" | bc)" = 1 ] && why+="took ${took}s (limit 10s); "
grep -qE "rank 3 \(.*exited with code 1" "$log" || why+="output does not name rank 3; "
left=$(pgrep -f -- "$TAG" | tr '\n' ' ')
[ -n "$left" ] && why+="processes left: $left; "
report "remote rank exits 1: hvdrun fails in $(printf '%.1f' "$took")s, nothing left" "$why" "$log"

# 3. float16 crosses hosts as 16-bit shares, float32 as itself
tx_bytes() { ip netns exec "$1" cat /sys/class/net/hvdt0/statistics/tx_bytes; }
sent=()
why=""
for half in 0 1; do
  log="$WORK/wire-$half.log"
  before=$(($(tx_bytes "$NS_A") + $(tx_bytes "$NS_B")))
  timeout -s KILL 120 ip netns exec "$NS_A" "$HVDRUN" -np 2 --gloo -H "$ADDR_A:1,$ADDR_B:1" \
    --remote-shell "$WORK/rsh {host}" "$WORKER" --iters 5 --count 4194304 --half "$half" \
    --tag "$TAG" >"$log" 2>&1 || why+="hvdrun exited $? (--half $half); "
  sent+=($(($(tx_bytes "$NS_A") + $(tx_bytes "$NS_B") - before)))
  [ "$(grep -c " result 3 ok " "$log")" = 2 ] || why+="no correct result on both ranks (--half $half); "
done
ratio=$(echo "scale=3; ${sent[1]} / ${sent[0]}" | bc)
[ "$(echo "$ratio <= 0.55" | bc)" = 1 ] || why+="float16 sent ${sent[1]} bytes, float32 ${sent[0]}; "
report "float16 across hosts: ${sent[1]} bytes on the wire against float32's ${sent[0]} ($ratio)" \
  "$why" "$log"

mpirun_in_a() {  # log np slots-on-b args...
  local log=$1 np=$2 slots_b=$3
  shift 3
  timeout -s KILL 300 ip netns exec "$NS_A" unshare --uts sh -c \
    "hostname $NS_A; exec \"\$0\" \"\$@\"" "$HVDRUN" -np "$np" --mpi \
    -H "$ADDR_A:2,$ADDR_B:$slots_b" --remote-shell "$WORK/mpirsh {host}" "$@" >"$log" 2>&1
}

if [ -n "$COLLECTIVE_TESTS" ]; then
  # 3. the allreduce under MPI
  log="$WORK/mpi-allreduce.log"
  HOROVODCPP_LOG_LEVEL=info mpirun_in_a "$log" 4 2 "$WORKER" --iters 20 --tag "$TAG"
  rc=$?
  why=""
  [ "$rc" -ne 0 ] && why+="hvdrun exited $rc; "
  grep -q "shm+mpi: 2 hosts" "$log" || why+="the two-level backend (shm+mpi) was not used; "
  for r in 0 1 2 3; do
    if [ "$r" -lt 2 ]; then netns=$NETNS_A; else netns=$NETNS_B; fi
    grep -F "fault_worker rank $r of 4 host " "$log" | grep -qF " result 10 ok netns $netns" ||
      why+="no correct result line from rank $r in its namespace; "
  done
  report "MPI: allreduce -np 4 over two namespaces on shm+mpi" "$why" "$log"

  # 4, 5. every collective of every dtype and op, even and uneven hosts
  for layout in "4 2 2 2 2 2|2 2 2 2" "3 1 2 2 1|2 1 2"; do
    IFS='|' read -r places cross <<<"$layout"
    read -r np slots_b locals <<<"$places"
    log="$WORK/mpi-collective-$np.log"
    HOROVODCPP_TEST_EXPECT_BACKEND=shm+mpi HOROVODCPP_TEST_EXPECT_LOCAL_SIZES="$locals" \
      HOROVODCPP_TEST_EXPECT_CROSS_SIZES="$cross" mpirun_in_a "$log" "$np" "$slots_b" \
      "$COLLECTIVE_TESTS"
    rc=$?
    why=""
    [ "$rc" -ne 0 ] && why+="collective_tests exited $rc; "
    report "MPI: collective_tests on hosts of 2 and $slots_b ranks (shm+mpi)" "$why" "$log"
  done
fi

summary
