#include "core/device/completion_poller.h"

#include <utility>

#include "horovodcpp/errors.h"

namespace hvd {

CompletionPoller::CompletionPoller(GpuEvents& events, HealthCheck health_check,
                                   std::chrono::microseconds interval)
    : events_(events), health_check_(std::move(health_check)), interval_(interval) {
  thread_ = std::thread([this] { loop(); });
}

CompletionPoller::~CompletionPoller() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  finish(pending_, std::make_exception_ptr(
                       RankFailure("horovodcpp shut down before the GPU operation completed")));
}

void CompletionPoller::watch(std::shared_ptr<void> event, Callback on_done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back({std::move(event), std::move(on_done), std::chrono::steady_clock::now()});
  }
  wake_.notify_all();
}

std::size_t CompletionPoller::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size();
}

void CompletionPoller::finish(std::list<Pending>& pending, std::exception_ptr error) {
  for (Pending& p : pending) p.on_done(error);
  pending.clear();
}

void CompletionPoller::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
    if (stopping_) return;
    // Poll a snapshot without the lock: callbacks may call watch().
    std::list<Pending> polled;
    polled.splice(polled.end(), pending_);
    lock.unlock();
    std::list<Pending> finished;
    try {
      // Events complete in stream order, but several streams may be in
      // play: check each one.
      for (auto it = polled.begin(); it != polled.end();) {
        auto next = std::next(it);
        if (events_.done(it->event.get())) finished.splice(finished.end(), polled, it);
        it = next;
      }
      if (!polled.empty() && health_check_) {
        health_check_(std::chrono::steady_clock::now() - polled.front().since);
      }
    } catch (...) {
      finish(finished, nullptr);  // those did complete
      finish(polled, std::current_exception());
    }
    finish(finished, nullptr);
    lock.lock();
    pending_.splice(pending_.begin(), polled);  // still pending, ahead of newer ones
    if (!pending_.empty() && !stopping_) {
      lock.unlock();
      std::this_thread::sleep_for(interval_);
      lock.lock();
    }
  }
}

}  // namespace hvd
