#include "backend/mpi/mpi_wait.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace hvd {

void wait_for_request(MPI_Request* request, const char* what, bool spin) {
  using Clock = std::chrono::steady_clock;
  // Spinning, the wait answers within microseconds; with more ranks than
  // cores, the peer we wait for may need this core: yield it between polls.
  constexpr auto kPoll = std::chrono::microseconds(200);
  constexpr auto kYieldingPoll = std::chrono::milliseconds(1);
  constexpr auto kLongestSleep = std::chrono::microseconds(200);
  const auto poll_until =
      Clock::now() + (spin ? Clock::duration(kPoll) : Clock::duration(kYieldingPoll));
  auto sleep = std::chrono::microseconds(10);
  int done = 0;
  for (;;) {
    const int rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) detail::throw_mpi_error(what, rc);
    if (done) return;
    if (Clock::now() < poll_until) {
      if (!spin) sched_yield();
      continue;
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, kLongestSleep);
  }
}

}  // namespace hvd
