// The one place that includes <mpi.h>, and HVD_MPI_CHECK(call): every MPI
// call goes through it, so a failure becomes an hvd::BackendError naming the
// call and MPI's own description of it. The communicators use
// MPI_ERRORS_RETURN, so errors reach us as codes.
#pragma once

// Only the C API is used; the deprecated C++ bindings would need libmpi_cxx
// and warn under -Wextra.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <string>

#include "horovodcpp/errors.h"

namespace hvd {
namespace detail {

[[noreturn]] inline void throw_mpi_error(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  std::string description;
  if (MPI_Error_string(code, text, &length) == MPI_SUCCESS) {
    description.assign(text, static_cast<std::size_t>(length));
  } else {
    description = "unknown MPI error";
  }
  throw BackendError(std::string("MPI call failed: ") + call + ": " + description +
                     " (error code " + std::to_string(code) + ")");
}

}  // namespace detail
}  // namespace hvd

#define HVD_MPI_CHECK(call)                                                             \
  do {                                                                                  \
    const int hvd_mpi_rc_ = (call);                                                     \
    if (hvd_mpi_rc_ != MPI_SUCCESS) ::hvd::detail::throw_mpi_error(#call, hvd_mpi_rc_); \
  } while (0)
