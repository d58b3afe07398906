#!/usr/bin/env bash
# gpu_bench.sh: horovodcpp on a GPU next to torch.distributed, in one run
# (bench/README.md, "train_bench.py, gpu_bench.sh, compression_bench.sh, scale_bench.sh"):
#
#   bench/gpu_bench.sh [--build DIR] [--out DIR] [--quick] [--python PYTHON]
#                      [--compiled] [--zero]
#
# On a machine with a CUDA GPU and a horovodcpp build with CUDA, NCCL, Gloo
# and the Python bindings for PYTHON (PyTorch with CUDA, torchvision; e.g.
# scripts/gpu_tests.sh build, whose build directory is build-gpu-device). It
# prints the device, driver and versions, then three tables
# (bench/gpu_bench.py): allreduce 4 B - 256 MiB against torch.distributed
# NCCL at one rank; the ResNet-50 step with no communication, DDP and
# DistributedOptimizer, bf16 and fp32; CUDA tensors staged through host
# memory at two ranks sharing GPU 0 against torch.distributed gloo. Then
# what the per-gradient hooks cost the host next to DDP on nccl
# (bench/hooks_bench.py --device cuda). Results also go to
# OUT/gpu_bench.jsonl, and the timelines of the hvd steps to OUT.
# --quick: one round and fewer steps (a check that it runs, not figures).
# --compiled: also the compiled ResNet-50 against compiled DDP (gpu_bench.py
#   --mode compiled; compiling takes minutes). --zero: also ZeRO sharding on
#   CUDA tensors at two ranks sharing GPU 0, staged (sharding_bench.sh with
#   --device cuda: step and torch.cuda.max_memory_allocated per variant).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$root/build
out=""
quick=""
compiled=""
zero=""
python=python3
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --compiled) compiled=1; shift ;;
    --zero) zero=1; shift ;;
    --python) python=$2; shift 2 ;;
    *) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
out=${out:-$(mktemp -d /tmp/gpu_bench.XXXXXX)}
mkdir -p "$out"
hvdrun=$build/runner/hvdrun
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
[ -x "$hvdrun" ] || { echo "gpu_bench: no $hvdrun (build first)"; exit 2; }
"$python" -c 'import horovodcpp.torch, torchvision' || exit 2

echo "gpu_bench: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "command: bench/gpu_bench.sh${quick:+ --quick}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/device: /'
"$python" - <<'EOF'
import os, torch, horovodcpp, horovodcpp._core
print("torch %s, CUDA %s, torch's NCCL %s; horovodcpp %s (%s); %d CPUs" % (
    torch.__version__, torch.version.cuda, ".".join(map(str, torch.cuda.nccl.version())),
    horovodcpp.__version__, ", ".join(horovodcpp._core.built_gpu_operations()), os.cpu_count()))
EOF

args=(--json "$out/gpu_bench.jsonl")
train_args=(--timeline-dir "$out")
if [ -n "$quick" ]; then
  args+=(--rounds 1 --iters 30)
  train_args+=(--warmup 3 --steps 5 --batch-size 16)
fi
"$hvdrun" -np 1 --gloo "$python" "$here/gpu_bench.py" --mode allreduce "${args[@]}"
"$hvdrun" -np 1 --gloo "$python" "$here/gpu_bench.py" --mode train "${args[@]}" "${train_args[@]}"
HOROVODCPP_GPU_OPERATIONS=gloo CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} \
  "$hvdrun" -np 2 --gloo "$python" "$here/gpu_bench.py" --mode staged "${args[@]}"
"$hvdrun" -np 1 --gloo "$python" "$here/hooks_bench.py" --device cuda ${quick:+--rounds 1 --steps 50}
if [ -n "$compiled" ]; then
  "$hvdrun" -np 1 --gloo "$python" "$here/gpu_bench.py" --mode compiled "${args[@]}" \
    ${quick:+--warmup 3 --steps 5 --batch-size 16}
fi
if [ -n "$zero" ]; then
  # torch's ZeroRedundancyOptimizer on the horovodcpp backend needs PyTorch 2.15.
  HOROVODCPP_GPU_OPERATIONS=gloo CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} \
    ROUNDS=$([ -n "$quick" ] && echo 1 || echo 2) ARGS="--device cuda" VARIANTS="distributed zero1 zero2 torch_zero_gloo" \
    bash "$here/sharding_bench.sh" "$hvdrun" "$python" 2
fi
echo "gpu_bench: results in $out"
