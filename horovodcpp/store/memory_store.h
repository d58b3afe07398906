// MemoryStore: a Store inside one process, for ranks that are threads (the
// threads-as-ranks tests) and anything else that rendezvous in-process.
// Thread-safe; get() sleeps on a condition variable until the key is set.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "store/store.h"

namespace hvd {

class MemoryStore : public Store {
 public:
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  long long add(const std::string& key, long long delta) override;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

}  // namespace hvd
