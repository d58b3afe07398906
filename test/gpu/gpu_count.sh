#!/usr/bin/env bash
# Prints how many GPUs the ranks of a job can use here: nvidia-smi's count,
# else the device nodes (a container may lack nvidia-smi but not them),
# capped by CUDA_VISIBLE_DEVICES (which nvidia-smi ignores; the ranks do not).
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
(( gpus > 0 )) || gpus=$(ls -d /dev/nvidia[0-9]* 2>/dev/null | wc -l)
if [[ -n ${CUDA_VISIBLE_DEVICES+x} ]]; then
  visible=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c . || true)
  (( visible < gpus )) && gpus=$visible
fi
echo "${gpus:-0}"
