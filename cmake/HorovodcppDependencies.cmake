# OpenSSL's libcrypto (HMAC-SHA256, random nonces) authenticates every
# connection to the job's rendezvous store and TCP control plane.
find_package(OpenSSL REQUIRED COMPONENTS Crypto)

# One option per backend: auto-detected when left unset, a configure error
# when requested (ON) but missing.
set(HVD_WITH_MPI AUTO CACHE STRING "Build the MPI backend (ON, OFF or AUTO)")

if(HVD_WITH_MPI)  # AUTO and ON are both true here
  if(HVD_WITH_MPI STREQUAL "AUTO")
    find_package(MPI COMPONENTS C)
  else()
    find_package(MPI REQUIRED COMPONENTS C)
  endif()
endif()
set(HVD_HAVE_MPI ${MPI_C_FOUND})
if(HVD_HAVE_MPI)
  message(STATUS "horovodcpp MPI: ${MPI_C_LIBRARIES} (MPI ${MPI_C_VERSION})")
elseif(HVD_WITH_MPI)
  message(STATUS "horovodcpp MPI: not found (`module load openmpi`, or put mpicc on PATH): "
                 "built without MPI")
endif()

set(HVD_WITH_GLOO AUTO CACHE STRING "Build the Gloo backend (ON, OFF or AUTO)")
if(HVD_WITH_GLOO)
  if(HVD_WITH_GLOO STREQUAL "AUTO")
    find_package(Gloo CONFIG QUIET)
  else()
    find_package(Gloo CONFIG REQUIRED)
  endif()
endif()
if(TARGET gloo)
  set(HVD_HAVE_GLOO TRUE)
  message(STATUS "horovodcpp Gloo: ${Gloo_DIR}")
else()
  set(HVD_HAVE_GLOO FALSE)
  if(HVD_WITH_GLOO)
    # No Gloo is packaged on PyPI: a pip build on a cluster is MPI-only unless
    # Gloo was installed there (Gloo_DIR or CMAKE_PREFIX_PATH).
    message(STATUS "horovodcpp Gloo: not found (libgloo-dev, or a Gloo install on "
                   "CMAKE_PREFIX_PATH): built without Gloo")
  endif()
endif()


# GPU support: the CUDA runtime (device tensors, events, the batched copy
# kernel) and NCCL (collectives on device memory). Both auto-detected in the
# CUDA toolkit (CUDAToolkit_ROOT or /usr/local/cuda); NCCL needs CUDA.
set(HVD_WITH_CUDA AUTO CACHE STRING "Build CUDA tensor support (ON, OFF or AUTO)")
set(HVD_WITH_NCCL AUTO CACHE STRING "Build the NCCL backend (ON, OFF or AUTO)")
set(HVD_HAVE_CUDA FALSE)
set(HVD_HAVE_NCCL FALSE)
set(HVD_CUDA_VERSION "")
set(HVD_NCCL_VERSION "")
if(HVD_WITH_CUDA)
  if(HVD_WITH_CUDA STREQUAL "AUTO")
    find_package(CUDAToolkit)
  else()
    find_package(CUDAToolkit REQUIRED)
  endif()
  if(CUDAToolkit_FOUND AND CUDAToolkit_NVCC_EXECUTABLE)
    if(NOT CMAKE_CUDA_COMPILER)
      set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
    endif()
    # Hopper (H100/H200) machine code plus its PTX, which newer GPUs JIT:
    # one architecture keeps nvcc's time low. Override with -DCMAKE_CUDA_ARCHITECTURES.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    set(HVD_HAVE_CUDA TRUE)
    set(HVD_CUDA_VERSION ${CUDAToolkit_VERSION})
  elseif(NOT HVD_WITH_CUDA STREQUAL "AUTO")
    message(FATAL_ERROR "HVD_WITH_CUDA=ON but nvcc was not found in the CUDA toolkit")
  endif()
endif()
if(HVD_WITH_NCCL)
  if(NOT HVD_HAVE_CUDA AND NOT HVD_WITH_NCCL STREQUAL "AUTO")
    message(FATAL_ERROR "HVD_WITH_NCCL=ON needs CUDA (HVD_WITH_CUDA), which is off or missing")
  endif()
  if(HVD_HAVE_CUDA)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
      set(nccl_version)
      foreach(part MAJOR MINOR PATCH)
        file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h line REGEX "^#define NCCL_${part} +[0-9]+")
        string(REGEX MATCH "[0-9]+$" number "${line}")
        list(APPEND nccl_version ${number})
      endforeach()
      list(JOIN nccl_version "." HVD_NCCL_VERSION)
      add_library(hvd_nccl INTERFACE IMPORTED)
      target_include_directories(hvd_nccl INTERFACE ${NCCL_INCLUDE_DIR})
      target_link_libraries(hvd_nccl INTERFACE ${NCCL_LIBRARY})
      set(HVD_HAVE_NCCL TRUE)
    elseif(NOT HVD_WITH_NCCL STREQUAL "AUTO")
      message(FATAL_ERROR "HVD_WITH_NCCL=ON but nccl.h or libnccl was not found "
                          "(set NCCL_INCLUDE_DIR and NCCL_LIBRARY)")
    endif()
  endif()
endif()
# NVTX ranges (core/diagnostics/nvtx_ranges.h): the CUDA toolkit's
# header-only NVTX 3, which loads a profiler's library only when one runs.
set(HVD_HAVE_NVTX FALSE)
if(HVD_HAVE_CUDA)
  find_path(NVTX3_INCLUDE_DIR nvtx3/nvToolsExt.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  if(NVTX3_INCLUDE_DIR)
    set(HVD_HAVE_NVTX TRUE)
  endif()
endif()
message(STATUS "horovodcpp GPU: CUDA=${HVD_HAVE_CUDA} ${HVD_CUDA_VERSION} "
               "NCCL=${HVD_HAVE_NCCL} ${HVD_NCCL_VERSION} NVTX=${HVD_HAVE_NVTX}")

# hvd::init needs a CPU transport (the control plane). A build with neither
# is only allowed for the GPU suites on a machine without MPI or Gloo
# (scripts/gpu_tests.sh): their tests drive the NCCL backend directly.
if(NOT HVD_HAVE_MPI AND NOT HVD_HAVE_GLOO AND NOT HVD_HAVE_NCCL)
  message(FATAL_ERROR "horovodcpp needs at least one CPU transport: install Open MPI "
                      "(libopenmpi-dev openmpi-bin) or Gloo (libgloo-dev), or run scripts/setup.sh")
endif()
# The shared-memory path for ranks on one host (backend/shm): Linux (it
# reads /proc for peer liveness) with POSIX shared memory.
set(HVD_WITH_SHM AUTO CACHE STRING "Build the shared-memory intra-host path (ON, OFF or AUTO)")
set(HVD_HAVE_SHM FALSE)
set(HVD_SHM_LIBRARIES)
if(HVD_WITH_SHM AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
  include(CheckSymbolExists)
  check_symbol_exists(shm_open "sys/mman.h" HVD_SHM_OPEN_IN_LIBC)
  if(HVD_SHM_OPEN_IN_LIBC)
    set(HVD_HAVE_SHM TRUE)
  else()  # glibc before 2.34
    find_library(HVD_RT_LIBRARY rt)
    if(HVD_RT_LIBRARY)
      set(HVD_HAVE_SHM TRUE)
      set(HVD_SHM_LIBRARIES ${HVD_RT_LIBRARY})
    endif()
  endif()
endif()
if(HVD_WITH_SHM STREQUAL "ON" AND NOT HVD_HAVE_SHM)
  message(FATAL_ERROR "HVD_WITH_SHM=ON needs Linux with POSIX shared memory (shm_open)")
endif()
message(STATUS "horovodcpp backends: MPI=${HVD_HAVE_MPI} Gloo=${HVD_HAVE_GLOO} shm=${HVD_HAVE_SHM}")

if(NOT HVD_HAVE_MPI AND NOT HVD_HAVE_GLOO)
  message(WARNING "neither MPI nor Gloo: hvd::init() will fail; only the GPU suites are useful")
endif()

# Python bindings: the interpreter's development files, pybind11 and the
# DLPack header (tensors cross into C++ as DLPack, so no framework headers).
# Pass -DPython3_EXECUTABLE=... to pick the interpreter that has PyTorch.
set(HVD_WITH_PYTHON AUTO CACHE STRING "Build the Python bindings (ON, OFF or AUTO)")
set(HVD_HAVE_PYTHON FALSE)
if(HVD_WITH_PYTHON)
  if(HVD_WITH_PYTHON STREQUAL "AUTO")
    find_package(Python3 COMPONENTS Interpreter Development.Module)
    find_package(pybind11 CONFIG QUIET)
  else()
    find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module)
    find_package(pybind11 CONFIG REQUIRED)
  endif()
  # The system's header (libdlpack-dev) if any, else the copy in third_party/
  # (a pip build on a machine without it).
  find_path(DLPACK_INCLUDE_DIR dlpack/dlpack.h
            PATHS ${PROJECT_SOURCE_DIR}/third_party/dlpack/include)
  if(Python3_Development.Module_FOUND AND pybind11_FOUND)
    set(HVD_HAVE_PYTHON TRUE)
  endif()
endif()
message(STATUS "horovodcpp Python bindings: ${HVD_HAVE_PYTHON} (Python ${Python3_VERSION}, "
               "pybind11 ${pybind11_VERSION}, ${DLPACK_INCLUDE_DIR}/dlpack/dlpack.h)")
