#!/usr/bin/env bash
# Hierarchical allreduce of CUDA tensors (HOROVODCPP_HIERARCHICAL_ALLREDUCE=1):
# gpu_collective_tests on two hosts simulated on this machine (127.0.0.1 and
# 127.0.0.2 under hvdrun --gloo), every rank checking its results.
#
# NCCL refuses two ranks of one communicator on one GPU ("Duplicate GPU
# detected"), so the layout follows the device count:
#   >= 4 GPUs: 2 hosts x 2 ranks, every collective (the job-wide communicator
#              has 4 ranks, the hosts' ones 2);
#   2-3 GPUs:  2 hosts x 1 rank, every collective;
#   1 GPU:     2 hosts x 1 rank sharing the GPU, allreduce tests only (each
#              host's communicator has one rank; the job-wide one, which
#              the other collectives need, would have two on one GPU).
# No device: exit 77 (skipped). Fails unless rank 0 logged that the
# hierarchical allreduce is on.
#
# usage: hierarchical_allreduce.sh HVDRUN GPU_COLLECTIVE_TESTS [LOG]
set -u
hvdrun=$1
tests=$2
log=${3:-$(mktemp)}

gpus=$(bash "$(dirname "$0")/gpu_count.sh")
if [[ -z $gpus || $gpus -lt 1 ]]; then
  echo "SKIPPED: no CUDA device (neither nvidia-smi nor /dev/nvidia* shows a GPU)"
  exit 77
fi
if (( gpus >= 4 )); then
  hosts=127.0.0.1:2,127.0.0.2:2 np=4 filter='*'
elif (( gpus >= 2 )); then
  hosts=127.0.0.1:1,127.0.0.2:1 np=2 filter='*'
else
  hosts=127.0.0.1:1,127.0.0.2:1 np=2 filter='*Allreduce*:*HalfPrecision*:*FusedGroup*'
fi
echo "hierarchical allreduce: $gpus GPU(s): -H $hosts, tests $filter"

HOROVODCPP_HIERARCHICAL_ALLREDUCE=1 HOROVODCPP_LOG_LEVEL=info NCCL_DEBUG=${NCCL_DEBUG:-WARN} \
  "$hvdrun" -np "$np" --gloo -H "$hosts" "$tests" --gtest_filter="$filter" >"$log" 2>&1
status=$?
grep -E "hierarchical allreduce|HIERARCHICAL|PASSED|FAILED|SKIPPED|every GPU test skipped" "$log" | tail -20
if [[ $status != 0 ]]; then
  echo "exit $status (log: $log)"
  tail -30 "$log"
  exit "$status"
fi
if ! grep -q "hierarchical allreduce of CUDA tensors" "$log"; then
  echo "FAILED: rank 0 did not report the hierarchical allreduce on (log: $log)"
  exit 1
fi
echo "hierarchical allreduce: passed on $np ranks"
