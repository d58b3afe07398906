// This process as a worker of an elastic job. hvdrun's elastic mode
// (--min-np, --host-discovery-script) sets HOROVODCPP_ELASTIC_WORKER (this
// process's number), HOROVODCPP_ELASTIC_ROUND_TIMEOUT (how many seconds an
// init() may wait for its round) and the rendezvous store's address; their
// presence makes the process a worker. Each init() joins the
// newest round of the membership hvdrun publishes in the store
// (store/elastic_round.h) and takes its rank and size from it, not from
// HOROVODCPP_RANK/_SIZE; a worker that could not go on in its round (a peer
// died) asks hvdrun for a new one.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "core/negotiation/controller.h"
#include "store/store.h"

namespace hvd {

class ElasticWorker {
 public:
  // The process's worker, created at first use; null outside an elastic job.
  static ElasticWorker* get();

  struct Place {
    long long round = 0;
    Topology topology;
  };
  // The newest round after the last one this process tried; when there is
  // none yet, asks hvdrun for one (once) and waits. Timeout past `deadline`;
  // RankFailure when hvdrun left this worker out of the round (it is about
  // to stop it).
  Place next_round(std::chrono::steady_clock::time_point deadline);
  // This process's runtime connected in `round`.
  void joined(long long round);
  // The last round joined (0: none).
  long long round() const { return joined_; }
  // hvdrun published a round newer than the one joined (asks the store).
  bool newer_round_published();
  // A newer round than `round` is out: its members stop waiting for this one.
  bool superseded(long long round);

  const std::shared_ptr<Store>& store() const { return store_; }
  // How long one init() may wait for its round and its members.
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  ElasticWorker();

  long long id_ = 0;
  std::chrono::milliseconds timeout_{0};
  std::shared_ptr<Store> store_;
  std::atomic<long long> tried_{0};
  std::atomic<long long> joined_{0};
};

// InvalidArgument when this is an elastic job and `transport` is not Gloo.
void check_elastic_transport(const std::string& transport);

}  // namespace hvd
