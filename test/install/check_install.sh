#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then configures, builds and
# runs test/install as an outside project would (find_package(horovodcpp)).
# With a Python interpreter and the package's install directory (relative to
# the prefix), also imports horovodcpp.torch from the prefix and runs it; with
# a second interpreter that has TensorFlow, horovodcpp.tensorflow.keras too.
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build_dir" --prefix "$scratch/prefix" >/dev/null
cmake -S "$source_dir" -B "$scratch/build" -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/build" >/dev/null
LD_LIBRARY_PATH="$scratch/prefix/lib:$scratch/prefix/lib64:${LD_LIBRARY_PATH:-}" "$scratch/build/consumer"
if [ $# -ge 3 ]; then
  # No LD_LIBRARY_PATH: _core finds libhorovodcpp through its RUNPATH.
  (cd "$scratch" && PYTHONPATH="$scratch/prefix/$3" "$2" -c \
    "import horovodcpp.torch as hvd; hvd.init(); assert hvd.size() == 1; hvd.shutdown()")
fi
if [ $# -ge 4 ]; then
  (cd "$scratch" && PYTHONPATH="$scratch/prefix/$3" TF_CPP_MIN_LOG_LEVEL=2 "$4" -c \
    "import horovodcpp.tensorflow.keras as hvd; hvd.init(); assert hvd.allreduce([1.0]).numpy()[0] == 1")
fi
