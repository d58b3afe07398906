// How the control plane waits for a collective: a blocking MPI call
// busy-polls for as long as the slowest rank takes to arrive (a whole
// backward pass), on the core the training needs. Waiting on a
// non-blocking request instead, we poll briefly (a peer that is about to
// arrive answers within microseconds), then sleep between polls.
#pragma once

#include "backend/mpi/mpi_check.h"  // mpi.h without the C++ bindings

namespace hvd {

// Completes `request` (MPI_Test: spin ~50 us, then sleep 10 us doubling to
// 200 us between tests). `what` names the call in errors.
void wait_for_request(MPI_Request* request, const char* what);

}  // namespace hvd
