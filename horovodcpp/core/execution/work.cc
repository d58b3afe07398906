#include "horovodcpp/work.h"

#include "base/check.h"
#include "core/execution/work_state.h"

namespace hvd {
namespace detail {

void WorkState::complete(Tensor output, std::vector<std::int64_t> received_splits) {
  finish(std::move(output), std::move(received_splits), nullptr);
}

void WorkState::fail(std::exception_ptr error) { finish(Tensor(), {}, std::move(error)); }

void WorkState::finish(Tensor output, std::vector<std::int64_t> received_splits,
                       std::exception_ptr error) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;  // the first outcome wins (e.g. shutdown racing completion)
    done_ = true;
    output_ = std::move(output);
    received_splits_ = std::move(received_splits);
    error_ = std::move(error);
    callbacks.swap(callbacks_);
  }
  done_cv_.notify_all();
  for (auto& callback : callbacks) callback();  // unlocked: they may query the state
}

bool WorkState::wait(std::optional<std::chrono::milliseconds> timeout) {
  // No polling here: measured on 2 cores, a waiting thread that spins takes
  // the core the coordinator needs and makes a 4-byte allreduce slower.
  std::unique_lock<std::mutex> lock(mutex_);
  if (done_) return true;
  // The coordinator lets submissions gather until its next cycle is due;
  // a waiting thread needs the result now.
  if (wakeup_) wakeup_->begin_wait();
  bool completed = true;
  if (!timeout) {
    done_cv_.wait(lock, [this] { return done_; });
  } else {
    completed = done_cv_.wait_for(lock, *timeout, [this] { return done_; });
  }
  if (wakeup_) wakeup_->end_wait();
  return completed;
}

void WorkState::on_done(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!done_) {
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
  return state_->done();
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
