#!/usr/bin/env bash
# Scripts written for Horovod, unchanged, through the `horovod` import shim
# (test/horovod_shim/horovod: `import horovod.torch` is horovodcpp.torch)
# at 2 ranks:
#   torch synthetic   examples/pytorch/synthetic_benchmark.py with its
#                     imports spelled as in Horovod
#   torch elastic     examples/pytorch/elastic_mnist.py likewise, under
#                     hvdrun --min-np (an elastic job)
#   tf2 synthetic     tensorflow2_synthetic.py: DistributedGradientTape in a
#                     tf.function, imports from horovod.tensorflow.mpi_ops
#   keras elastic     keras_elastic.py: KerasState, the elastic callbacks,
#                     horovod.keras.callbacks, under hvdrun --min-np
#
# usage: horovod_scripts.sh HVDRUN TORCH_PYTHON [TF_PYTHON]
# PYTHONPATH must reach the horovodcpp package. Without TF_PYTHON the
# TensorFlow scripts are skipped (and said to be). Prints one line per case
# and "N passed, M failed"; exits 1 if any failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/../runner/report.sh"
HVDRUN=$(readlink -f "${1:?usage: horovod_scripts.sh HVDRUN TORCH_PYTHON [TF_PYTHON]}")
TORCH_PYTHON=${2:?usage: horovod_scripts.sh HVDRUN TORCH_PYTHON [TF_PYTHON]}
TF_PYTHON=${3:-}
WORK=$(mktemp -d /tmp/horovod_scripts.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH}

# as_horovod EXAMPLE: a copy (with the modules beside it) importing
# `horovod` where the example imports horovodcpp.
as_horovod() {
  local dir
  dir=$WORK/$(basename "$(dirname "$1")")
  mkdir -p "$dir"
  for f in "$(dirname "$1")"/*.py; do
    sed 's/\bhorovodcpp\b/horovod/g' "$f" >"$dir/$(basename "$f")"
  done
  grep -q '^import horovod\.' "$dir/$(basename "$1")" || { echo "no horovod import in $1" >&2; exit 2; }
  echo "$dir/$(basename "$1")"
}

run_case() {  # NAME PATTERN COMMAND...: passes if COMMAND exits 0 and prints PATTERN
  local name=$1 pattern=$2
  shift 2
  timeout 600 "$@" >"$WORK/out" 2>&1
  local status=$?
  if [ "$status" -eq 0 ] && grep -Eq "$pattern" "$WORK/out"; then
    report "$name" "" "$WORK/out"
  else
    report "$name" "exit $status; no line matching: $pattern" "$WORK/out"
  fi
}

run_case "torch synthetic" "Total img/sec on 2 rank" \
  "$HVDRUN" -np 2 --gloo "$TORCH_PYTHON" "$(as_horovod "$root/examples/pytorch/synthetic_benchmark.py")" \
  --num-iters 2 --num-batches-per-iter 2 --batch-size 4 --image-size 64
run_case "torch elastic" "parameters identical on all 2 ranks" \
  "$HVDRUN" -np 2 --min-np 1 "$TORCH_PYTHON" "$(as_horovod "$root/examples/pytorch/elastic_mnist.py")" \
  --epochs 1 --train-images 2000
if [ -n "$TF_PYTHON" ]; then
  run_case "tf2 synthetic" "weights identical on all 2 ranks" \
    "$HVDRUN" -np 2 --gloo "$TF_PYTHON" "$here/tensorflow2_synthetic.py"
  run_case "keras elastic" "weights identical on all 2 ranks" \
    "$HVDRUN" -np 2 --min-np 1 "$TF_PYTHON" "$here/keras_elastic.py"
else
  echo "SKIP tf2 synthetic, keras elastic: no TensorFlow interpreter given"
fi
summary
