// How horovodcpp waits for an MPI collective: never forever. A blocking MPI
// call cannot be bounded, so every collective is started non-blocking and
// polled here until it completes, until the peer timeout passes, or until
// another rank gives up on the communicator; then the roll call names the
// ranks that stopped answering (mpi_roll_call.h).
//
// The control plane busy-polls only briefly (a peer about to arrive
// answers within microseconds; the slowest may take a whole backward pass,
// on the core the training needs), then sleeps between polls. The data
// plane polls without pause: Open MPI progresses a non-blocking collective
// only inside MPI calls, as a blocking one would.
#pragma once

#include <chrono>

#include "backend/mpi/mpi_check.h"  // mpi.h without the C++ bindings
#include "backend/mpi/mpi_roll_call.h"

namespace hvd {

struct MpiWait {
  // Control plane: MPI_Test for 200 us if `spin` (only while every rank of
  // the host has a core), else for 1 ms yielding the core between tests;
  // then it sleeps between tests, 10 us doubling to 200 us.
  bool sleep = true;
  bool spin = true;
  std::chrono::milliseconds timeout{30000};
};

// Completes `request` on the communicator `roll_call` watches, or gives up
// with the RankFailure naming the silent ranks. `what` names the call.
void wait_for_request(MPI_Request* request, const char* what, const MpiWait& how,
                      MpiRollCall& roll_call);

}  // namespace hvd
