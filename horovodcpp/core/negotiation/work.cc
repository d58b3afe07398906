#include "horovodcpp/work.h"

#include "base/check.h"
#include "base/error_message.h"
#include "core/negotiation/work_state.h"

namespace hvd {
namespace detail {

void WorkState::complete(Tensor output, std::vector<std::int64_t> received_splits) {
  finish(std::move(output), std::move(received_splits), nullptr);
}

void WorkState::fail(std::exception_ptr error) { finish(Tensor(), {}, std::move(error)); }

void WorkState::finish(Tensor output, std::vector<std::int64_t> received_splits,
                       std::exception_ptr error) {
  std::vector<std::function<void()>> callbacks;
  std::exception_ptr outcome;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;  // the first outcome wins (e.g. shutdown racing completion)
    done_ = true;
    done_flag_ = true;
    output_ = std::move(output);
    received_splits_ = std::move(received_splits);
    error_ = std::move(error);
    outcome = error_;
    callbacks = take_callbacks();
  }
  done_cv_.notify_all();
  record_outcome(outcome);
  for (auto& callback : callbacks) callback();  // unlocked: they may query the state
}

void WorkState::complete_on_device(std::function<void()> order_caller, Tensor output,
                                   std::vector<std::int64_t> received_splits) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;
    done_ = true;
    done_flag_ = true;
    order_caller_ = std::move(order_caller);
    output_ = std::move(output);
    received_splits_ = std::move(received_splits);
  }
  done_cv_.notify_all();
}

void WorkState::finish_on_device(std::exception_ptr error) {
  std::vector<std::function<void()>> callbacks;
  std::exception_ptr outcome;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    if (error && !error_) error_ = std::move(error);
    order_caller_ = nullptr;  // the result is there: nothing left to order after
    outcome = error_;
    callbacks = take_callbacks();
  }
  record_outcome(outcome);
  for (auto& callback : callbacks) callback();
}

void WorkState::record_outcome(const std::exception_ptr& error) {
  if (recorder_ == nullptr) return;
  const auto now = std::chrono::steady_clock::now();
  if (error) {
    recorder_->failed(flight_number_, message_of(error), now);
  } else {
    recorder_->completed(flight_number_, now);
  }
}

std::vector<std::function<void()>> WorkState::take_callbacks() {
  finished_ = true;
  std::vector<std::function<void()>> callbacks;
  callbacks.swap(callbacks_);
  return callbacks;
}

bool WorkState::wait(std::optional<std::chrono::milliseconds> timeout) {
  const auto deadline = timeout ? std::chrono::steady_clock::now() + *timeout
                                : std::chrono::steady_clock::time_point::max();
  if (wakeup_ && !done_flag_.load(std::memory_order_acquire)) {
    // Run the cycles that complete it on this thread, if nobody else does.
    // (Two pointers: the std::function holds them without allocating.)
    wakeup_->help([this, &deadline] {
      return done_flag_.load(std::memory_order_acquire) ||
             (deadline != std::chrono::steady_clock::time_point::max() &&
              std::chrono::steady_clock::now() >= deadline);
    });
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (!done_) {
    // The coordinator lets submissions gather until its next cycle is due;
    // a waiting thread needs the result now.
    if (wakeup_) wakeup_->begin_wait();
    // Polls first where cores are spare (CoordinatorWakeup::wait_spin): a
    // wake-up from sleep costs more than a small collective. On a machine
    // without spare cores the poll would take the coordinator's core.
    const auto spin = wakeup_ ? wakeup_->wait_spin() : std::chrono::microseconds(0);
    if (spin.count() > 0 && std::chrono::steady_clock::now() + spin <= deadline) {
      lock.unlock();
      const auto until = std::chrono::steady_clock::now() + spin;
      while (!done_flag_.load(std::memory_order_acquire) &&
             std::chrono::steady_clock::now() < until) {
      }
      lock.lock();
    }
    bool completed = true;
    if (!timeout) {
      done_cv_.wait(lock, [this] { return done_; });
    } else {
      completed = done_cv_.wait_until(lock, deadline, [this] { return done_; });
    }
    if (wakeup_) wakeup_->end_wait();
    if (!completed) return false;
  }
  if (order_caller_) {
    std::function<void()> order = std::move(order_caller_);
    order_caller_ = nullptr;
    lock.unlock();
    order();
  }
  return true;
}

void WorkState::on_done(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!finished_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

bool WorkState::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

bool WorkState::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

std::exception_ptr WorkState::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

const Tensor& WorkState::output() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return output_;
}

const std::vector<std::int64_t>& WorkState::received_splits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return received_splits_;
}

}  // namespace detail

Work::Work(std::shared_ptr<detail::WorkState> state) : state_(std::move(state)) {}

void Work::wait(std::optional<std::chrono::milliseconds> timeout) const {
  HVD_CHECK(state_, InvalidArgument, "wait() on an empty Work handle");
  if (!state_->wait(timeout)) {
    HVD_THROW(Timeout, "operation did not complete within " << timeout->count()
                                                            << " ms; it is still in flight");
  }
  if (auto error = state_->error()) std::rethrow_exception(error);
}

bool Work::poll() const {
  HVD_CHECK(state_, InvalidArgument, "poll() on an empty Work handle");
  return state_->finished();
}

void Work::on_done(std::function<void()> callback) const {
  HVD_CHECK(state_, InvalidArgument, "on_done() on an empty Work handle");
  state_->on_done(std::move(callback));
}

std::exception_ptr Work::error() const {
  HVD_CHECK(state_, InvalidArgument, "error() on an empty Work handle");
  return state_->error();
}

const Tensor& Work::output() const {
  wait();
  return state_->output();
}

const std::vector<std::int64_t>& Work::received_splits() const {
  wait();
  return state_->received_splits();
}

}  // namespace hvd
