// hvdrun's elastic driver (the part of horovodrun's ElasticDriver that
// decides): which worker processes form the job. It publishes each
// membership as a round in the rendezvous store (store/elastic_round.h),
// where every worker's init() reads its rank, and steers the process group
// (process_group.h): it starts workers for free slots, stops those on hosts
// that left or were blacklisted, and ends the job when fewer than --min-np
// slots remain for --elastic-timeout or the membership would change more
// than --reset-limit times.
//
// A new round is published when a member exits (a failure; the first exit
// with code 0 means the job is finishing: no more rounds), when a member
// asks for one (its round failed without a death hvdrun saw), or when the
// hosts offer a different membership (added, removed, forgiven hosts). The
// members that hold the job's state (they joined a round) come first, in
// their previous order, so rank 0, whose state the others receive, is
// always one of them; without any, the job fails.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "runner/elastic/elastic_discovery.h"
#include "runner/elastic/elastic_host_health.h"
#include "runner/placement/hosts.h"
#include "runner/ranks/process_group.h"
#include "store/store.h"

namespace hvdrun {

struct ElasticConfig {
  int num_proc = 1;  // slots to wait for before the first round (-np)
  int min_np = 1;
  int max_np = 1;
  std::chrono::milliseconds timeout{std::chrono::seconds(600)};  // --elastic-timeout
  std::optional<int> reset_limit;
  std::optional<std::pair<int, int>> cooldown_range;  // seconds
};

class ElasticDriver {
 public:
  using Clock = std::chrono::steady_clock;
  // The child that runs worker `id` as rank `rank` of the round `places`
  // (the round it is started for).
  using WorkerSpec = std::function<ChildSpec(long long id, const std::vector<RankPlacement>& places,
                                             std::size_t rank)>;

  // `log` gets one line per event ("hvdrun: elastic: ...").
  ElasticDriver(ElasticConfig config, hvd::Store& store, HostDiscovery discovery,
                WorkerSpec worker_spec, std::ostream& log);

  // GroupControl's two calls, with the time.
  GroupOrders poll(Clock::time_point now);
  bool on_exit(std::size_t child, int status, Clock::time_point now);

  // The newest round and its members' worker numbers, in rank order.
  long long round() const { return round_; }
  std::vector<long long> members() const;

 private:
  // A worker's number (HOROVODCPP_ELASTIC_WORKER) is its index in
  // workers_, which is also its child's index in the process group.
  struct Worker {
    std::string host;
    bool running = true;
    bool stopping = false;  // stopped by the driver: its exit is expected
    bool joined = false;    // has joined a round: holds the job's state
  };
  // One rank of a planned round: a running worker, or a new one (-1).
  struct Slot {
    long long worker = -1;  // index into workers_
    std::string host;
  };

  // poll() without its guard against the store failing.
  GroupOrders decide(Clock::time_point now);
  std::vector<Slot> plan(const std::vector<Host>& hosts, Clock::time_point now);
  // Stops the running members `plan` leaves out.
  void stop_left_out(const std::vector<Slot>& plan, Clock::time_point now, GroupOrders& orders);
  bool differs(const std::vector<Slot>& plan) const;
  void publish(const std::vector<Slot>& plan, GroupOrders& orders, const std::string& why);
  // Once finishing: stops the workers that never joined the finished round.
  void stop_stragglers(GroupOrders& orders);
  std::string describe(std::size_t worker) const;
  // Reads from the store which running members have joined a round.
  void refresh_joined();
  // Whether `worker` holds the job's state: it joined a round, or no worker
  // has yet (all start from the script's own state).
  bool holds_state(std::size_t worker) const;

  ElasticConfig config_;
  hvd::Store& store_;
  HostDiscovery discovery_;
  WorkerSpec worker_spec_;
  std::ostream& log_;
  HostHealth health_;

  std::vector<Worker> workers_;
  std::vector<std::size_t> members_;     // the newest round's, in rank order
  std::vector<std::string> host_order_;  // hosts in the order first offered
  long long round_ = 0;
  int resets_ = 0;                                // rounds after the first
  std::string why_;                               // what the next round is for
  std::optional<Clock::time_point> short_since_;  // fewer slots than needed since
  bool anyone_joined_ = false;
  bool finishing_ = false;
  long long finished_round_ = 0;
  std::string failure_;
};

}  // namespace hvdrun
