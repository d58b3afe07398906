// The shared state behind a Work handle: completed once by the coordinator
// thread (value or error), waited on by user threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/negotiation/coordinator_wakeup.h"
#include "horovodcpp/tensor.h"

namespace hvd::detail {

class WorkState {
 public:
  // `wakeup` (may be null): told while a thread waits for this operation,
  // so that its coordinator runs a cycle at once.
  explicit WorkState(std::shared_ptr<CoordinatorWakeup> wakeup = nullptr)
      : wakeup_(std::move(wakeup)) {}

  // `received_splits`: alltoall's rows received from each rank.
  void complete(Tensor output = Tensor(), std::vector<std::int64_t> received_splits = {});
  void fail(std::exception_ptr error);

  // False if the timeout expired first.
  bool wait(std::optional<std::chrono::milliseconds> timeout);
  bool done() const;
  // Runs `callback` after completion (now, if already completed).
  void on_done(std::function<void()> callback);
  std::exception_ptr error() const;
  const Tensor& output() const;                              // valid once done
  const std::vector<std::int64_t>& received_splits() const;  // valid once done

 private:
  void finish(Tensor output, std::vector<std::int64_t> received_splits, std::exception_ptr error);

  const std::shared_ptr<CoordinatorWakeup> wakeup_;
  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
  Tensor output_;
  std::vector<std::int64_t> received_splits_;
  std::vector<std::function<void()>> callbacks_;  // run once, after done_
};

}  // namespace hvd::detail
