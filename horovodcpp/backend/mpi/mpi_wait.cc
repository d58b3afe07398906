#include "backend/mpi/mpi_wait.h"

#include <algorithm>
#include <chrono>
#include <thread>


namespace hvd {

void wait_for_request(MPI_Request* request, const char* what) {
  using Clock = std::chrono::steady_clock;
  constexpr auto kSpin = std::chrono::microseconds(200);
  constexpr auto kLongestSleep = std::chrono::microseconds(200);
  const auto spin_until = Clock::now() + kSpin;
  auto sleep = std::chrono::microseconds(10);
  int done = 0;
  for (;;) {
    const int rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) detail::throw_mpi_error(what, rc);
    if (done) return;
    if (Clock::now() < spin_until) continue;
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, kLongestSleep);
  }
}

}  // namespace hvd
