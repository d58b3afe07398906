// How the control plane waits for a collective: a blocking MPI call
// busy-polls for as long as the slowest rank takes to arrive (a whole
// backward pass), on the core the training needs. Waiting on a
// non-blocking request instead, we poll briefly (a peer that is about to
// arrive answers within microseconds), then sleep between polls.
#pragma once

#include "backend/mpi/mpi_check.h"  // mpi.h without the C++ bindings

namespace hvd {

// Completes `request`: MPI_Test for 200 us if `spin` (only while every rank
// of the host has a core), else for 1 ms yielding the core between tests;
// then it sleeps between tests, 10 us doubling to 200 us. `what` names the
// call in errors.
void wait_for_request(MPI_Request* request, const char* what, bool spin);

}  // namespace hvd
