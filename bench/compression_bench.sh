#!/usr/bin/env bash
# Where gradient compression pays: bench/compression_bench.py's table on two
# "hosts" (network namespaces joined by a veth pair, both ends limited to
# RATE with tc's token bucket filter; PER_HOST ranks each (default 1), Gloo
# between them), then on this one host (the same number of ranks, shared
# memory). Root; needs ip netns, tc. BENCH runs another benchmark that
# takes --iface and --threads the same way (bench/compiled_bench.py, with
# PYTHON set to an interpreter with PyTorch 2.4 or newer).
#   usage: [PER_HOST=N] [BENCH=script] [PYTHON=python] bench/compression_bench.sh HVDRUN
#          [RATE (default 1gbit)] [bench options...]
set -u
HVDRUN=$(readlink -f "${1:?usage: compression_bench.sh HVDRUN [RATE] [options]}")
RATE=${2:-1gbit}
shift $(($# < 2 ? $# : 2))
BENCH=$(readlink -f "${BENCH:-$(dirname "$0")/compression_bench.py}")
PYTHON=${PYTHON:-/usr/bin/python3}
TAG="hvdbench-$$-$RANDOM"
WORK=$(mktemp -d /tmp/compression_bench.XXXXXX)
. "$(dirname "$0")/../test/runner/netns_pair.sh"

netns_pair_create || exit $?
for ns in "$NS_A" "$NS_B"; do
  ip netns exec "$ns" tc qdisc add dev hvdt0 root tbf rate "$RATE" burst 256kb latency 50ms ||
    exit 1
done
PER_HOST=${PER_HOST:-1}
NP=$((2 * PER_HOST))
# Both "hosts" share this machine's cores.
THREADS=$(( $(nproc) / NP > 0 ? $(nproc) / NP : 1 ))
echo "== two hosts, $RATE link (tc tbf on both ends of a veth pair)"
ip netns exec "$NS_A" env PYTHONPATH="${PYTHONPATH:-}" "$HVDRUN" -np "$NP" --gloo \
  -H "$ADDR_A:$PER_HOST,$ADDR_B:$PER_HOST" --remote-shell "$WORK/rsh {host}" \
  "$PYTHON" "$BENCH" --iface hvdt0 --threads "$THREADS" "$@" --tag "$TAG" 2>&1 | sed 's/^\[0\]<stdout>: //'
echo "== one host, shared memory"
"$HVDRUN" -np "$NP" "$PYTHON" "$BENCH" "$@" 2>&1 | sed 's/^\[1,0\]<stdout>://; s/^\[0\]<stdout>: //'
