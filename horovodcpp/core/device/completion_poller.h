// CompletionPoller: a thread of its own that watches GPU events and calls
// each one's callback once it has completed, so the coordinator queues GPU
// work and moves on instead of waiting on the device.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "core/device/gpu_events.h"

namespace hvd {

class CompletionPoller {
 public:
  // Called with null when the event completed, else with the error.
  using Callback = std::function<void(std::exception_ptr)>;
  // Called every polling round while events are pending, with how long the
  // oldest of them has waited; throwing fails every pending event with that
  // error (e.g. NCCL's asynchronous error or a timeout, after aborting the
  // communicator).
  using HealthCheck = std::function<void(std::chrono::steady_clock::duration oldest_wait)>;

  CompletionPoller(GpuEvents& events, HealthCheck health_check = nullptr,
                   std::chrono::microseconds interval = std::chrono::microseconds(50));
  // Pending callbacks get a RankFailure ("shut down").
  ~CompletionPoller();

  // Calls `on_done` once `event` (see record_shared) has completed.
  void watch(std::shared_ptr<void> event, Callback on_done);
  std::size_t pending() const;

 private:
  struct Pending {
    std::shared_ptr<void> event;
    Callback on_done;
    std::chrono::steady_clock::time_point since;
  };
  void loop();
  // Calls back with `error` (null: success) and drops the events.
  void finish(std::list<Pending>& pending, std::exception_ptr error);

  GpuEvents& events_;
  HealthCheck health_check_;
  const std::chrono::microseconds interval_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::list<Pending> pending_;  // in submission order
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace hvd
