#!/usr/bin/env bash
# Runs every GPU test on a machine with a CUDA device.
#
#   scripts/gpu_tests.sh prepare   # here (a machine with Debian's libgtest-dev)
#   scripts/gpu_tests.sh build     # on the GPU machine: configure and build everything
#   scripts/gpu_tests.sh test      # on the GPU machine: run everything (builds nothing)
#   scripts/gpu_tests.sh           # build, then test, in one command
#
# It is made for GPU machines that have CUDA 13, CMake and PyTorch 2.x but
# no MPI, no Gloo, no GoogleTest and no internet. So:
# - GoogleTest comes as source: `prepare` copies Debian's /usr/src/googletest
#   (3.8 MB) into .gpu-deps/googletest (git-ignored); copy `.gpu-deps` to
#   the GPU machine with the checkout, where it is built first.
# - NCCL: the CUDA toolkit's (nccl.h in CUDA's include directory), else the
#   one PyTorch's wheels install (python3 -c 'import nvidia.nccl'); a
#   system libnccl (about 200 MiB) is not copied.
# - MPI is left out (HVD_WITH_MPI=OFF). Gloo is carried by `prepare` too
#   (Debian 12's libgloo.so with libhiredis, libibverbs and libnl: about
#   2 MB; they need GLIBC >= 2.34 and GLIBCXX >= 3.4.30 on the GPU machine)
#   so hvd::init() works there: gpu_collective_tests (CUDA tensors through
#   the API) and the Gloo CPU suites at 1 and 2 ranks run too. If those
#   libraries do not load there (checked with ldd), or HVD_GPU_NO_GLOO=1,
#   it builds without any CPU transport: gpu_tests still drives the NCCL
#   backend, the copy kernel and the events directly, with ranks as
#   threads (one GPU per rank), and needs no launcher.
#
# - Hierarchical allreduce (HOROVODCPP_HIERARCHICAL_ALLREDUCE=1):
#   gpu_collective_tests on two hosts simulated on this machine
#   (test/gpu/hierarchical_allreduce.sh picks the layout the GPUs allow).
# - CUDA tensors staged through pinned host memory onto Gloo
#   (HOROVODCPP_GPU_OPERATIONS=gloo): gpu_staged_tests under hvdrun --gloo
#   with 1, 2 and 4 ranks, all on the one GPU (NCCL needs a GPU per rank).
# - horovodcpp.torch with CUDA tensors (test/python/test_torch_cuda.py) on
#   this machine's python3 (PyTorch 2.x): the bindings are built with it
#   (pybind11 from its pip package, the DLPack header carried by `prepare`,
#   and Python 3.12's headers too in case the interpreter lacks them), then
#   run on NCCL at one rank and staged on Gloo at two ranks sharing the
#   GPU, and the CPU Python suites at two ranks on that PyTorch.
#   HVD_GPU_PYTHON picks another interpreter; HVD_GPU_SKIP_PYTHON=1 skips.
#
# - The flight recorder's dump on a forced NCCL timeout
#   (test/gpu/nccl_timeout_flight_recorder.sh, one rank).
# - The torch.distributed backend (test/python_torch_distributed/test_cuda.py)
#   with CUDA tensors, on NCCL at one rank and staged at two, where this
#   machine's PyTorch is new enough for it (else reported as not run).
#
# - NVTX ranges: nvtx_tests (an injection library records them), and where
#   Nsight Systems is installed, a trace of gpu_collective_tests' allreduces
#   must show NEGOTIATE, NCCL_ALLREDUCE and the fusion buffer's copies
#   (`nsys stats --report nvtx_sum`); without nsys that check is reported
#   as not run.
#
# From a machine without a GPU: `prepare` there, copy the checkout with
# .gpu-deps to the GPU machine and run `bash scripts/gpu_tests.sh` there.
# The build takes about 2 minutes on 16 cores (GoogleTest included), the
# tests about 1 with an H100 or H200 (HVD_GPU_SKIP_CPU_SUITES=1 leaves out
# the CPU suites). `build` and `test` split the two. Each step of `test` is bounded
# (HVD_GPU_STEP_TIMEOUT, default 240 s; NCCL waits by
# HOROVODCPP_NCCL_TIMEOUT_SECONDS, default 60 here), so a hang fails that
# step and the rest still runs; read the logs in $OUT.
# HVD_GTEST_FROM_SOURCE=1 builds the carried GoogleTest even where one is
# installed (to rehearse the GPU machine's path here).
# Results: build/test logs and GoogleTest XML in $OUT (or build-gpu-device/).
# Exit status: non-zero if any test failed, or if the GPU tests skipped
# (no usable device: that is not a pass on a GPU machine).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${HVD_GPU_BUILD_DIR:-$ROOT/build-gpu-device}
DEPS=$ROOT/.gpu-deps

if [[ "${1:-}" == prepare ]]; then
  mkdir -p "$DEPS"
  rm -rf "$DEPS/googletest"
  cp -r /usr/src/googletest "$DEPS/googletest"
  # Gloo (Debian 12's build needs GLIBC 2.34 and GLIBCXX 3.4.30 there) and
  # the libraries it loads, laid out as a relocatable CMake prefix.
  if [[ -f /usr/lib/libgloo.so ]]; then
    rm -rf "$DEPS/gloo" && mkdir -p "$DEPS/gloo/lib" "$DEPS/gloo/include" "$DEPS/gloo/share/cmake"
    cp -r /usr/include/gloo "$DEPS/gloo/include/"
    cp -r /usr/share/cmake/Gloo "$DEPS/gloo/share/cmake/"
    # Debian's export names /usr/lib/libgloo.so.* outright, which the GPU
    # machine lacks (CMake stops at configure): point it at the copy.
    sed -i 's|"/usr/lib/|"${_IMPORT_PREFIX}/lib/|g' "$DEPS"/gloo/share/cmake/Gloo/GlooTargets-*.cmake
    cp -L /usr/lib/libgloo.so* "$DEPS/gloo/lib/"  # files, not links: carried as they are
    for lib in $(ldd /usr/lib/libgloo.so.0 | awk '/=> \// {print $3}' | grep -E 'hiredis|ibverbs|libnl'); do
      cp -L "$lib" "$DEPS/gloo/lib/"
    done
  fi
  # The DLPack header for the Python bindings (PyTorch wheels lack it).
  if [[ -f /usr/include/dlpack/dlpack.h ]]; then
    rm -rf "$DEPS/dlpack" && mkdir -p "$DEPS/dlpack/dlpack"
    cp /usr/include/dlpack/dlpack.h "$DEPS/dlpack/dlpack/"
  fi
  # Python 3.12's headers (1.8 MB), used only if the GPU machine's python3
  # (3.12 in PyTorch's virtual environment) has none: a virtual
  # environment over a system Python without its -dev package.
  rm -rf "$DEPS/python"
  for py in python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12; do
    include=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null) || continue
    if [[ -f $include/Python.h ]]; then
      mkdir -p "$DEPS/python" && cp -r "$include" "$DEPS/python/python3.12"
      break
    fi
  done
  echo "prepared $DEPS (carry it to the GPU machine): $(du -sh "$DEPS" | cut -f1)"
  exit 0
fi

PHASE=${1:-all}
case $PHASE in
  all | build | test) ;;
  *) echo "usage: $0 [prepare|build|test]"; exit 2 ;;
esac
RESULTS=${OUT:-$BUILD}
mkdir -p "$BUILD" "$RESULTS"
JOBS=$(nproc)
log() { echo "== $* (${SECONDS}s)"; }

log "device"
# compute_mode: staged ranks share the GPU, which Exclusive_Process refuses.
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv 2>&1 || true
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
nvcc --version | tail -1

# NCCL: the toolkit's, else PyTorch's wheel.
NCCL_ARGS=()
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [[ ! -f $CUDA_HOME/include/nccl.h ]]; then
  NCCL_DIR=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__) if nvidia.nccl.__file__ else list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
  NCCL_LIB=$(ls "$NCCL_DIR"/lib/libnccl.so* 2>/dev/null | head -1 || true)
  [[ -n $NCCL_LIB && -f $NCCL_DIR/include/nccl.h ]] || { echo "no NCCL found (CUDA toolkit or PyTorch's nvidia.nccl)"; exit 2; }
  log "NCCL from $NCCL_DIR"
  NCCL_ARGS=(-DNCCL_INCLUDE_DIR="$NCCL_DIR/include" -DNCCL_LIBRARY="$NCCL_LIB")
  export LD_LIBRARY_PATH=$NCCL_DIR/lib:${LD_LIBRARY_PATH:-}
fi

# Gloo: carried by `prepare` (then hvd::init works and the CPU suites run
# too), else left out.
GLOO_ARGS=(-DHVD_WITH_GLOO=OFF)
if [[ -f $DEPS/gloo/lib/libgloo.so && -z ${HVD_GPU_NO_GLOO:-} ]]; then
  missing=$(LD_LIBRARY_PATH=$DEPS/gloo/lib:${LD_LIBRARY_PATH:-} ldd "$DEPS/gloo/lib/libgloo.so.0" 2>&1 \
            | grep "not found" || true)
  if [[ -n $missing ]]; then
    echo "the carried Gloo does not load here, building without it:"
    echo "$missing"
  else
    GLOO_ARGS=(-DHVD_WITH_GLOO=ON -DGloo_DIR="$DEPS/gloo/share/cmake/Gloo")
    export LD_LIBRARY_PATH=$DEPS/gloo/lib:${LD_LIBRARY_PATH:-}
  fi
fi
HAVE_GLOO=$([[ ${GLOO_ARGS[0]} == -DHVD_WITH_GLOO=ON ]] && echo 1 || true)

# Python bindings on this machine's PyTorch (they need a CPU transport).
PY=${HVD_GPU_PYTHON:-$(command -v python3 || true)}
PY_ARGS=(-DHVD_WITH_PYTHON=OFF)
python_reason=""
if [[ -n ${HVD_GPU_SKIP_PYTHON:-} ]]; then
  python_reason="HVD_GPU_SKIP_PYTHON is set"
elif [[ -z $HAVE_GLOO ]]; then
  python_reason="no CPU transport (Gloo) in this build"
elif [[ -z $PY ]] || ! "$PY" -c 'import torch, pytest' 2>/dev/null; then
  python_reason="no python3 with torch and pytest"
elif [[ ! -f $DEPS/dlpack/dlpack/dlpack.h ]]; then
  python_reason="no DLPack header: run 'scripts/gpu_tests.sh prepare' and copy .gpu-deps here"
else
  # pybind11: the interpreter's pip package, else one CMake finds itself.
  PYBIND_DIR=$("$PY" -m pybind11 --cmakedir 2>/dev/null || true)
  # AUTO: missing Python headers or pybind11 leave the bindings out
  # (reported below) instead of failing the whole configure.
  PY_ARGS=(-DHVD_WITH_PYTHON=AUTO -DPython3_EXECUTABLE="$PY"
           ${PYBIND_DIR:+-Dpybind11_DIR="$PYBIND_DIR"} -DDLPACK_INCLUDE_DIR="$DEPS/dlpack")
  # The interpreter's headers, else the carried ones of its version.
  if [[ ! -f $("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h ]]; then
    PY_ARGS+=(-DPython3_INCLUDE_DIR="$DEPS/python/python$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')")
  fi
fi

if [[ $PHASE != test ]]; then
  # GoogleTest: installed, else built from the carried source.
  GTEST_PREFIX=$BUILD/googletest-install
  installed_gtest() {
    local dir
    for dir in /usr/lib/cmake/GTest /usr/lib/*/cmake/GTest /usr/local/lib*/cmake/GTest; do
      [[ -d $dir ]] && return 0
    done
    return 1
  }
  if [[ ! -d $GTEST_PREFIX ]] && { [[ -n ${HVD_GTEST_FROM_SOURCE:-} ]] || ! installed_gtest; }; then
    [[ -d $DEPS/googletest ]] || { echo "no GoogleTest: run 'scripts/gpu_tests.sh prepare' and copy .gpu-deps here"; exit 2; }
    log "building GoogleTest from $DEPS/googletest"
    cmake -S "$DEPS/googletest" -B "$BUILD/googletest-build" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$GTEST_PREFIX" -DBUILD_GMOCK=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON >/dev/null
    cmake --build "$BUILD/googletest-build" -j "$JOBS" >/dev/null
    cmake --install "$BUILD/googletest-build" >/dev/null
  fi

  log "configure"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DHVD_WITH_CUDA=ON -DHVD_WITH_NCCL=ON -DHVD_WITH_MPI=OFF "${GLOO_ARGS[@]}" \
    "${PY_ARGS[@]}" -DHVD_BUILD_EXAMPLES=OFF -DHVD_BUILD_BENCHMARKS=OFF \
    -DCMAKE_PREFIX_PATH="$GTEST_PREFIX" "${NCCL_ARGS[@]}" >"$RESULTS/configure.log" 2>&1 \
    || { tail -30 "$RESULTS/configure.log"; exit 1; }
  grep "horovodcpp" "$RESULTS/configure.log" || true

  # Everything the tests run, in one parallel build.
  targets=(gpu_tests unit_tests)
  [[ -n $HAVE_GLOO ]] && targets+=(gpu_collective_tests gpu_staged_tests collective_tests hvdrun)
  grep -q "horovodcpp Python bindings: TRUE" "$RESULTS/configure.log" && targets+=(_core)
  grep -q "NVTX=TRUE" "$RESULTS/configure.log" && targets+=(nvtx_tests)
  log "build: ${targets[*]}"
  cmake --build "$BUILD" --target "${targets[@]}" -j "$JOBS" >"$RESULTS/build.log" 2>&1 \
    || { grep -E "error" -A3 "$RESULTS/build.log" | head -60; exit 1; }
  log "built"
  [[ $PHASE == build ]] && exit 0
fi

if [[ ! -x $BUILD/test/gpu_tests ]]; then
  echo "nothing built in $BUILD: run 'scripts/gpu_tests.sh build' first (a machine handed back loses it)"
  exit 2
fi
if [[ -z $python_reason ]] && ! ls "$BUILD"/python/horovodcpp/_core*.so >/dev/null 2>&1; then
  python_reason="CMake did not find what the bindings need for $PY (see the build's configure.log)"
fi
# A hang fails its step, not the whole run: every step is bounded, and so
# is every NCCL wait (then the communicator is aborted and the step fails).
STEP_TIMEOUT=${HVD_GPU_STEP_TIMEOUT:-240}
bounded() { timeout -s INT -k 20 "$STEP_TIMEOUT" "$@"; }
# A step's exit status: 77 (every GPU test skipped: no usable device) fails
# the run like any other non-zero status, named as such.
judge() {  # name, exit status, log
  case $2 in
    0) ;;
    77) echo "$1 SKIPPED: no usable CUDA device"; status=1 ;;
    *) echo "$1 FAILED (exit $2; $3)"; status=1 ;;
  esac
}
export HOROVODCPP_NCCL_TIMEOUT_SECONDS=${HOROVODCPP_NCCL_TIMEOUT_SECONDS:-60}

status=0
if [[ -x $BUILD/test/nvtx_tests ]]; then
  log "NVTX ranges through an injection library (nvtx_tests)"
  bounded "$BUILD/test/nvtx_tests" --gtest_filter='-NvtxRangesOff.*' >"$RESULTS/nvtx_tests.log" 2>&1 || status=1
  HOROVODCPP_DISABLE_NVTX_RANGES=1 bounded "$BUILD/test/nvtx_tests" --gtest_filter='NvtxRangesOff.*' \
    >>"$RESULTS/nvtx_tests.log" 2>&1 || status=1
  grep -E "PASSED|FAILED" "$RESULTS/nvtx_tests.log" || true
fi
log "unit tests (CPU parts of the GPU work)"
bounded "$BUILD/test/unit_tests" --gtest_filter='GpuOperations*:BatchedCopyPlan*:CompletionPoller*:DeviceRouting*:StagedRouting*:HostStaging*:DeviceCompletion*:Timeline*' \
  --gtest_output=xml:"$RESULTS/unit_tests.xml" >"$RESULTS/unit_tests.log" 2>&1 || status=1
tail -3 "$RESULTS/unit_tests.log"
log "GPU tests"
set +e
NCCL_DEBUG=${NCCL_DEBUG:-WARN} bounded "$BUILD/test/gpu_tests" --gtest_output=xml:"$RESULTS/gpu_tests.xml" 2>&1 \
  | tee "$RESULTS/gpu_tests.log"
gpu_status=${PIPESTATUS[0]}
set -e
judge gpu_tests "$gpu_status" "$RESULTS/gpu_tests.log"
if [[ -n $HAVE_GLOO ]]; then
  log "CUDA tensors through hvd::init (one rank, Gloo control plane)"
  set +e
  NCCL_DEBUG=${NCCL_DEBUG:-WARN} bounded "$BUILD/test/gpu_collective_tests" \
    --gtest_output=xml:"$RESULTS/gpu_collective_tests.xml" 2>&1 | tee "$RESULTS/gpu_collective_tests.log"
  collective_status=${PIPESTATUS[0]}
  set -e
  judge gpu_collective_tests "$collective_status" "$RESULTS/gpu_collective_tests.log"
  # NVTX ranges in a real Nsight Systems trace, where nsys is installed.
  if command -v nsys >/dev/null; then
    log "NVTX ranges in an Nsight Systems trace (nsys, NCCL at one rank)"
    set +e
    bounded nsys profile --trace=cuda,nvtx --force-overwrite=true --output="$RESULTS/nvtx_trace" \
      "$BUILD/test/gpu_collective_tests" \
      --gtest_filter='EveryCollectiveTest.AllreduceEveryOp:EveryCollectiveTest.FusedGroupWithScaleFactors' \
      >"$RESULTS/nvtx_trace.log" 2>&1
    nsys_status=$?
    nsys stats --report nvtx_sum "$RESULTS/nvtx_trace.nsys-rep" >"$RESULTS/nvtx_ranges.txt" 2>&1
    set -e
    for range in NEGOTIATE NCCL_ALLREDUCE MEMCPY_IN_FUSION_BUFFER MEMCPY_OUT_FUSION_BUFFER; do
      grep -q "$range" "$RESULTS/nvtx_ranges.txt" || { echo "nvtx: no $range range in the trace"; nsys_status=1; }
    done
    judge nvtx_trace "$nsys_status" "$RESULTS/nvtx_ranges.txt"
  else
    echo "== NVTX ranges NOT CHECKED in a trace: no nsys on this machine"
  fi
  # Two ranks need two GPUs (NCCL: one rank per GPU).
  if (( $(bash test/gpu/gpu_count.sh) >= 2 )); then
    log "CUDA tensors through hvd::init at 2 ranks (hvdrun --gloo)"
    bounded "$BUILD/runner/hvdrun" -np 2 --gloo "$BUILD/test/gpu_collective_tests" \
      >"$RESULTS/gpu_collective_tests_np2.log" 2>&1 || status=1
    tail -5 "$RESULTS/gpu_collective_tests_np2.log"
  fi
  # Two hosts simulated here (127.0.0.1, 127.0.0.2); 2x2 with >= 4 GPUs,
  # else 1+1 (allreduce tests only on one GPU): see the script.
  log "hierarchical allreduce of CUDA tensors (HOROVODCPP_HIERARCHICAL_ALLREDUCE=1, two hosts)"
  set +e
  bounded bash "$ROOT/test/gpu/hierarchical_allreduce.sh" "$BUILD/runner/hvdrun" \
    "$BUILD/test/gpu_collective_tests" "$RESULTS/gpu_hierarchical_tests.log"
  hier_status=$?
  set -e
  judge gpu_hierarchical_tests "$hier_status" "$RESULTS/gpu_hierarchical_tests.log"
  log "CUDA tensors staged through pinned host memory onto Gloo (1, 2, 4 ranks sharing GPU 0)"
  for np in 1 2 4; do
    set +e
    HOROVODCPP_GPU_OPERATIONS=gloo CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} \
      bounded "$BUILD/runner/hvdrun" -np $np --gloo "$BUILD/test/gpu_staged_tests" \
      >"$RESULTS/gpu_staged_tests_np$np.log" 2>&1
    staged_status=$?
    set -e
    grep -E "^\[0\].*(PASSED|FAILED|SKIPPED|every GPU test skipped)" "$RESULTS/gpu_staged_tests_np$np.log" | tail -4 || true
    judge "gpu_staged_tests np=$np" "$staged_status" "$RESULTS/gpu_staged_tests_np$np.log"
  done
fi
if [[ -n $python_reason ]]; then
  echo "== horovodcpp.torch CUDA tests NOT RUN: $python_reason"
  status=1
else
  pytest_run() {  # name, np, extra environment..., -- pytest arguments
    local name=$1 np=$2; shift 2
    local env=()
    while [[ $1 != -- ]]; do env+=("$1"); shift; done
    shift
    set +e
    bounded env PYTHONPATH="$BUILD/python" PYTHONUNBUFFERED=1 HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS=120 \
      "${env[@]}" "$BUILD/runner/hvdrun" -np "$np" --gloo \
      "$PY" -m pytest -x -q -rs -p no:cacheprovider --color=no "$@" >"$RESULTS/$name.log" 2>&1
    local rc=$?
    set -e
    grep -E "^\[0\].* (passed|failed|error)" "$RESULTS/$name.log" | tail -2 || true
    judge "$name" "$rc" "$RESULTS/$name.log"
  }
  log "horovodcpp.torch CUDA tensors on NCCL (1 rank, $("$PY" -c 'import torch; print("torch", torch.__version__)'))"
  pytest_run python_cuda_nccl_np1 1 HOROVODCPP_TEST_REQUIRE_GPU=1 -- "$ROOT/test/python/test_torch_cuda.py"
  log "horovodcpp.torch CUDA tensors staged onto Gloo (2 ranks sharing GPU 0)"
  pytest_run python_cuda_staged_np2 2 HOROVODCPP_TEST_REQUIRE_GPU=1 HOROVODCPP_GPU_OPERATIONS=gloo \
    CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} -- "$ROOT/test/python/test_torch_cuda.py"
  log "flight recorder dump on a forced NCCL timeout (1 rank)"
  set +e
  bounded env PYTHONPATH="$BUILD/python" bash "$ROOT/test/gpu/nccl_timeout_flight_recorder.sh" \
    "$BUILD/runner/hvdrun" "$PY" "$RESULTS/nccl_timeout.log"
  timeout_status=$?
  set -e
  judge nccl_timeout_flight_recorder "$timeout_status" "$RESULTS/nccl_timeout.log"
  # The torch.distributed backend needs a newer PyTorch than the Horovod API.
  if PYTHONPATH="$BUILD/python" "$PY" -c 'import sys; from horovodcpp.torch.distributed import backend
sys.exit(backend.torch_version() < backend.MINIMUM_TORCH)' 2>/dev/null; then
    log "torch.distributed backend horovodcpp, CUDA tensors on NCCL (1 rank)"
    pytest_run distributed_cuda_nccl_np1 1 HOROVODCPP_TEST_REQUIRE_GPU=1 -- \
      "$ROOT/test/python_torch_distributed/test_cuda.py"
    log "torch.distributed backend horovodcpp, CUDA tensors staged onto Gloo (2 ranks sharing GPU 0)"
    pytest_run distributed_cuda_staged_np2 2 HOROVODCPP_TEST_REQUIRE_GPU=1 HOROVODCPP_GPU_OPERATIONS=gloo \
      CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0} -- "$ROOT/test/python_torch_distributed/test_cuda.py"
  else
    echo "== torch.distributed backend CUDA tests NOT RUN: $("$PY" -c 'import torch; print("PyTorch", torch.__version__)') is older than the backend needs (docs/torch-distributed.md)"
  fi
  if [[ -z ${HVD_GPU_SKIP_CPU_SUITES:-} ]]; then
    log "the Python suites on this PyTorch (2 ranks)"
    pytest_run python_suites_np2 2 HOROVODCPP_GPU_OPERATIONS=gloo -- "$ROOT/test/python"
  fi
fi
if [[ -n $HAVE_GLOO && -z ${HVD_GPU_SKIP_CPU_SUITES:-} ]]; then
  log "CPU suites over the carried Gloo (1 and 2 ranks)"
  (cd "$BUILD" && bounded ctest -R 'collective_tests_gloo_np[12]$' --output-on-failure) \
    >"$RESULTS/cpu_suites.log" 2>&1 || status=1
  tail -5 "$RESULTS/cpu_suites.log"
fi
log "done: $([[ $status == 0 ]] && echo PASSED || echo FAILED)"
exit $status
