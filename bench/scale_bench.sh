#!/usr/bin/env bash
# How costs grow with the number of ranks, in one run: the control plane at
# 2 to 1,024 simulated ranks on each plane (negotiation_scale; the
# shared-memory plane, a per-host plane, to 256), then 64 real ranks per
# mode (test/runner/np64_tests.sh). Figures and how to read them:
# docs/scaling.md.
#
# usage: bench/scale_bench.sh [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
[ "${1:-}" = --build ] && build=$2
for plane in memory tcp; do
  "$build/bench/negotiation_scale" --plane $plane --steps 4
done
"$build/bench/negotiation_scale" --plane shm --ranks 2,8,64,256 --steps 4
mpi_flag=""
command -v mpirun >/dev/null && mpi_flag=--mpi
bash test/runner/np64_tests.sh "$build/runner/hvdrun" "$build/test/fault_worker" \
  "$build/examples/cpp/mnist_mlp" $mpi_flag | grep -E '^(PASS|FAIL)|passed'
