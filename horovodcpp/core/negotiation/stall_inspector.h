// StallInspector: rank 0's watch over tensors that some ranks have submitted
// and others have not. After HOROVODCPP_STALL_CHECK_TIME_SECONDS it logs
// which ranks are missing which tensors; after
// HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS it produces the error with which
// every rank fails all its pending work (the coordinator delivers it in
// ResponseList::stall_error). Called by the coordinator every cycle; it looks
// at the table at most once per second.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/negotiation/message_table.h"

namespace hvd {

struct StallSettings {
  // Seconds a tensor may wait for some ranks before rank 0 warns; 0: never.
  double check_seconds = 60;
  // Seconds a tensor may wait before every pending operation on every rank
  // fails; 0: never. On by default, unlike Horovod: a rank that never
  // submits a tensor (a bug, a hung data loader, a different code path)
  // otherwise holds the whole job, and its accelerators, until the
  // scheduler's wall-clock limit. Ten minutes is long enough for the usual
  // legitimate waits — one rank evaluating, writing a checkpoint or loading
  // the next shard while the others already submitted their gradients — and
  // short enough to bound what a hung job wastes. Raise it (or set 0) for
  // longer single-rank phases.
  double shutdown_seconds = 600;

  // HOROVODCPP_STALL_CHECK_TIME_SECONDS, HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS
  // (or their HOROVOD_* names); both 0 when HOROVODCPP_STALL_CHECK_DISABLE
  // is a number > 0. Negative or malformed values are an InvalidArgument.
  static StallSettings from_env();
};

struct StallReport {
  std::vector<std::string> warnings;  // lines logged at Warning
  std::string error;                  // non-empty: shut the job down with it
};

class StallInspector {
 public:
  using Clock = std::chrono::steady_clock;

  explicit StallInspector(StallSettings settings) : settings_(settings) {}

  const StallSettings& settings() const { return settings_; }

  // Rank 0, every cycle. At most once per second it looks at the tensors
  // still pending in `table`, logs a warning for each tensor that has waited
  // longer than the check time (once per check interval) and, once one has
  // waited longer than the shutdown time, logs and returns the error.
  StallReport inspect(const MessageTable& table, Clock::time_point now = Clock::now());

  // The same on an explicit list, without the once-per-second limit or
  // logging (the pure part, for tests). `size`: the number of ranks.
  StallReport check(const std::vector<PendingTensor>& pending, int size, Clock::time_point now);

 private:
  StallSettings settings_;
  std::optional<Clock::time_point> last_inspection_;
  // When each still-pending tensor was last warned about.
  std::unordered_map<std::string, Clock::time_point> last_warned_;
};

}  // namespace hvd
