// CoordinatorWakeup: what wakes a process set's sleeping coordinator before
// its next cycle is due. Submissions alone do not: they gather, so that a
// burst (a backward pass) is negotiated and fused together. A thread that
// waits for one of the set's operations (Work::wait) does: it wants a result
// now. Such a thread first offers to run the cycles itself (help): a
// blocking collective then costs no hand-over to the coordinator's thread
// and back, which on a busy host costs more than a small collective.
// Shared by the set's TensorQueue, its Works (which may outlive the queue)
// and its Coordinator, which sleeps on it.
//
// While the rank's own waiting threads run the cycles (a loop of blocking
// collectives), the coordinator's thread has nothing to do: it goes dormant
// and looks only rarely (Coordinator::loop), instead of waking every cycle
// time to take a core from a rank. A submission then wakes it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <shared_mutex>

namespace hvd {

class CoordinatorWakeup {
 public:
  // A thread starts (and stops) waiting for an operation not done yet.
  void begin_wait() {
    waiters_.fetch_add(1);
    wake();
  }
  void end_wait() { waiters_.fetch_sub(1); }
  int waiters() const { return waiters_.load(); }

  // Runs the coordinator's cycles on the calling thread until `done()`;
  // false if it could not (another thread runs them, the coordinator
  // stopped): then the caller sleeps as usual.
  using Helper = std::function<bool(const std::function<bool()>& done)>;
  bool help(const std::function<bool()>& done) {
    std::shared_lock<std::shared_mutex> lock(helper_mutex_);
    return helper_ && helper_(done);
  }
  // The coordinator's (null: none from now on; returns once no thread runs
  // the previous one).
  void set_helper(Helper helper) {
    std::unique_lock<std::shared_mutex> lock(helper_mutex_);
    helper_ = std::move(helper);
  }
  // How long a waiting thread polls for its result before it sleeps.
  void set_wait_spin(std::chrono::microseconds spin) { wait_spin_ = spin; }
  std::chrono::microseconds wait_spin() const { return wait_spin_.load(); }

  // Wakes the sleeper, which then checks its condition.
  void wake() {
    { std::lock_guard<std::mutex> lock(mutex_); }  // a sleeper is either waiting or rechecks
    wakeup_.notify_all();
  }

  // The coordinator's thread is dormant from set_dormant(true) until a
  // submission (submitted()) or set_dormant(false). A submission that finds
  // it dormant wakes it: its sleep checks dormant() (seq_cst both sides:
  // either the submission sees the flag or the coordinator, having set it,
  // sees the submission).
  void set_dormant(bool dormant) { dormant_.store(dormant); }
  bool dormant() const { return dormant_.load(); }
  void submitted() {
    if (dormant_.load() && dormant_.exchange(false)) wake();
  }

  // From now on every sleep returns at once (the coordinator is stopping).
  void interrupt() {
    interrupted_ = true;
    wake();
  }

  // Returns true once `ready()` holds (or after interrupt()), false at
  // `deadline`. Polls for `spin` first: a condition variable wake-up costs
  // tens of microseconds, more than a whole small collective.
  template <typename Ready>
  bool sleep_until(std::chrono::steady_clock::time_point deadline, std::chrono::microseconds spin,
                   Ready ready) {
    const auto woken = [&] { return interrupted_.load() || ready(); };
    const auto spin_until = std::min(deadline, std::chrono::steady_clock::now() + spin);
    while (!woken()) {
      if (std::chrono::steady_clock::now() >= spin_until) {
        std::unique_lock<std::mutex> lock(mutex_);
        return wakeup_.wait_until(lock, deadline, woken);
      }
    }
    return true;
  }

 private:
  std::shared_mutex helper_mutex_;
  Helper helper_;
  std::atomic<int> waiters_{0};
  std::atomic<bool> interrupted_{false};
  std::atomic<bool> dormant_{false};
  std::atomic<std::chrono::microseconds> wait_spin_{std::chrono::microseconds(0)};
  std::mutex mutex_;
  std::condition_variable wakeup_;
};

}  // namespace hvd
