#!/usr/bin/env bash
# Installs what horovodcpp needs from Debian, then configures, builds and
# installs it (hvdrun on PATH).
# Safe to run twice: packages already present are not fetched again, and the
# build is incremental. Used by both README commands and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  g++ cmake make            # toolchain
  libopenmpi-dev openmpi-bin # MPI backend and mpirun
  libgloo-dev               # Gloo backend (TCP)
  libgtest-dev              # GoogleTest for ctest
  iproute2                  # ip netns for the two-host test
  zlib1g-dev                # reading the .gz IDX files of the example
  dataset-fashion-mnist     # real data for examples/cpp
)

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
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build_dir" -j "$(nproc)"

# Install hvdrun, the library and its CMake package (default /usr/local),
# so `hvdrun` is on PATH and find_package(horovodcpp) works.
prefix=${HVD_PREFIX:-/usr/local}
mkdir -p "$prefix" 2>/dev/null || true
sudo_cmd=""; [ "$(id -u)" -eq 0 ] || [ -w "$prefix" ] || sudo_cmd="sudo"
$sudo_cmd mkdir -p "$prefix"
$sudo_cmd cmake --install "$build_dir" --prefix "$prefix" >/dev/null
[ "$(id -u)" -ne 0 ] || ldconfig
echo "setup: installed hvdrun and libhorovodcpp under $prefix"
