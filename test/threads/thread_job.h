// ThreadJob: a job whose ranks are threads of this process (run_ranks),
// for the backend conformance suite without a launcher. Each rank has a
// Gloo context (its own TCP device on 127.0.0.1) that meets the others
// through one MemoryStore, its GlooController, and the backend under test:
// GlooBackend, or ShmBackend around one.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <ostream>
#include <vector>

#include "backend/gloo/gloo_context.h"
#include "backend/gloo/gloo_controller.h"
#include "core/execution/backend.h"
#include "core/negotiation/controller.h"
#include "store/memory_store.h"

namespace hvd {
namespace threads {

enum class JobBackend { kGloo, kShm };

const char* job_backend_name(JobBackend backend);
inline void PrintTo(JobBackend backend, std::ostream* os) { *os << job_backend_name(backend); }

// One rank's share of a ThreadJob, used only by that rank's thread.
struct ThreadRank {
  Topology topology;
  std::shared_ptr<GlooContext> context;
  std::unique_ptr<GlooController> controller;
  std::unique_ptr<Backend> backend;
};

class ThreadJob {
 public:
  // Bounds every Gloo and shared-memory wait: a rank that left or fell out
  // of step becomes an error on the others, well within run_ranks' limit.
  static constexpr std::chrono::seconds kTimeout{10};

  // Connects `size` ranks on as many threads. A rank that fails is a gtest
  // failure naming it, and the job is not usable().
  ThreadJob(JobBackend backend, int size);
  ~ThreadJob();
  ThreadJob(const ThreadJob&) = delete;
  ThreadJob& operator=(const ThreadJob&) = delete;

  JobBackend backend() const { return backend_; }
  int size() const { return static_cast<int>(ranks_.size()); }
  // Every rank is connected and none has left.
  bool usable() const;

  // Runs body as every rank, each on its own thread (run_ranks). A rank
  // whose body throws leaves the job at once: it closes its connections and
  // gives up its shared-memory waits, so that the others fail in moments
  // rather than at kTimeout. The job is not usable() afterwards.
  void run(const std::function<void(ThreadRank&)>& body);

 private:
  void connect(int rank);
  void leave(int rank);

  JobBackend backend_;
  std::shared_ptr<MemoryStore> store_ = std::make_shared<MemoryStore>();
  std::vector<std::unique_ptr<ThreadRank>> ranks_;
};

}  // namespace threads
}  // namespace hvd
