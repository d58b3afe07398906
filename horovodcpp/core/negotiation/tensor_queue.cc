#include "core/negotiation/tensor_queue.h"

#include <algorithm>
#include <unordered_set>

#include "base/check.h"

namespace hvd {

namespace {

[[noreturn]] void refuse_name_in_flight(const std::string& name) {
  HVD_THROW(InvalidArgument, "a tensor named '" << name
                                                << "' is already in flight on this rank; wait for "
                                                   "it before submitting that name again");
}

}  // namespace

void TensorQueue::push(TensorEntry entry, bool caller_waits) {
  // One entry (the common case of a small collective): no batch to check.
  std::unique_lock<std::mutex> lock(mutex_);
  if (closed_reason_) std::rethrow_exception(closed_reason_);
  if (alone_ && *alone_ == entry.request.name) refuse_name_in_flight(*alone_);
  const std::size_t bytes = entry.input.size_bytes();
  std::pair<decltype(entries_)::iterator, bool> placed;
  if (spare_.empty()) {
    placed = entries_.emplace(entry.request.name, std::move(entry));
  } else {
    // In the node the last try_take() left: a collective that follows
    // another allocates no node.
    spare_.key() = entry.request.name;
    spare_.mapped() = std::move(entry);
    auto inserted = entries_.insert(std::move(spare_));
    spare_ = std::move(inserted.node);  // back if refused
    placed = {inserted.position, inserted.inserted};
  }
  if (!placed.second) refuse_name_in_flight(placed.first->first);
  new_entries_.push_back(&placed.first->second);
  published(lock, bytes, caller_waits);
}

void TensorQueue::push_all(std::vector<TensorEntry> entries) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (closed_reason_) std::rethrow_exception(closed_reason_);
  std::unordered_set<std::string> names;
  for (const TensorEntry& entry : entries) {
    const std::string& name = entry.request.name;
    if (entries_.count(name) != 0 || (alone_ && *alone_ == name) || !names.insert(name).second) {
      refuse_name_in_flight(name);
    }
  }
  std::size_t bytes = 0;
  for (TensorEntry& entry : entries) {
    bytes += entry.input.size_bytes();
    new_entries_.push_back(&entries_.emplace(entry.request.name, std::move(entry)).first->second);
  }
  published(lock, bytes, false);
}

void TensorQueue::published(std::unique_lock<std::mutex>& lock, std::size_t bytes,
                            bool caller_waits) {
  new_count_ = new_entries_.size();
  new_bytes_ += bytes;
  entry_count_ = entries_.size();
  lock.unlock();
  // Otherwise the submission waits for the next cycle, with the others of
  // its burst.
  if (urgent()) {
    wakeup_->wake();
  } else if (!caller_waits) {
    wakeup_->submitted();
  }
}

bool TensorQueue::urgent() const {
  if (wakeup_->waiters() > 0 && entry_count_.load() > 0) return true;
  return new_count_.load() > 0 && new_bytes_.load() >= urgent_bytes_.load();
}

bool TensorQueue::wait_until_urgent(std::chrono::steady_clock::time_point deadline,
                                    std::chrono::microseconds spin) {
  return wakeup_->sleep_until(deadline, spin, [this] { return urgent(); });
}

bool TensorQueue::wait_for_new(std::chrono::steady_clock::time_point deadline) {
  return wakeup_->sleep_until(deadline, std::chrono::microseconds(0),
                              [this] { return new_count_.load() > 0; });
}

void TensorQueue::pop_new_requests(std::vector<Request>& requests,
                                   std::vector<std::chrono::steady_clock::time_point>* submitted) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const TensorEntry* entry : new_entries_) {
    requests.push_back(entry->request);
    if (submitted) submitted->push_back(entry->submitted);
  }
  new_entries_.clear();
  new_count_ = 0;
  new_bytes_ = 0;
}

std::optional<TensorEntry> TensorQueue::try_take(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return std::nullopt;
  // Normally popped long since; not when another rank's join released it
  // before this rank's cycle saw it.
  new_entries_.erase(std::remove(new_entries_.begin(), new_entries_.end(), &it->second),
                     new_entries_.end());
  new_count_ = new_entries_.size();
  auto node = entries_.extract(it);
  std::optional<TensorEntry> entry(std::move(node.mapped()));
  spare_ = std::move(node);
  entry_count_ = entries_.size();
  return entry;
}

const TensorView* TensorQueue::input_of(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second.input;
}

bool TensorQueue::reserve_alone(const std::string* name) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_reason_ || !entries_.empty()) return false;
  alone_ = name;
  return true;
}

void TensorQueue::release_alone() {
  std::lock_guard<std::mutex> lock(mutex_);
  alone_ = nullptr;
}

void TensorQueue::adopt_alone(TensorEntry entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  HVD_CHECK(alone_ && *alone_ == entry.request.name, Error,
            "adopt_alone of '" << entry.request.name << "', which was not reserved");
  alone_ = nullptr;
  // Its name was reserved, and the queue closes only from the cycle that
  // adopts it: it goes in.
  entries_.emplace(entry.request.name, std::move(entry));
  entry_count_ = entries_.size();
}

std::vector<TensorEntry> TensorQueue::close(std::exception_ptr reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_reason_ = reason;
  std::vector<TensorEntry> left;
  left.reserve(entries_.size());
  for (auto& [name, entry] : entries_) left.push_back(std::move(entry));
  new_entries_.clear();
  entries_.clear();
  new_count_ = 0;
  new_bytes_ = 0;
  entry_count_ = 0;
  return left;
}

}  // namespace hvd
