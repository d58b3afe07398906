#include "core/runtime/elastic_worker.h"

#include <algorithm>
#include <thread>

#include "base/check.h"
#include "core/runtime/hvdrun_link.h"
#include "horovodcpp/elastic.h"
#include "settings/settings.h"
#include "store/elastic_round.h"
#include "store/tcp_store.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;

// How often a waiting worker looks for a new round.
constexpr std::chrono::milliseconds kPoll(50);

std::chrono::milliseconds left_until(Clock::time_point deadline) {
  return std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                  std::chrono::milliseconds(1));
}

}  // namespace

ElasticWorker* ElasticWorker::get() {
  static ElasticWorker* const worker = [] {
    return settings::is_set(settings::Setting::kElasticWorker) ? new ElasticWorker() : nullptr;
  }();
  return worker;
}

ElasticWorker::ElasticWorker() {
  using settings::Setting;
  id_ = settings::read_int(Setting::kElasticWorker);
  timeout_ = settings::timeout_of(settings::read_seconds(Setting::kElasticRoundTimeout));
  const std::optional<RendezvousAddress> address = rendezvous_address();
  HVD_CHECK(address && !address->host.empty(), InvalidArgument,
            "an elastic worker needs hvdrun's store: HOROVODCPP_GLOO_RENDEZVOUS_ADDR and _PORT");
  store_ = std::make_shared<TcpStore>(address->host, address->port, timeout_,
                                      settings::read_string(Setting::kJobSecret));
}

ElasticWorker::Place ElasticWorker::next_round(Clock::time_point deadline) {
  const long long after = tried_;
  bool asked = false;
  long long newest = elastic::latest_round(*store_);
  while (newest <= after) {
    if (!asked && after > 0) {
      elastic::request_new_round(*store_, after);
      asked = true;
    }
    HVD_CHECK(Clock::now() < deadline, Timeout,
              "elastic: hvdrun published no membership after round "
                  << after << " within " << timeout_.count() / 1000.0
                  << " s (HOROVODCPP_ELASTIC_ROUND_TIMEOUT)");
    std::this_thread::sleep_for(kPoll);
    newest = elastic::latest_round(*store_);
  }
  tried_ = newest;
  const elastic::Round round = elastic::read_round(*store_, newest, left_until(deadline));
  const int rank = round.rank_of(id_);
  HVD_CHECK(rank >= 0, RankFailure,
            "elastic: hvdrun left worker " << id_ << " out of round " << newest
                                           << " (its host was removed or blacklisted)");
  const elastic::Member& me = round.members[static_cast<std::size_t>(rank)];
  Place place;
  place.round = newest;
  place.topology.rank = rank;
  place.topology.size = static_cast<int>(round.members.size());
  place.topology.local_rank = me.local_rank;
  place.topology.local_size = me.local_size;
  place.topology.cross_rank = me.cross_rank;
  place.topology.cross_size = me.cross_size;
  return place;
}

void ElasticWorker::joined(long long round) {
  joined_ = round;
  elastic::record_joined(*store_, id_, round);
}

bool ElasticWorker::newer_round_published() { return elastic::latest_round(*store_) > joined_; }

bool ElasticWorker::superseded(long long round) { return elastic::latest_round(*store_) > round; }

void check_elastic_transport(const std::string& transport) {
  HVD_CHECK(ElasticWorker::get() == nullptr || transport == "gloo", InvalidArgument,
            "elastic training runs on Gloo (as Horovod's), but this job's transport is "
                << transport << " (HOROVODCPP_CPU_OPERATIONS); launch it with hvdrun --gloo");
}

bool elastic_enabled() { return ElasticWorker::get() != nullptr; }

long long elastic_round() {
  ElasticWorker* worker = ElasticWorker::get();
  return worker ? worker->round() : 0;
}

bool elastic_hosts_updated() {
  ElasticWorker* worker = ElasticWorker::get();
  return worker != nullptr && worker->newer_round_published();
}

}  // namespace hvd
