#include "backend/gloo/gloo_store_adapter.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "base/check.h"

namespace hvd {

GlooStoreAdapter::GlooStoreAdapter(std::shared_ptr<hvd::Store> store, std::string prefix,
                                   std::chrono::milliseconds timeout)
    : store_(std::move(store)), prefix_(std::move(prefix)), timeout_(timeout) {
  HVD_CHECK(store_ != nullptr, InvalidArgument, "GlooStoreAdapter needs a store");
}

std::string GlooStoreAdapter::next_init_prefix() {
  static std::atomic<long long> next{0};
  return "horovodcpp/" + std::to_string(next.fetch_add(1)) + "/";
}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  store_->set(prefix_ + key, std::string(data.begin(), data.end()));
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  const std::string value = store_->get(prefix_ + key, timeout_);
  return std::vector<char>(value.begin(), value.end());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  // One deadline for all keys; a zero or negative timeout means "ours".
  const std::chrono::milliseconds total = timeout.count() > 0 ? timeout : timeout_;
  const auto deadline = std::chrono::steady_clock::now() + total;
  for (const std::string& key : keys) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    store_->get(prefix_ + key, std::max(left, std::chrono::milliseconds(1)));
  }
}

}  // namespace hvd
