// The shared state behind a Work handle: completed once by the coordinator
// thread (value or error), waited on by user threads. A collective of CUDA
// tensors completes in two steps: once queued on the GPU its result is in
// place in that stream's order, so wait() returns and only makes the
// caller's stream wait for it (no host wait for the GPU, as DDP's work.wait());
// it is finished once the GPU has run it (the completion poller).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/diagnostics/flight_recorder.h"
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
  // Queued on a GPU stream: wait() returns from now on, and the first one
  // calls `order_caller` (which makes the caller's stream wait for the
  // result; it may throw; empty: nothing to order). finish_on_device()
  // follows.
  void complete_on_device(std::function<void()> order_caller, Tensor output = Tensor(),
                          std::vector<std::int64_t> received_splits = {});
  // The GPU has run it (`error` null), or failed: the error becomes the
  // operation's. Runs the on_done callbacks.
  void finish_on_device(std::exception_ptr error);

  // False if the timeout expired first.
  bool wait(std::optional<std::chrono::milliseconds> timeout);
  // wait() returns at once.
  bool done() const;
  // Done, and for a CUDA collective also run on the GPU.
  bool finished() const;
  // Runs `callback` once finished (now, if already).
  void on_done(std::function<void()> callback);
  std::exception_ptr error() const;
  // Its outcome goes to `recorder`'s record `number` when it finishes
  // (set before it is queued; `recorder` may be null).
  void record_in(FlightRecorder* recorder, std::uint64_t number) {
    recorder_ = recorder;
    flight_number_ = number;
  }
  const Tensor& output() const;                              // valid once done
  const std::vector<std::int64_t>& received_splits() const;  // valid once done

 private:
  void finish(Tensor output, std::vector<std::int64_t> received_splits, std::exception_ptr error);
  // Under the lock: the callbacks to run now that the operation finished.
  std::vector<std::function<void()>> take_callbacks();
  // Unlocked, once finished: its flight recorder record's outcome.
  void record_outcome(const std::exception_ptr& error);

  const std::shared_ptr<CoordinatorWakeup> wakeup_;
  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::atomic<bool> done_flag_{false};  // done_, for polling without the lock
  bool finished_ = false;
  std::function<void()> order_caller_;  // until the first wait() or finish_on_device()
  std::exception_ptr error_;
  Tensor output_;
  std::vector<std::int64_t> received_splits_;
  std::vector<std::function<void()>> callbacks_;  // run once, after finished_
  FlightRecorder* recorder_ = nullptr;
  std::uint64_t flight_number_ = 0;
};

}  // namespace hvd::detail
