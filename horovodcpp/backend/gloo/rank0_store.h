// A rendezvous store that rank 0 hosts itself, for launchers that start
// the ranks and run no store of their own (srun with no launcher, torchrun,
// a plain env:// launch): rank 0 serves it on `port` of every interface of
// its host, and the others connect to `host`:`port`.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "store/store.h"

namespace hvd {

struct Rank0StorePlace {
  std::string job;   // how errors name the job, e.g. "Slurm step 12.0"
  std::string host;  // where rank 0 runs, as the other ranks reach it
  int port = 0;
  std::string secret;  // the store's HMAC key
};

// Rank 0's store (the server lives as long as the returned pointer), or
// another rank's client of it. Throws BackendError naming the host and
// port when rank 0 cannot bind it or a rank cannot reach it in `timeout`.
std::shared_ptr<Store> rank0_store(const Rank0StorePlace& place, int rank,
                                   std::chrono::milliseconds timeout);

// HOROVODCPP_JOB_SECRET when the job exports one; else `fallback` (a value
// every rank of the job computes alike, which keeps out other jobs' strays
// but not a user who can learn it: said once by rank 0 when `guessable`).
std::string job_secret_or(const std::string& fallback, bool guessable, const std::string& job,
                          int rank);

}  // namespace hvd
