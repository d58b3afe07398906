#include "store/memory_store.h"

#include <string>

#include "base/check.h"
#include "store/counter.h"

namespace hvd {

void MemoryStore::set(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[key] = value;
  }
  changed_.notify_all();
}

std::string MemoryStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool found =
      changed_.wait_for(lock, timeout, [&] { return values_.find(key) != values_.end(); });
  HVD_CHECK(found, Timeout,
            "MemoryStore: key '" << key << "' was not set within " << timeout.count() << " ms");
  return values_.at(key);
}

long long MemoryStore::add(const std::string& key, long long delta) {
  long long updated = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    long long current = 0;
    auto it = values_.find(key);
    if (it != values_.end()) {
      HVD_CHECK(parse_counter(it->second, &current), InvalidArgument,
                "MemoryStore: add('" << key << "'): the stored value is not an integer");
    }
    HVD_CHECK(!__builtin_add_overflow(current, delta, &updated), InvalidArgument,
              "MemoryStore: add('" << key << "', " << delta << ") overflows the counter ("
                                   << current << ")");
    values_[key] = std::to_string(updated);
  }
  changed_.notify_all();
  return updated;
}

}  // namespace hvd
