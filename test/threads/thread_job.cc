#include "threads/thread_job.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "backend/gloo/gloo_backend.h"
#include "backend/shm/shm_backend.h"
#include "threads/rank_threads.h"

namespace hvd {
namespace threads {
namespace {

// Every rank on one host.
Topology single_host(int rank, int size) {
  Topology topology;
  topology.rank = topology.local_rank = rank;
  topology.size = topology.local_size = size;
  return topology;
}

// 4 KiB slots in 3 stages: a tensor of the suite spans many chunks and
// reuses every stage, as in shm/test_shm_backend.cc.
ShmOptions small_slots() {
  ShmOptions options;
  options.slot_bytes = 4096;
  options.stages = 3;
  options.timeout = ThreadJob::kTimeout;
  return options;
}

}  // namespace

const char* job_backend_name(JobBackend backend) {
  return backend == JobBackend::kShm ? "shm" : "gloo";
}

ThreadJob::ThreadJob(JobBackend backend, int size) : backend_(backend), ranks_(size) {
  run_ranks(size, [this](int rank) { connect(rank); });
}

ThreadJob::~ThreadJob() = default;

bool ThreadJob::usable() const {
  for (const auto& rank : ranks_) {
    if (!rank) return false;
  }
  return true;
}

void ThreadJob::connect(int rank) {
  auto member = std::make_unique<ThreadRank>();
  member->topology = single_host(rank, size());
  GlooOptions options;
  options.topology = member->topology;
  options.store = store_;
  options.network.hostname = "127.0.0.1";
  options.timeout = kTimeout;
  options.prefix = "job/";  // one store per job
  member->context = GlooContext::create(options);
  member->controller = std::make_unique<GlooController>(member->context);
  auto gloo = std::make_unique<GlooBackend>(member->context);
  if (backend_ == JobBackend::kShm) {
    member->backend =
        std::make_unique<ShmBackend>(std::move(gloo), *member->controller, small_slots());
  } else {
    member->backend = std::move(gloo);
  }
  ranks_[rank] = std::move(member);
}

void ThreadJob::leave(int rank) {
  if (auto* shm = dynamic_cast<ShmBackend*>(ranks_[rank]->backend.get())) {
    shm->abandon("rank " + std::to_string(rank) + "'s test failed");
  }
  ranks_[rank].reset();  // closes its Gloo connections
}

void ThreadJob::run(const std::function<void(ThreadRank&)>& body) {
  if (!usable()) {
    ADD_FAILURE() << "the " << job_backend_name(backend_) << " job of " << size()
                  << " ranks lost a rank before";
    return;
  }
  run_ranks(size(), [&](int rank) {
    try {
      body(*ranks_[rank]);
    } catch (...) {
      leave(rank);
      throw;
    }
  });
}

}  // namespace threads
}  // namespace hvd
