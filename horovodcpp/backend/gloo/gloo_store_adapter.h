// GlooStoreAdapter: lets Gloo's rendezvous (connectFullMesh) run over an
// hvd::Store (file, TCP, in-memory). Every key gets a prefix, so that each
// init() of the runtime in one process, and each Gloo context of one init,
// meets under fresh keys of the same store.
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "store/store.h"

namespace hvd {

class GlooStoreAdapter : public gloo::rendezvous::Store {
 public:
  // `timeout` bounds get() and wait() when Gloo passes no timeout of its own.
  GlooStoreAdapter(std::shared_ptr<hvd::Store> store, std::string prefix,
                   std::chrono::milliseconds timeout);

  // A prefix no earlier call in this process returned: "horovodcpp/<n>/",
  // n counting from 0. Every rank initializes the same number of times, so
  // the n-th init of every rank gets the same prefix.
  static std::string next_init_prefix();

  const std::string& prefix() const { return prefix_; }

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits up to the adapter's timeout; throws hvd::Timeout naming the key.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  std::shared_ptr<hvd::Store> store_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
};

}  // namespace hvd
