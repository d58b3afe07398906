#include "backend/mpi/mpi_wait.h"

#include <sched.h>

#include <algorithm>
#include <sstream>
#include <thread>

#include "core/diagnostics/peer_failure.h"

namespace hvd {

void wait_for_request(MPI_Request* request, const char* what, const MpiWait& how,
                      MpiRollCall& roll_call) {
  using Clock = std::chrono::steady_clock;
  roll_call.check_usable();
  constexpr auto kPoll = std::chrono::microseconds(200);
  constexpr auto kYieldingPoll = std::chrono::milliseconds(1);
  constexpr auto kLongestSleep = std::chrono::microseconds(200);
  // How often a wait looks for other ranks' notices and at its deadline.
  constexpr auto kCheckInterval = std::chrono::milliseconds(10);
  const auto start = Clock::now();
  const auto poll_until =
      start + (how.spin ? Clock::duration(kPoll) : Clock::duration(kYieldingPoll));
  auto next_check = start + kCheckInterval;
  auto sleep = std::chrono::microseconds(10);
  int done = 0;
  for (;;) {
    const int rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) detail::throw_mpi_error(what, rc);
    if (done) return;
    const auto now = Clock::now();
    if (now >= next_check) {
      next_check = now + kCheckInterval;
      const auto window = roll_call_window(how.timeout);
      if (roll_call.notice_pending()) {
        roll_call.give_up(what, "another rank gave up waiting in this collective", window);
      }
      if (now - start >= how.timeout) {
        std::ostringstream cause;
        cause << "this rank waited " << std::chrono::duration<double>(how.timeout).count()
              << " s for it, HOROVODCPP_PEER_TIMEOUT_SECONDS";
        roll_call.give_up(what, cause.str(), window);
      }
    }
    if (!how.sleep) continue;
    if (now < poll_until) {
      if (!how.spin) sched_yield();
      continue;
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, kLongestSleep);
  }
}

}  // namespace hvd
