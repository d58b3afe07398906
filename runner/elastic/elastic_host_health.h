// What an elastic job holds against a host whose ranks failed. A failed
// rank costs its host that slot: hvdrun starts no rank in its place. A
// second failure blacklists the host: its other ranks are stopped and it
// gets none. With a cooldown range MIN..MAX seconds
// (--blacklist-cooldown-range) the host is forgiven (every slot back) after
// MIN * 2^k + U(0,1) * MIN seconds, held within [MIN, MAX], k counting its
// failures so far (Horovod's backoff); without a range, never.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>

namespace hvdrun {

class HostHealth {
 public:
  using Clock = std::chrono::steady_clock;

  explicit HostHealth(std::optional<std::pair<int, int>> cooldown_range,
                      std::uint32_t seed = std::random_device{}());

  // Records a failed rank on `host`; true when this blacklists the host.
  bool record_failure(const std::string& host, Clock::time_point now);
  // How many of the `slots` a host offers the job may use now.
  int usable_slots(const std::string& host, int slots, Clock::time_point now);
  bool blacklisted(const std::string& host, Clock::time_point now);
  // When `host` is forgiven (Clock::time_point::max(): never); only for a
  // host with failures.
  Clock::time_point forgiven_at(const std::string& host) const;

 private:
  struct Record {
    int failures = 0;       // since the host was last forgiven
    int failures_ever = 0;  // the backoff's k
    Clock::time_point forgiven_at = Clock::time_point::max();
  };
  // The record of `host`, cleared when its cooldown is over.
  Record& current(const std::string& host, Clock::time_point now);

  std::optional<std::pair<int, int>> cooldown_range_;
  std::mt19937 random_;
  std::map<std::string, Record> records_;
};

}  // namespace hvdrun
