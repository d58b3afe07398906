// GlooContext::create_elastic: the rendezvous of an elastic job's worker
// (core/runtime/elastic_worker.h). Its place comes from the newest membership round;
// the members of round N meet under "horovodcpp/elastic/N/". A round can
// fail to come together (a member died, or hvdrun published a newer one
// meanwhile): the worker then moves on to the next round, until its elastic
// timeout. No wait is unbounded, and no collective runs before every member
// of a round has connected.
#include <algorithm>
#include <thread>

#include "backend/gloo/gloo_context.h"
#include "base/check.h"
#include "core/diagnostics/logging.h"
#include "core/runtime/elastic_worker.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;

// A newer round was published while this one was coming together.
class RoundSuperseded : public Error {
 public:
  using Error::Error;
};

// The worker's store, as seen by the members of one round: a wait for a
// peer's key lasts until the worker's deadline (peers of a round joined by
// new workers arrive at their next commit, which may take longer than the
// Gloo timeout), and ends as soon as a newer round is out.
class RoundStore : public Store {
 public:
  RoundStore(ElasticWorker& worker, long long round, Clock::time_point deadline)
      : worker_(worker), round_(round), deadline_(deadline) {}

  void set(const std::string& key, const std::string& value) override {
    worker_.store()->set(key, value);
  }
  long long add(const std::string& key, long long delta) override {
    return worker_.store()->add(key, delta);
  }
  std::string get(const std::string& key, std::chrono::milliseconds) override {
    for (;;) {
      const auto left = deadline_ - Clock::now();
      const auto slice = std::min<Clock::duration>(left, std::chrono::milliseconds(200));
      try {
        return worker_.store()->get(
            key, std::max(std::chrono::duration_cast<std::chrono::milliseconds>(slice),
                          std::chrono::milliseconds(1)));
      } catch (const Timeout&) {
        if (Clock::now() >= deadline_) throw;
      }
      if (worker_.superseded(round_)) {
        HVD_THROW(RoundSuperseded, "round " << round_ << " was superseded");
      }
    }
  }

 private:
  ElasticWorker& worker_;
  long long round_;
  Clock::time_point deadline_;
};

}  // namespace

std::shared_ptr<GlooContext> GlooContext::create_elastic(ElasticWorker& worker) {
  const GlooOptions base = options_from_environment();
  const auto deadline = Clock::now() + worker.timeout();
  for (;;) {
    const ElasticWorker::Place place = worker.next_round(deadline);
    GlooOptions options = base;
    options.topology = place.topology;
    options.store = std::make_shared<RoundStore>(worker, place.round, deadline);
    options.prefix = "horovodcpp/elastic/" + std::to_string(place.round) + "/";
    try {
      std::shared_ptr<GlooContext> context = create(options);
      worker.joined(place.round);
      HVD_LOG(Info) << "elastic: joined round " << place.round << " as rank " << place.topology.rank
                    << " of " << place.topology.size;
      return context;
    } catch (const RoundSuperseded&) {
      HVD_LOG(Info) << "elastic: round " << place.round << " was superseded; moving on";
    } catch (const Error& e) {
      // A member died or vanished during the rendezvous: the next round
      // (which next_round asks hvdrun for) goes on without it.
      HVD_CHECK(Clock::now() < deadline, Timeout,
                "elastic: no membership round came together within "
                    << worker.timeout().count() / 1000.0
                    << " s (HOROVODCPP_ELASTIC_ROUND_TIMEOUT); the last error: " << e.what());
      HVD_LOG(Warning) << "elastic: round " << place.round << " failed: " << e.what();
    }
  }
}

}  // namespace hvd
