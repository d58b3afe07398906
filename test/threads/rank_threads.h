// Threads as ranks: runs one function as every rank of a job, each rank on
// a thread of this process, so that collective tests need no launcher.
#pragma once

#include <chrono>
#include <functional>

namespace hvd {
namespace threads {

// Long enough for any collective of the tests on a loaded machine; a run
// that takes longer has a wait without a bound.
constexpr std::chrono::seconds kRunLimit{120};

// Runs body(rank) for every rank 0 .. size - 1, each on its own thread, and
// returns when all are done. Every gtest failure inside names its rank
// ("rank r of N", through a per-thread SCOPED_TRACE); an exception that
// escapes body is a failure naming the rank and the exception. A thread
// cannot be stopped, so if the ranks are not done within `limit` the
// process prints which ranks still run, in which test, and exits with 1.
void run_ranks(int size, const std::function<void(int rank)>& body,
               std::chrono::milliseconds limit = kRunLimit);

}  // namespace threads
}  // namespace hvd
