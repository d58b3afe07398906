#include "core/negotiation/stall_inspector.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <unordered_set>

#include "base/check.h"
#include "core/diagnostics/logging.h"
#include "settings/settings.h"

namespace hvd {
namespace {

constexpr auto kInspectionInterval = std::chrono::seconds(1);
constexpr std::size_t kMaxGroups = 8;         // lines per warning / groups per error
constexpr std::size_t kMaxNamesPerGroup = 5;  // tensor names per line
constexpr std::size_t kMaxRankPieces = 16;    // "0-5, 7, 9" pieces per rank list

std::string seconds_str(double seconds) {
  std::ostringstream out;
  out << seconds;
  return out.str();
}

// "rank 1", "ranks 0, 2", "ranks 0-5, 7"; long lists end in "... (N ranks)".
std::string ranks_str(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  std::size_t pieces = 0;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (pieces == kMaxRankPieces) {
      out << ", ... (" << ranks.size() << " ranks)";
      break;
    }
    out << (pieces ? ", " : "") << ranks[i];
    if (j - i >= 2) {
      out << "-" << ranks[j];
    } else if (j == i + 1) {
      out << ", " << ranks[j];
    }
    ++pieces;
    i = j + 1;
  }
  return out.str();
}

struct Stalled {
  const PendingTensor* tensor;
  double age_seconds;
};

// Tensors missing on the same ranks, oldest first.
struct Group {
  std::vector<int> missing;
  std::vector<Stalled> tensors;
};

std::vector<Group> group_by_missing_ranks(const std::vector<Stalled>& stalled, int size) {
  std::map<std::vector<int>, Group> by_missing;
  for (const Stalled& s : stalled) {
    std::vector<int> missing;
    const auto& submitted = s.tensor->submitted_ranks;
    for (int rank = 0; rank < size; ++rank) {
      const auto& joined = s.tensor->joined_ranks;
      if (!std::binary_search(submitted.begin(), submitted.end(), rank) &&
          !std::binary_search(joined.begin(), joined.end(), rank)) {
        missing.push_back(rank);
      }
    }
    Group& group = by_missing[missing];
    group.missing = std::move(missing);
    group.tensors.push_back(s);
  }
  std::vector<Group> groups;
  for (auto& [missing, group] : by_missing) {
    std::sort(group.tensors.begin(), group.tensors.end(), [](const Stalled& a, const Stalled& b) {
      if (a.age_seconds != b.age_seconds) return a.age_seconds > b.age_seconds;
      return a.tensor->name < b.tensor->name;
    });
    groups.push_back(std::move(group));
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    return a.tensors.front().age_seconds > b.tensors.front().age_seconds;
  });
  return groups;
}

// "tensor 'w' (allreduce) submitted by ranks 0, 2; missing on rank 1", or
// "3 tensors 'a' (allreduce), 'b' (broadcast), ... submitted by ...".
std::string group_str(const Group& group) {
  std::ostringstream out;
  const std::size_t n = group.tensors.size();
  out << (n == 1 ? "tensor " : std::to_string(n) + " tensors ");
  for (std::size_t i = 0; i < n && i < kMaxNamesPerGroup; ++i) {
    const PendingTensor& t = *group.tensors[i].tensor;
    out << (i ? ", " : "") << "'" << t.name << "' (" << op_type_name(t.op_type) << ")";
  }
  if (n > kMaxNamesPerGroup) out << " and " << n - kMaxNamesPerGroup << " more";
  const auto& submitted = group.tensors.front().tensor->submitted_ranks;
  out << " submitted by " << ranks_str(submitted) << "; missing on " << ranks_str(group.missing);
  return out.str();
}

std::string age_str(const Group& group) {
  const long long oldest = static_cast<long long>(group.tensors.front().age_seconds);
  const long long newest = static_cast<long long>(group.tensors.back().age_seconds);
  return (oldest == newest ? "stalled for " : "stalled for up to ") + std::to_string(oldest) + " s";
}

std::size_t tensors_in(const std::vector<Group>& groups, std::size_t from) {
  std::size_t n = 0;
  for (std::size_t i = from; i < groups.size(); ++i) n += groups[i].tensors.size();
  return n;
}

}  // namespace

StallSettings StallSettings::from_env() {
  using settings::Setting;
  StallSettings s;
  s.check_seconds = settings::read_seconds(Setting::kStallCheckTimeSeconds);
  s.shutdown_seconds = settings::read_seconds(Setting::kStallShutdownTimeSeconds);
  // As in Horovod, disabling the check also disables the shutdown it leads to.
  if (settings::read_bool(Setting::kStallCheckDisable)) s.check_seconds = s.shutdown_seconds = 0;
  return s;
}

StallReport StallInspector::inspect(const MessageTable& table, Clock::time_point now) {
  if (settings_.check_seconds == 0 && settings_.shutdown_seconds == 0) return {};
  if (last_inspection_ && now - *last_inspection_ < kInspectionInterval) return {};
  last_inspection_ = now;
  StallReport report = check(table.pending_tensors(), table.size(), now);
  for (const std::string& line : report.warnings) {
    HVD_LOG(Warning) << line;
  }
  if (!report.error.empty()) {
    HVD_LOG(Error) << report.error;
  }
  return report;
}

StallReport StallInspector::check(const std::vector<PendingTensor>& pending, int size,
                                  Clock::time_point now) {
  StallReport report;
  const double check = settings_.check_seconds, shutdown = settings_.shutdown_seconds;
  auto age_of = [&](const PendingTensor& t) {
    return std::chrono::duration<double>(now - t.first_seen).count();
  };

  // Forget tensors that completed since they were warned about.
  std::unordered_set<std::string> names;
  for (const PendingTensor& t : pending) names.insert(t.name);
  for (auto it = last_warned_.begin(); it != last_warned_.end();) {
    it = names.count(it->first) ? std::next(it) : last_warned_.erase(it);
  }

  if (shutdown > 0) {
    bool over = false;
    for (const PendingTensor& t : pending) over = over || age_of(t) >= shutdown;
    if (over) {
      // Name every tensor that is stalled, not only the one past the limit.
      const double threshold = check > 0 ? std::min(check, shutdown) : shutdown;
      std::vector<Stalled> stalled;
      for (const PendingTensor& t : pending) {
        if (age_of(t) >= threshold) stalled.push_back({&t, age_of(t)});
      }
      const std::vector<Group> groups = group_by_missing_ranks(stalled, size);
      std::ostringstream out;
      out << "horovodcpp stopped: tensors waited longer than " << seconds_str(shutdown)
          << " s for some ranks (HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS), so every pending "
             "operation fails: ";
      for (std::size_t i = 0; i < groups.size() && i < kMaxGroups; ++i) {
        out << (i ? "; also " : "") << group_str(groups[i]);
      }
      if (groups.size() > kMaxGroups) {
        out << "; and " << tensors_in(groups, kMaxGroups) << " more tensors missing on other ranks";
      }
      report.error = out.str();
      return report;
    }
  }

  if (check > 0) {
    std::vector<Stalled> due;
    for (const PendingTensor& t : pending) {
      if (age_of(t) < check) continue;
      auto warned = last_warned_.find(t.name);
      if (warned != last_warned_.end() &&
          std::chrono::duration<double>(now - warned->second).count() < check) {
        continue;
      }
      last_warned_[t.name] = now;
      due.push_back({&t, age_of(t)});
    }
    const std::vector<Group> groups = group_by_missing_ranks(due, size);
    for (std::size_t i = 0; i < groups.size() && i < kMaxGroups; ++i) {
      report.warnings.push_back(age_str(groups[i]) + ": " + group_str(groups[i]));
    }
    if (groups.size() > kMaxGroups) {
      report.warnings.push_back("... and " + std::to_string(tensors_in(groups, kMaxGroups)) +
                                " more stalled tensors missing on other ranks");
    }
    if (!groups.empty()) {
      std::string hint =
          "stalled tensors: a rank may be stuck, or ranks submit different tensor names";
      if (shutdown > 0) {
        hint += "; every pending operation fails once one has waited " + seconds_str(shutdown) +
                " s (HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS)";
      }
      report.warnings.push_back(hint);
    }
  }
  return report;
}

}  // namespace hvd
