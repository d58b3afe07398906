// Settings: the one declared table of what the ranks and hvdrun read from
// the environment (settings_table.cc), and typed readers over it. Each
// setting NAME is read from HOROVODCPP_NAME, or else from HOROVOD_NAME so job
// scripts written for Horovod keep working. A setting is named by its enum
// value, so reading one the table lacks does not compile; a malformed or
// out-of-range value is an hvd::InvalidArgument naming the variable, the
// value and what is allowed.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hvd {
namespace settings {

enum class Setting {
  // Negotiation and fusion.
  kCycleTime,
  kIdleSpinMicroseconds,
  kFusionThreshold,
  kCacheCapacity,
  kAutotune,
  kAutotuneLog,
  kAutotuneWarmupSamples,
  kAutotuneStepsPerSample,
  kAutotuneBayesOptMaxSamples,
  // Logging and tracing.
  kLogLevel,
  kLogHideTime,
  kTimeline,
  kTimelineMarkCycles,
  kTimelineMaxBytes,
  // Transports and devices.
  kCpuOperations,
  kController,
  kGpuOperations,
  kNcclTimeoutSeconds,
  kHierarchicalAllreduce,
  kShm,
  kShmSlotBytes,
  kGlooIface,
  kGlooFileStore,
  kThreadAffinity,
  // Failures.
  kStallCheckTimeSeconds,
  kStallShutdownTimeSeconds,
  kStallCheckDisable,
  kProcessSetTimeoutSeconds,
  kPeerTimeoutSeconds,
  kShmTimeoutSeconds,
  kGlooTimeoutSeconds,
  kFlightRecorderSize,
  kFlightRecorderDir,
  // Set by hvdrun for each rank.
  kRank,
  kSize,
  kLocalRank,
  kLocalSize,
  kCrossRank,
  kCrossSize,
  kHostname,
  kGlooRendezvousAddr,
  kGlooRendezvousPort,
  kHvdrunStore,
  kJobSecret,
  kElasticWorker,
  kElasticRoundTimeout,
  // Read by hvdrun itself.
  kElasticTimeout,
  kStartTimeout,
  // Horovod's tuning knobs that horovodcpp accepts and does not act on.
  kHierarchicalAllgather,
  kTorusAllreduce,
  kAutotuneGaussianProcessNoise,
  kDisableGroupFusion,
  kBatchD2dMemcopies,
  kNumNcclStreams,
  kEnableXlaOps,
  kMpiThreadsDisable,
  kAdasumMpiChunkSize,
  kCclCache,
  kDisableNvtxRanges,
  kEnableAsyncCompletion,
};

enum class Type { kBool, kInt, kBytes, kSeconds, kMilliseconds, kString, kEnum };

// Who reads the setting, and so where the docs list it.
// kNoEffect: Horovod's tuning knobs that job scripts set; accepted, and a
// value other than the default (what horovodcpp does) gets one warning line
// from rank 0 saying what horovodcpp does instead (the doc).
enum class Scope { kRank, kSetByHvdrun, kLauncher, kNoEffect };

struct Entry {
  Setting id;
  const char* name;  // without prefix: "FUSION_THRESHOLD"
  bool horovod_has;  // Horovod 0.28.1 reads HOROVOD_<name> too
  Type type;
  Scope scope;
  const char* default_value;  // as it would be set; "" = none
  double min = 0;             // numbers: the allowed range
  double max = 0;
  const char* choices = "";          // kEnum: "a|b|c" (any case is accepted)
  const char* doc = "";              // one line, for hvdrun --help and docs/settings.md
  const char* more = "";             // docs/settings.md only: details and links (Markdown)
  const char* zero_means = nullptr;  // kSeconds: what 0 means; null: 0 is refused
  std::optional<Setting> fallback = std::nullopt;  // unset: this setting's value instead
  const char* default_doc = nullptr;               // the default in words, where it is not a value
};

// Every setting, in the order of the enum (and of the docs).
const std::vector<Entry>& table();
const Entry& entry(Setting setting);

// "HOROVODCPP_<name>" and Horovod's "HOROVOD_<name>".
std::string variable(Setting setting);
std::string horovod_variable(Setting setting);

// Where the readers look a variable up: the process environment by
// default; hvdrun passes the environment it was given.
using Lookup = std::function<std::optional<std::string>(const std::string& variable)>;
const Lookup& process_environment();

// The text set by HOROVODCPP_<name> or HOROVOD_<name> (no default, no fallback).
std::optional<std::string> read_text(Setting setting, const Lookup& lookup = process_environment());
bool is_set(Setting setting, const Lookup& lookup = process_environment());

// The value set, else the fallback setting's, else the default. A setting
// that has neither and is unset is a std::logic_error (check is_set first),
// and so is reading a setting as another type.
bool read_bool(Setting setting, const Lookup& lookup = process_environment());      // kBool
long long read_int(Setting setting, const Lookup& lookup = process_environment());  // kInt, kBytes
double read_milliseconds(Setting setting, const Lookup& lookup = process_environment());
double read_seconds(Setting setting, const Lookup& lookup = process_environment());
std::string read_string(Setting setting,
                        const Lookup& lookup = process_environment());  // kString, kEnum

// One line per kNoEffect setting set to a value other than its default:
// "HOROVOD_TORUS_ALLREDUCE=1 is accepted and has no effect: <doc>".
std::vector<std::string> no_effect_warnings(const Lookup& lookup = process_environment());

// A bound of the table as errors and docs show it: "65535", "1e+15".
std::string number_str(double value);

// A number of seconds as a timeout: rounded to milliseconds, at least 1 ms.
std::chrono::milliseconds timeout_of(double seconds);

}  // namespace settings
}  // namespace hvd
