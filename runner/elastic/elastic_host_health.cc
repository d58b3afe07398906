#include "runner/elastic/elastic_host_health.h"

#include <algorithm>

namespace hvdrun {
namespace {

// Failures that blacklist a host ("fails repeatedly").
constexpr int kBlacklistAt = 2;

}  // namespace

HostHealth::HostHealth(std::optional<std::pair<int, int>> cooldown_range, std::uint32_t seed)
    : cooldown_range_(cooldown_range), random_(seed) {}

HostHealth::Record& HostHealth::current(const std::string& host, Clock::time_point now) {
  Record& record = records_[host];
  if (now >= record.forgiven_at) {
    record.failures = 0;
    record.forgiven_at = Clock::time_point::max();
  }
  return record;
}

bool HostHealth::record_failure(const std::string& host, Clock::time_point now) {
  Record& record = current(host, now);
  ++record.failures;
  ++record.failures_ever;
  if (cooldown_range_) {
    const double low = cooldown_range_->first, high = cooldown_range_->second;
    const double jitter = std::uniform_real_distribution<double>(0.0, 1.0)(random_);
    const double backoff = low * static_cast<double>(1LL << std::min(record.failures_ever, 30));
    const double seconds = std::clamp(backoff + jitter * low, low, high);
    record.forgiven_at =
        now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }
  return record.failures == kBlacklistAt;
}

int HostHealth::usable_slots(const std::string& host, int slots, Clock::time_point now) {
  const Record& record = current(host, now);
  if (record.failures >= kBlacklistAt) return 0;
  return std::max(0, slots - record.failures);
}

bool HostHealth::blacklisted(const std::string& host, Clock::time_point now) {
  return current(host, now).failures >= kBlacklistAt;
}

HostHealth::Clock::time_point HostHealth::forgiven_at(const std::string& host) const {
  auto it = records_.find(host);
  return it == records_.end() ? Clock::time_point::max() : it->second.forgiven_at;
}

}  // namespace hvdrun
