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
