#!/usr/bin/env bash
# Installs what horovodcpp needs from Debian, TensorFlow from PyPI into a
# venv, then configures, builds and installs horovodcpp (hvdrun on PATH).
# Safe to run twice: packages already present are not fetched again, and the
# build is incremental. Used by both README commands and by .ci/run;
# `setup.sh --tests` also installs what only the tests need (Slurm, and the
# current PyTorch from PyPI in a venv of its own).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  g++ cmake make            # toolchain
  libopenmpi-dev openmpi-bin # MPI backend and mpirun
  libgloo-dev               # Gloo backend (TCP)
  libssl-dev                # libcrypto: the job secret's HMAC (store and TCP control plane)
  libgtest-dev              # GoogleTest for ctest
  iproute2                  # ip netns for the two-host test
  zlib1g-dev                # reading the .gz IDX files of the example
  dataset-fashion-mnist     # real data for the examples
  python3-dev pybind11-dev libdlpack-dev  # the Python extension horovodcpp._core
  python3-torch python3-numpy python3-pytest  # horovodcpp.torch, its tests and examples
  python3-torchvision       # examples/pytorch/synthetic_benchmark.py
  python3-mpi4py            # tests of init(comm=<mpi4py communicator>) and ProcessSet(comm)
  python3-venv              # the venv TensorFlow goes into (below)
)
# --tests (scripts/test.sh): also what only the tests need.
if [ "${1:-}" = --tests ]; then
  packages+=(
    slurmctld slurmd slurm-client munge  # a real Slurm cluster for test/slurm
    clang-format-14                      # format_check: the pinned style (.clang-format)
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build_dir=${HVD_BUILD_DIR:-build}
# The bindings are built for Debian's interpreter (the one python3-torch
# serves), not whatever python3 comes first on PATH (pyenv, conda).
python=${HVD_PYTHON:-/usr/bin/python3}

# pinned_venv DIR REQUIREMENTS WHAT [PIP OPTIONS]: a venv of that same
# interpreter with --system-site-packages (it also imports Debian's packages
# and the horovodcpp package installed below) holding the pinned wheels;
# skipped when they are installed already (a copy of the requirements file
# marks it).
pinned_venv() {
  local dir=$1 requirements=$2 what=$3
  local marker
  marker="$dir/horovodcpp-$(basename "$requirements")"
  [ -x "$dir/bin/python" ] || "$python" -m venv --system-site-packages "$dir"
  if ! cmp -s "$requirements" "$marker"; then
    echo "setup: installing $what into $dir"
    "$dir/bin/python" -m pip install -q --no-cache-dir --disable-pip-version-check "${@:4}" \
      -r "$requirements"
    cp "$requirements" "$marker"
  fi
}

# TensorFlow is not packaged by Debian (default .venv/ here, HVD_VENV to move it).
venv=$(realpath -m "${HVD_VENV:-.venv}")
pinned_venv "$venv" scripts/requirements-tensorflow.txt TensorFlow
# tf_keras: what tf.keras is under TF_USE_LEGACY_KERAS=1 (Keras 2). It names
# the full `tensorflow` wheel as its dependency, which tensorflow-cpu above
# stands for: no dependencies.
pinned_venv "$venv" scripts/requirements-tf-keras.txt tf_keras --no-deps
# --tests: the current PyTorch from PyPI too, beside Debian's (about 5 GB with
# its CUDA libraries), once per machine: outside the checkout by default.
torch_python=""
if [ "${1:-}" = --tests ]; then
  torch_venv=$(realpath -m "${HVD_TORCH_VENV:-$HOME/.cache/horovodcpp/torch-venv}")
  pinned_venv "$torch_venv" scripts/requirements-torch.txt "PyTorch from PyPI"
  torch_python=$torch_venv/bin/python
fi

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$python" \
  -DHVD_TENSORFLOW_PYTHON="$venv/bin/python" -DHVD_TORCH_PYTHON="$torch_python"
cmake --build "$build_dir" -j "$(nproc)"

# Install hvdrun, the library and its CMake package (default /usr/local),
# so `hvdrun` is on PATH, find_package(horovodcpp) works and /usr/bin/python3
# imports horovodcpp (from <prefix>/lib/python3.X/dist-packages).
prefix=${HVD_PREFIX:-/usr/local}
mkdir -p "$prefix" 2>/dev/null || true
sudo_cmd=""; [ "$(id -u)" -eq 0 ] || [ -w "$prefix" ] || sudo_cmd="sudo"
$sudo_cmd mkdir -p "$prefix"
$sudo_cmd cmake --install "$build_dir" --prefix "$prefix" >/dev/null
[ "$(id -u)" -ne 0 ] || ldconfig
echo "setup: installed hvdrun, libhorovodcpp and the horovodcpp Python package under $prefix"
if [ "$prefix" = /usr/local ]; then
  # The venv sees <prefix>/lib/python3.X/dist-packages through its system site-packages.
  (cd / && "$venv/bin/python" -c "import horovodcpp._core")
fi
echo "setup: TensorFlow scripts run with $venv/bin/python"
