#include "runner/elastic/elastic_driver.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "runner/cli/options.h"
#include "store/elastic_round.h"

namespace hvdrun {
namespace {

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
         strsignal(WTERMSIG(status)) + ")";
}

std::string seconds_text(std::chrono::milliseconds ms) {
  const long long whole = ms.count() / 1000, tenths = ms.count() % 1000 / 100;
  return std::to_string(whole) + (tenths ? "." + std::to_string(tenths) : "") + " s";
}

}  // namespace

ElasticDriver::ElasticDriver(ElasticConfig config, hvd::Store& store, HostDiscovery discovery,
                             WorkerSpec worker_spec, std::ostream& log)
    : config_(config),
      store_(store),
      discovery_(std::move(discovery)),
      worker_spec_(std::move(worker_spec)),
      log_(log),
      health_(config.cooldown_range) {}

std::vector<long long> ElasticDriver::members() const {
  std::vector<long long> ids;
  for (std::size_t w : members_) ids.push_back(static_cast<long long>(w));
  return ids;
}

std::string ElasticDriver::describe(std::size_t worker) const {
  const auto rank = std::find(members_.begin(), members_.end(), worker);
  std::string text = rank == members_.end() ? "worker " + std::to_string(worker)
                                            : "rank " + std::to_string(rank - members_.begin()) +
                                                  " (worker " + std::to_string(worker) + ")";
  return text + " on " + workers_[worker].host;
}

void ElasticDriver::refresh_joined() {
  for (std::size_t w : members_) {
    Worker& worker = workers_[w];
    if (worker.joined || !worker.running) continue;
    worker.joined = hvd::elastic::joined_round(store_, static_cast<long long>(w)) > 0;
    anyone_joined_ = anyone_joined_ || worker.joined;
  }
}

bool ElasticDriver::holds_state(std::size_t w) const {
  return workers_[w].joined || !anyone_joined_;
}

GroupOrders ElasticDriver::poll(Clock::time_point now) {
  if (failure_.empty()) {
    try {
      return decide(now);
    } catch (const std::exception& e) {  // hvdrun's own store failed
      failure_ = std::string("elastic: ") + e.what();
    }
  }
  GroupOrders orders;
  orders.failure = failure_;
  return orders;
}

GroupOrders ElasticDriver::decide(Clock::time_point now) {
  GroupOrders orders;
  orders.more_to_come = !finishing_;
  if (finishing_) {
    stop_stragglers(orders);
    return orders;
  }
  std::string warning;
  const std::vector<Host>* hosts = nullptr;
  try {
    hosts = &discovery_.hosts(now, &warning);
  } catch (const UsageError& e) {
    failure_ = orders.failure = "elastic: " + e.message;
    return orders;
  }
  if (!warning.empty()) log_ << "hvdrun: elastic: " << warning << "\n";
  for (const Host& host : *hosts) {
    if (std::find(host_order_.begin(), host_order_.end(), host.name) == host_order_.end()) {
      host_order_.push_back(host.name);
    }
  }

  const std::vector<Slot> next = plan(*hosts, now);
  stop_left_out(next, now, orders);
  const bool requested = round_ > 0 && hvd::elastic::reset_requests(store_, round_) > 0;
  if (requested && why_.empty()) why_ = "a rank asked for a new round";
  if (round_ > 0 && !differs(next) && !requested) return orders;

  const bool state_kept = std::any_of(next.begin(), next.end(), [&](const Slot& slot) {
    return slot.worker >= 0 && holds_state(static_cast<std::size_t>(slot.worker));
  });
  if (round_ > 0 && !state_kept) {
    failure_ = orders.failure =
        "elastic: no rank of the job is left to hand its state to new ranks";
    return orders;
  }
  const int needed = round_ == 0 ? config_.num_proc : config_.min_np;
  if (static_cast<int>(next.size()) < needed) {
    if (!short_since_) {
      short_since_ = now;
      log_ << "hvdrun: elastic: " << next.size() << " slot(s) available, fewer than "
           << (round_ == 0 ? "-np " : "--min-np ") << needed << "; waiting up to "
           << seconds_text(config_.timeout) << " (--elastic-timeout) for more\n";
    }
    if (now - *short_since_ >= config_.timeout) {
      failure_ = orders.failure = "elastic: only " + std::to_string(next.size()) +
                                  " slot(s) available, fewer than " +
                                  (round_ == 0 ? "-np " : "--min-np ") + std::to_string(needed) +
                                  ", for " + seconds_text(config_.timeout) + " (--elastic-timeout)";
    }
    return orders;
  }
  short_since_.reset();
  if (round_ > 0 && config_.reset_limit && resets_ >= *config_.reset_limit) {
    failure_ = orders.failure = "elastic: the membership changed " + std::to_string(resets_) +
                                " times, the most --reset-limit allows, and must change again (" +
                                why_ + ")";
    return orders;
  }
  publish(next, orders, why_.empty() ? "the hosts changed" : why_);
  return orders;
}

std::vector<ElasticDriver::Slot> ElasticDriver::plan(const std::vector<Host>& hosts,
                                                     Clock::time_point now) {
  refresh_joined();
  std::map<std::string, int> usable;
  for (const Host& host : hosts)
    usable[host.name] = health_.usable_slots(host.name, host.slots, now);
  // The running members by host: those holding the state first, each
  // group in rank order; their hosts first, ordered by their first member,
  // then the other hosts in the order first offered.
  std::vector<std::size_t> running;
  for (std::size_t w : members_) {
    if (workers_[w].running && !workers_[w].stopping) running.push_back(w);
  }
  std::stable_partition(running.begin(), running.end(),
                        [&](std::size_t w) { return holds_state(w); });
  std::vector<std::pair<std::string, std::vector<std::size_t>>> by_host;
  for (std::size_t w : running) {
    const Worker& worker = workers_[w];
    auto it = std::find_if(by_host.begin(), by_host.end(),
                           [&](const auto& entry) { return entry.first == worker.host; });
    if (it == by_host.end()) it = by_host.insert(by_host.end(), {worker.host, {}});
    it->second.push_back(w);
  }
  for (const std::string& host : host_order_) {
    if (std::none_of(by_host.begin(), by_host.end(),
                     [&](const auto& entry) { return entry.first == host; })) {
      by_host.push_back({host, {}});
    }
  }
  // Members stay while their host has room, then free slots get new ranks,
  // each host's ranks contiguous, up to --max-np.
  const std::size_t most = static_cast<std::size_t>(config_.max_np);
  std::size_t total = 0;
  for (auto& [host, on_host] : by_host) {
    on_host.resize(
        std::min({on_host.size(), static_cast<std::size_t>(usable[host]), most - total}));
    total += on_host.size();
  }
  std::vector<Slot> next;
  for (const auto& [host, on_host] : by_host) {
    for (std::size_t w : on_host) next.push_back({static_cast<long long>(w), host});
    const std::size_t free = static_cast<std::size_t>(usable[host]) - on_host.size();
    for (std::size_t i = 0; i < free && total < most; ++i, ++total) next.push_back({-1, host});
  }
  return next;
}

void ElasticDriver::stop_left_out(const std::vector<Slot>& next, Clock::time_point now,
                                  GroupOrders& orders) {
  for (std::size_t w : members_) {
    Worker& worker = workers_[w];
    if (!worker.running || worker.stopping) continue;
    const bool in_plan = std::any_of(next.begin(), next.end(), [&](const Slot& s) {
      return s.worker == static_cast<long long>(w);
    });
    if (in_plan) continue;
    worker.stopping = true;
    orders.stop.push_back(w);
    log_ << "hvdrun: elastic: stopping " << describe(w) << ": its host "
         << (health_.blacklisted(worker.host, now) ? "is blacklisted" : "no longer offers its slot")
         << "\n";
    if (why_.empty()) why_ = "ranks were stopped";
  }
}

// The plan orders members by who holds the state, which shifts while a
// round's ranks join one by one: a new order alone is no reason for a round.
bool ElasticDriver::differs(const std::vector<Slot>& next) const {
  if (next.size() != members_.size()) return true;
  return std::any_of(next.begin(), next.end(), [&](const Slot& slot) {
    return slot.worker < 0 || std::find(members_.begin(), members_.end(),
                                        static_cast<std::size_t>(slot.worker)) == members_.end();
  });
}

void ElasticDriver::publish(const std::vector<Slot>& next, GroupOrders& orders,
                            const std::string& why) {
  // Places as hvdrun computes them for a fixed job: hosts in plan order.
  std::vector<Host> layout;
  for (const Slot& slot : next) {
    if (layout.empty() || layout.back().name != slot.host) layout.push_back({slot.host, 0});
    ++layout.back().slots;
  }
  const std::vector<RankPlacement> places = place_ranks(layout, static_cast<int>(next.size()));
  hvd::elastic::Round round;
  round.number = round_ + 1;
  std::vector<std::size_t> members;
  std::vector<std::size_t> started;
  for (std::size_t rank = 0; rank < next.size(); ++rank) {
    std::size_t w;
    if (next[rank].worker >= 0) {
      w = static_cast<std::size_t>(next[rank].worker);
    } else {
      w = workers_.size();
      workers_.push_back({next[rank].host});
      started.push_back(rank);
    }
    members.push_back(w);
    const RankPlacement& p = places[rank];
    round.members.push_back({static_cast<long long>(w), p.host, p.local_rank, p.local_size,
                             p.cross_rank, p.cross_size});
  }
  hvd::elastic::publish_round(store_, round);
  for (std::size_t rank : started) {
    orders.start.push_back(worker_spec_(static_cast<long long>(members[rank]), places, rank));
  }
  members_ = std::move(members);
  if (round_ > 0) ++resets_;
  round_ = round.number;
  std::string layout_text;
  for (const Host& h : layout) {
    layout_text += (layout_text.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
  }
  log_ << "hvdrun: elastic: round " << round_ << ": " << next.size() << " rank(s) on "
       << layout_text;
  if (!started.empty()) log_ << ", " << started.size() << " of them new";
  if (round_ > 1) log_ << " (" << why << ")";
  log_ << "\n";
  why_.clear();
}

bool ElasticDriver::on_exit(std::size_t child, int status, Clock::time_point now) {
  Worker& worker = workers_.at(child);
  worker.running = false;
  if (worker.stopping) return true;
  const bool success = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (finishing_) return success;
  if (success) {
    finishing_ = true;
    try {
      finished_round_ = hvd::elastic::joined_round(store_, static_cast<long long>(child));
    } catch (const std::exception& e) {  // hvdrun's own store failed
      failure_ = std::string("elastic: ") + e.what();
    }
    log_ << "hvdrun: elastic: " << describe(child) << " finished; the job ends with round "
         << finished_round_ << "\n";
    return true;
  }
  const std::string what = describe(child) + " " + exit_text(status);
  log_ << "hvdrun: elastic: " << what << "; the job goes on without it\n";
  if (health_.record_failure(worker.host, now)) {
    const auto until = health_.forgiven_at(worker.host);
    log_ << "hvdrun: elastic: host " << worker.host << " is blacklisted (ranks failed there twice)"
         << (until == Clock::time_point::max()
                 ? ""
                 : " for " + seconds_text(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 until - now)))
         << "\n";
  }
  if (why_.empty()) why_ = what;
  return true;
}

void ElasticDriver::stop_stragglers(GroupOrders& orders) {
  for (std::size_t w = 0; w < workers_.size(); ++w) {
    Worker& worker = workers_[w];
    if (!worker.running || worker.stopping) continue;
    if (hvd::elastic::joined_round(store_, static_cast<long long>(w)) == finished_round_) continue;
    worker.stopping = true;
    orders.stop.push_back(w);
    log_ << "hvdrun: elastic: stopping " << describe(w) << ": it never joined round "
         << finished_round_ << ", which finished\n";
  }
}

}  // namespace hvdrun
