// The table of settings and its typed readers: HOROVODCPP_X wins over
// Horovod's HOROVOD_X; bad values and out-of-range values are errors naming
// the variable, the value and what is allowed; one rule for seconds.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#include "horovodcpp/errors.h"
#include "settings/settings.h"
#include "settings/settings_doc.h"

namespace hvd {
namespace settings {
namespace {

// A fake environment for the readers.
class Env {
 public:
  Env& set(const std::string& name, const std::string& value) {
    vars_[name] = value;
    return *this;
  }
  Lookup lookup() const {
    return [this](const std::string& name) -> std::optional<std::string> {
      auto it = vars_.find(name);
      if (it == vars_.end()) return std::nullopt;
      return it->second;
    };
  }

 private:
  std::map<std::string, std::string> vars_;
};

std::string error_of(const std::function<void()>& read) {
  try {
    read();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SettingsTable, EveryEntryIsWellFormedAndItsDefaultParses) {
  const Env none;
  std::set<std::string> names;
  for (const Entry& e : table()) {
    EXPECT_TRUE(names.insert(e.name).second) << "twice: " << e.name;
    EXPECT_NE(std::string(e.doc), "") << e.name;
    if (e.type == Type::kEnum) EXPECT_NE(std::string(e.choices), "") << e.name;
    if (!*e.default_value && !e.fallback) continue;
    switch (e.type) {
      case Type::kBool: read_bool(e.id, none.lookup()); break;
      case Type::kInt:
      case Type::kBytes: read_int(e.id, none.lookup()); break;
      case Type::kSeconds: read_seconds(e.id, none.lookup()); break;
      case Type::kMilliseconds: read_milliseconds(e.id, none.lookup()); break;
      case Type::kString:
      case Type::kEnum: read_string(e.id, none.lookup()); break;
    }
  }
}

TEST(SettingsReaders, UnsetGivesTheTableDefault) {
  const Env none;
  EXPECT_EQ(read_int(Setting::kFusionThreshold, none.lookup()), 64 << 20);
  EXPECT_EQ(read_milliseconds(Setting::kCycleTime, none.lookup()), 1.0);
  EXPECT_EQ(read_seconds(Setting::kStallShutdownTimeSeconds, none.lookup()), 600);
  EXPECT_TRUE(read_bool(Setting::kShm, none.lookup()));
  EXPECT_EQ(read_string(Setting::kLogLevel, none.lookup()), "warning");
  EXPECT_EQ(read_string(Setting::kTimeline, none.lookup()), "");
  EXPECT_FALSE(is_set(Setting::kTimeline, none.lookup()));
}

TEST(SettingsReaders, HorovodNameIsAnAliasAndHorovodcppNameWins) {
  Env env;
  env.set("HOROVOD_CACHE_CAPACITY", "5");
  EXPECT_TRUE(is_set(Setting::kCacheCapacity, env.lookup()));
  EXPECT_EQ(read_int(Setting::kCacheCapacity, env.lookup()), 5);
  env.set("HOROVODCPP_CACHE_CAPACITY", "7");
  EXPECT_EQ(read_int(Setting::kCacheCapacity, env.lookup()), 7);
  EXPECT_EQ(read_text(Setting::kCacheCapacity, env.lookup()), "7");
}

TEST(SettingsReaders, TheProcessEnvironmentIsTheDefaultLookup) {
  setenv("HOROVOD_TIMELINE_MARK_CYCLES", "1", 1);
  EXPECT_TRUE(read_bool(Setting::kTimelineMarkCycles));
  setenv("HOROVODCPP_TIMELINE_MARK_CYCLES", "0", 1);
  EXPECT_FALSE(read_bool(Setting::kTimelineMarkCycles));
  unsetenv("HOROVODCPP_TIMELINE_MARK_CYCLES");
  unsetenv("HOROVOD_TIMELINE_MARK_CYCLES");
}

TEST(SettingsReaders, MalformedValuesNameTheVariableAndTheValue) {
  for (const char* bad : {"", "1ms", "fast", "3.5"}) {
    Env env;
    env.set("HOROVODCPP_CACHE_CAPACITY", bad);
    EXPECT_EQ(error_of([&] { read_int(Setting::kCacheCapacity, env.lookup()); }),
              "HOROVODCPP_CACHE_CAPACITY='" + std::string(bad) + "' is not an integer");
  }
  Env env;
  env.set("HOROVOD_CYCLE_TIME", "2x");
  EXPECT_EQ(error_of([&] { read_milliseconds(Setting::kCycleTime, env.lookup()); }),
            "HOROVOD_CYCLE_TIME='2x' is not a number");
  env.set("HOROVODCPP_AUTOTUNE", "yes");
  EXPECT_EQ(error_of([&] { read_bool(Setting::kAutotune, env.lookup()); }),
            "HOROVODCPP_AUTOTUNE='yes' is not an integer");
}

TEST(SettingsReaders, OutOfRangeValuesSayTheRange) {
  Env env;
  env.set("HOROVODCPP_AUTOTUNE_STEPS_PER_SAMPLE", "0");
  EXPECT_EQ(error_of([&] { read_int(Setting::kAutotuneStepsPerSample, env.lookup()); }),
            "HOROVODCPP_AUTOTUNE_STEPS_PER_SAMPLE='0' is out of range: must be between 1 and "
            "2147483647");
  env.set("HOROVODCPP_GLOO_RENDEZVOUS_PORT", "70000");
  EXPECT_EQ(error_of([&] { read_int(Setting::kGlooRendezvousPort, env.lookup()); }),
            "HOROVODCPP_GLOO_RENDEZVOUS_PORT='70000' is out of range: must be between 1 and "
            "65535");
  env.set("HOROVODCPP_FUSION_THRESHOLD", "-1");  // was taken as 0
  EXPECT_NE(error_of([&] {
              read_int(Setting::kFusionThreshold, env.lookup());
            }).find("must be between 0 and"),
            std::string::npos);
  env.set("HOROVODCPP_SHM", "-1");  // was "on" (not 0)
  EXPECT_EQ(error_of([&] { read_bool(Setting::kShm, env.lookup()); }),
            "HOROVODCPP_SHM='-1' is not 0 (off) or a number > 0 (on)");
}

TEST(SettingsReaders, BoolIsZeroOrANumberAboveZero) {
  Env env;
  env.set("HOROVODCPP_STALL_CHECK_DISABLE", "2");
  EXPECT_TRUE(read_bool(Setting::kStallCheckDisable, env.lookup()));
  env.set("HOROVODCPP_STALL_CHECK_DISABLE", "0");
  EXPECT_FALSE(read_bool(Setting::kStallCheckDisable, env.lookup()));
}

// One rule for every number of seconds: not negative, fractions allowed, and
// 0 only where the setting says what it means.
TEST(SettingsReaders, SecondsRule) {
  Env env;
  env.set("HOROVODCPP_PEER_TIMEOUT_SECONDS", "2.5");
  EXPECT_EQ(read_seconds(Setting::kPeerTimeoutSeconds, env.lookup()), 2.5);
  EXPECT_EQ(timeout_of(2.5), std::chrono::milliseconds(2500));
  EXPECT_EQ(timeout_of(0.0001), std::chrono::milliseconds(1));
  env.set("HOROVODCPP_PEER_TIMEOUT_SECONDS", "0");
  EXPECT_EQ(error_of([&] { read_seconds(Setting::kPeerTimeoutSeconds, env.lookup()); }),
            "HOROVODCPP_PEER_TIMEOUT_SECONDS='0' must be more than 0 seconds");
  env.set("HOROVODCPP_STALL_CHECK_TIME_SECONDS", "0");  // 0: no warnings
  EXPECT_EQ(read_seconds(Setting::kStallCheckTimeSeconds, env.lookup()), 0);
  env.set("HOROVODCPP_STALL_CHECK_TIME_SECONDS", "-1");
  EXPECT_EQ(error_of([&] { read_seconds(Setting::kStallCheckTimeSeconds, env.lookup()); }),
            "HOROVODCPP_STALL_CHECK_TIME_SECONDS='-1' is out of range: must be between 0 and "
            "10000000 seconds");
  env.set("HOROVODCPP_NCCL_TIMEOUT_SECONDS", "inf");
  EXPECT_EQ(error_of([&] { read_seconds(Setting::kNcclTimeoutSeconds, env.lookup()); }),
            "HOROVODCPP_NCCL_TIMEOUT_SECONDS='inf' is not a number");
}

TEST(SettingsReaders, FallbackSettingWhenUnset) {
  Env env;
  EXPECT_EQ(read_seconds(Setting::kGlooTimeoutSeconds, env.lookup()), 30);
  env.set("HOROVODCPP_PEER_TIMEOUT_SECONDS", "4");
  EXPECT_EQ(read_seconds(Setting::kGlooTimeoutSeconds, env.lookup()), 4);
  env.set("HOROVOD_GLOO_TIMEOUT_SECONDS", "7");
  EXPECT_EQ(read_seconds(Setting::kGlooTimeoutSeconds, env.lookup()), 7);
  EXPECT_EQ(read_seconds(Setting::kShmTimeoutSeconds, env.lookup()), 4);
  // A bad fallback value is named as what it is.
  env.set("HOROVODCPP_PEER_TIMEOUT_SECONDS", "0");
  EXPECT_EQ(error_of([&] { read_seconds(Setting::kShmTimeoutSeconds, env.lookup()); }),
            "HOROVODCPP_PEER_TIMEOUT_SECONDS='0' must be more than 0 seconds");
}

TEST(SettingsReaders, EnumsTakeAnyCaseAndNameTheChoices) {
  Env env;
  env.set("HOROVOD_CPU_OPERATIONS", "GLOO");
  EXPECT_EQ(read_string(Setting::kCpuOperations, env.lookup()), "gloo");
  env.set("HOROVODCPP_CPU_OPERATIONS", "tcp");
  EXPECT_EQ(error_of([&] { read_string(Setting::kCpuOperations, env.lookup()); }),
            "HOROVODCPP_CPU_OPERATIONS='tcp' is not one of mpi, gloo");
}

TEST(SettingsReaders, ReadingAsAnotherTypeOrWithoutDefaultIsABug) {
  const Env none;
  EXPECT_THROW(read_int(Setting::kCycleTime, none.lookup()), std::logic_error);
  EXPECT_THROW(read_int(Setting::kRank, none.lookup()), std::logic_error);
}

TEST(SettingsDoc, HelpAndMarkdownListEverySetting) {
  const std::string help = help_text();
  const std::string md = markdown();
  for (const Entry& e : table()) {
    EXPECT_NE(help.find("  " + variable(e.id) + "="), std::string::npos) << e.name;
    EXPECT_NE(md.find("| `" + variable(e.id) + "` |"), std::string::npos) << e.name;
  }
  EXPECT_NE(md.find("| `HOROVOD_AUTOTUNE_WARMUP_SAMPLES` |"), std::string::npos);
  EXPECT_EQ(md.find("`HOROVOD_SHM`"), std::string::npos);  // Horovod has no such setting
}

// Horovod's knobs horovodcpp does not act on: accepted under either name,
// and one line each, saying what happens instead, unless the value is what
// horovodcpp does anyway.
TEST(SettingsNoEffect, OneLineForEachKnobSetToSomethingElse) {
  EXPECT_TRUE(no_effect_warnings(Env().lookup()).empty());
  Env env;
  env.set("HOROVOD_TORUS_ALLREDUCE", "1")
      .set("HOROVODCPP_NUM_NCCL_STREAMS", "4")
      .set("HOROVOD_BATCH_D2D_MEMCOPIES", "1")  // what horovodcpp does: no line
      .set("HOROVOD_CCL_CACHE", "0");           // no default: any value is a line
  const std::vector<std::string> lines = no_effect_warnings(env.lookup());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "HOROVOD_TORUS_ALLREDUCE=1 is accepted and has no effect: there is no 2D torus "
            "allreduce; CUDA allreduce is flat NCCL or hierarchical "
            "(HOROVODCPP_HIERARCHICAL_ALLREDUCE)");
  EXPECT_EQ(lines[1].rfind("HOROVODCPP_NUM_NCCL_STREAMS=4 is accepted and has no effect: ", 0), 0u);
  EXPECT_EQ(lines[2].rfind("HOROVOD_CCL_CACHE=0 is accepted", 0), 0u);
}

TEST(SettingsNoEffect, EveryKnobHorovodDocumentsIsInTheTable) {
  std::size_t count = 0;
  for (const char* name :
       {"HIERARCHICAL_ALLGATHER", "TORUS_ALLREDUCE", "AUTOTUNE_GAUSSIAN_PROCESS_NOISE",
        "DISABLE_GROUP_FUSION", "BATCH_D2D_MEMCOPIES", "NUM_NCCL_STREAMS", "ENABLE_XLA_OPS",
        "MPI_THREADS_DISABLE", "ADASUM_MPI_CHUNK_SIZE", "CCL_CACHE", "ENABLE_ASYNC_COMPLETION"}) {
    for (const Entry& e : table()) {
      if (std::string(e.name) != name) continue;
      EXPECT_EQ(e.scope, Scope::kNoEffect) << name;
      EXPECT_TRUE(e.horovod_has) << name;
      ++count;
    }
  }
  EXPECT_EQ(count, 11u);
}

}  // namespace
}  // namespace settings
}  // namespace hvd
