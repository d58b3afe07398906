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
else()
  set(HVD_HAVE_GLOO FALSE)
endif()

if(NOT HVD_HAVE_MPI AND NOT HVD_HAVE_GLOO)
  message(FATAL_ERROR "horovodcpp needs at least one CPU transport: install Open MPI "
                      "(libopenmpi-dev openmpi-bin) or Gloo (libgloo-dev), or run scripts/setup.sh")
endif()
message(STATUS "horovodcpp backends: MPI=${HVD_HAVE_MPI} Gloo=${HVD_HAVE_GLOO}")

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
  find_path(DLPACK_INCLUDE_DIR dlpack/dlpack.h)
  if(Python3_Development.Module_FOUND AND pybind11_FOUND AND DLPACK_INCLUDE_DIR)
    set(HVD_HAVE_PYTHON TRUE)
  elseif(NOT HVD_WITH_PYTHON STREQUAL "AUTO")
    message(FATAL_ERROR "HVD_WITH_PYTHON=ON but the DLPack header (libdlpack-dev) is missing")
  endif()
endif()
message(STATUS "horovodcpp Python bindings: ${HVD_HAVE_PYTHON}")
