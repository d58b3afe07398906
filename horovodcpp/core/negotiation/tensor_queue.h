// TensorQueue: submissions from user threads, handed to the coordinator.
// It also owns the in-flight table (name -> entry) that catches duplicate
// names and that responses are matched against.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/negotiation/coordinator_wakeup.h"
#include "core/negotiation/message.h"
#include "core/negotiation/work_state.h"
#include "horovodcpp/tensor.h"

namespace hvd {

struct TensorEntry {
  Request request;
  TensorView input;
  TensorView output;  // allreduce output; equals input when in place
  std::shared_ptr<detail::WorkState> work;
  // CUDA tensors: the event marking the input ready on input.stream
  // (DeviceOperations::record_ready); null otherwise.
  std::shared_ptr<void> ready_event;
  // A joined rank's zeros (JoinedZeros::make): `input` is host
  // memory whatever request.device says (another rank's), or, for
  // device-side operations (NCCL), no memory at all (null data); no caller
  // waits for the Work.
  bool joined = false;
  // When the user submitted it, while the timeline records (its QUEUE
  // phase); else the epoch.
  std::chrono::steady_clock::time_point submitted{};
};

class TensorQueue {
 public:
  // Queues a submission. Throws InvalidArgument if this rank already has a
  // tensor of that name in flight, or the closing error once closed.
  // A submission wakes a dormant coordinator (CoordinatorWakeup), unless
  // `caller_waits`: its thread waits for it at once, and that wait runs the
  // cycles or wakes the coordinator itself.
  void push(TensorEntry entry, bool caller_waits = false);
  // Queues every entry, or none if any of them would be refused.
  void push_all(std::vector<TensorEntry> entries);
  // Appends the requests queued since the last call to `requests`, in
  // submission order; their entries stay in flight until take().
  // `submitted`, if given, receives each one's submission time.
  void pop_new_requests(std::vector<Request>& requests,
                        std::vector<std::chrono::steady_clock::time_point>* submitted = nullptr);
  // Removes and returns the in-flight entry of `name`, if there is one.
  std::optional<TensorEntry> try_take(const std::string& name);
  // The input of the in-flight entry `name` (null if none): valid until
  // take(), for the thread that will take() it.
  const TensorView* input_of(const std::string& name) const;

  // A blocking collective that its caller runs in a cycle of its own
  // (Coordinator::run_alone) is in flight without an entry: while nothing
  // else is, reserve_alone() holds its name (`name` must outlive the
  // reservation; pushes of it are refused) and returns true; false if
  // other entries are in flight or the queue is closed. It ends with
  // release_alone(), or with adopt_alone(), which makes the call an entry
  // in flight (not a new submission: its request has gone out).
  bool reserve_alone(const std::string* name);
  void release_alone();
  void adopt_alone(TensorEntry entry);

  // What this queue's Works signal when a thread waits for them.
  const std::shared_ptr<CoordinatorWakeup>& wakeup() const { return wakeup_; }
  // New submissions of at least `bytes` in all need a cycle at once: a full
  // fusion buffer gains nothing from waiting (0: every submission).
  void set_urgent_bytes(std::size_t bytes) { urgent_bytes_ = bytes; }
  // A cycle is needed now: a thread waits while this rank has submissions
  // in flight, or the new ones reach the urgent bytes.
  bool urgent() const;
  // Submissions wait for the next cycle.
  bool has_new() const { return new_count_.load() > 0; }
  // Returns once urgent() (true) or at `deadline` (false); polls for `spin`
  // first.
  bool wait_until_urgent(std::chrono::steady_clock::time_point deadline,
                         std::chrono::microseconds spin);
  // Returns once there are new submissions (true) or at `deadline` (false).
  // Only urgent pushes wake it early: call it while urgent().
  bool wait_for_new(std::chrono::steady_clock::time_point deadline);

  // Refuses further pushes with `reason` and returns every entry left.
  std::vector<TensorEntry> close(std::exception_ptr reason);

 private:
  // After new entries went in (under `lock`): counts them, unlocks, and
  // wakes the coordinator if a cycle is needed now or it is dormant (unless
  // `caller_waits`, see push).
  void published(std::unique_lock<std::mutex>& lock, std::size_t bytes, bool caller_waits);

  mutable std::mutex mutex_;
  std::shared_ptr<CoordinatorWakeup> wakeup_ = std::make_shared<CoordinatorWakeup>();
  std::atomic<std::size_t> urgent_bytes_{0};
  std::atomic<std::size_t> new_count_{0};    // new_entries_.size(), readable without the lock
  std::atomic<std::size_t> new_bytes_{0};    // their input bytes
  std::atomic<std::size_t> entry_count_{0};  // entries_.size(), readable without the lock
  std::unordered_map<std::string, TensorEntry> entries_;
  decltype(entries_)::node_type spare_;  // an erased node, for the next push
  // Submitted since the last pop, in order: entries_'s own elements (a map
  // node stays put until erased; try_take drops one taken before its pop).
  std::vector<const TensorEntry*> new_entries_;
  const std::string* alone_ = nullptr;  // reserve_alone's name
  std::exception_ptr closed_reason_;
};

}  // namespace hvd
