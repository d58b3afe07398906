// Store: the rendezvous key-value store ranks meet through (Gloo's
// connection setup, hvdrun's job start). Keys are written once per job.
#pragma once

#include <chrono>
#include <string>

namespace hvd {

class Store {
 public:
  virtual ~Store() = default;

  virtual void set(const std::string& key, const std::string& value) = 0;
  // Waits until `key` exists; throws hvd::Timeout naming the key (and the
  // store's address) once `timeout` has passed.
  virtual std::string get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // Atomically adds `delta` to the integer stored at `key` (absent: 0) and
  // returns the new value.
  virtual long long add(const std::string& key, long long delta) = 0;
};

}  // namespace hvd
