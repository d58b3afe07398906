// Autotuner: a synthetic workload whose throughput depends on the parameters
// in force, fed cycle by cycle through a fake clock.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "core/tuning/autotuner.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;
constexpr std::size_t kMiB = 1u << 20;
const TunedParams kDefaults{64 * kMiB, microseconds(1000)};

// Bytes per second, highest at (best_bytes, best_cycle) and falling off with
// the log-distance from it in each dimension.
struct Peak {
  std::size_t best_bytes;
  microseconds best_cycle;
  double scale = 1;
  double operator()(const TunedParams& p) const {
    const double f = std::abs(std::log2(double(p.fusion_threshold_bytes) / double(best_bytes)));
    const double c = std::abs(std::log2(double(p.cycle_time.count()) / double(best_cycle.count())));
    return scale * 1e9 / ((1 + f) * (1 + c));
  }
};

AutotuneSettings enabled_settings() {
  AutotuneSettings s;
  s.enabled = true;
  return s;
}

// The coordinator's side: applies whatever the tuner returns and runs each
// non-idle cycle for as long as its bytes take at the parameters in force.
struct Simulation {
  Simulation(const AutotuneSettings& settings, TunedParams initial, Peak peak)
      : tuner(settings, initial), in_force(initial), throughput(peak) {}

  void call(std::size_t bytes) {
    auto next = tuner.record_cycle(bytes, now);
    if (next) {
      EXPECT_NE(*next, in_force) << "returned parameters that did not change";
      in_force = *next;
      switches.push_back(*next);
    }
    EXPECT_EQ(tuner.current(), in_force);
  }
  void busy(std::size_t bytes = kMiB) {
    now += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(double(bytes) / throughput(in_force)));
    ++busy_cycles;
    call(bytes);
  }
  void idle(Clock::duration d) {
    now += d;
    call(0);
  }
  // Runs until the tuner finishes (or gives up after a bound).
  void run(const std::function<void()>& before_each_cycle = [] {}) {
    call(0);  // starts the tuner's clock
    for (int i = 0; i < 100000 && tuner.active(); ++i) {
      before_each_cycle();
      busy();
    }
    EXPECT_FALSE(tuner.active()) << "tuning did not finish";
  }

  Autotuner tuner;
  TunedParams in_force;
  Peak throughput;
  Clock::time_point now{};
  std::vector<TunedParams> switches;
  int busy_cycles = 0;
};

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/autotune_" + name + "_" + std::to_string(::getpid()) + ".csv";
}

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream fields_in(line);
    std::string field;
    while (std::getline(fields_in, field, ',')) fields.push_back(field);
    rows.push_back(fields);
  }
  return rows;
}

double number(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  EXPECT_TRUE(!text.empty() && *end == '\0') << "not a number: '" << text << "'";
  return value;
}

TEST(Autotuner, EndsOnTheBestCandidate) {
  const std::vector<Peak> peaks = {{16 * kMiB, microseconds(500)},
                                   {1 * kMiB, microseconds(5000)},
                                   {64 * kMiB, microseconds(200)},
                                   {8 * kMiB, microseconds(2500)}};
  for (const Peak& peak : peaks) {
    SCOPED_TRACE(testing::Message()
                 << peak.best_bytes << " B, " << peak.best_cycle.count() << " us");
    Simulation sim(enabled_settings(), kDefaults, peak);
    sim.run();
    const TunedParams best{peak.best_bytes, peak.best_cycle};
    EXPECT_EQ(sim.tuner.current(), best);
    EXPECT_EQ(sim.in_force, best);
    // 3 warm-up samples, 6 thresholds, 4 more cycle times (the pair at the
    // initial cycle time is not measured again), 10 cycles each.
    EXPECT_EQ(sim.busy_cycles, (3 + 6 + 4) * 10);
    // Once finished, nothing changes any more.
    for (int i = 0; i < 50; ++i) sim.busy();
    EXPECT_EQ(sim.in_force, best);
  }
}

TEST(Autotuner, StartingValuesAreCandidatesToo) {
  // 3 MiB / 0.7 ms are in neither list; they are the best here, so they stay.
  const TunedParams initial{3 * kMiB, microseconds(700)};
  Simulation sim(enabled_settings(), initial, {3 * kMiB, microseconds(700)});
  sim.run();
  EXPECT_EQ(sim.tuner.current(), initial);
  EXPECT_FALSE(sim.switches.empty());
}

TEST(Autotuner, FixedFusionThresholdNeverChanges) {
  AutotuneSettings settings = enabled_settings();
  settings.fusion_threshold_fixed = true;
  const TunedParams initial{4096, microseconds(1000)};
  Simulation sim(settings, initial, {16 * kMiB, microseconds(500)});
  sim.run();
  ASSERT_FALSE(sim.switches.empty());
  for (const TunedParams& p : sim.switches) EXPECT_EQ(p.fusion_threshold_bytes, 4096u);
  EXPECT_EQ(sim.tuner.current(), (TunedParams{4096, microseconds(500)}));
}

TEST(Autotuner, FixedCycleTimeNeverChanges) {
  AutotuneSettings settings = enabled_settings();
  settings.cycle_time_fixed = true;
  const TunedParams initial{64 * kMiB, microseconds(3000)};
  Simulation sim(settings, initial, {16 * kMiB, microseconds(500)});
  sim.run();
  ASSERT_FALSE(sim.switches.empty());
  for (const TunedParams& p : sim.switches) EXPECT_EQ(p.cycle_time, microseconds(3000));
  EXPECT_EQ(sim.tuner.current(), (TunedParams{16 * kMiB, microseconds(3000)}));
}

TEST(Autotuner, BothFixedOrDisabledNeverChangesAnything) {
  AutotuneSettings both = enabled_settings();
  both.fusion_threshold_fixed = both.cycle_time_fixed = true;
  AutotuneSettings disabled;  // enabled = false
  for (AutotuneSettings settings : {both, disabled}) {
    settings.log_path = temp_path("never");
    std::remove(settings.log_path.c_str());
    Simulation sim(settings, kDefaults, {16 * kMiB, microseconds(500)});
    EXPECT_FALSE(sim.tuner.active());
    sim.call(0);
    for (int i = 0; i < 500; ++i) sim.busy();
    EXPECT_TRUE(sim.switches.empty());
    EXPECT_EQ(sim.tuner.current(), kDefaults);
    EXPECT_FALSE(std::ifstream(settings.log_path).good()) << "a log was written";
  }
}

TEST(Autotuner, IdleCyclesDoNotCountAsSamples) {
  AutotuneSettings settings = enabled_settings();
  settings.warmup_samples = 1;
  settings.cycles_per_sample = 3;
  Simulation sim(settings, kDefaults, {16 * kMiB, microseconds(500)});
  sim.call(0);
  for (int i = 0; i < 100; ++i) sim.idle(std::chrono::milliseconds(1));
  sim.busy();
  for (int i = 0; i < 100; ++i) sim.idle(std::chrono::milliseconds(1));
  sim.busy();
  EXPECT_TRUE(sim.switches.empty()) << "idle cycles completed the warm-up sample";
  sim.busy();  // the third non-idle cycle ends warm-up: the first candidate
  ASSERT_EQ(sim.switches.size(), 1u);
  EXPECT_EQ(sim.switches[0], (TunedParams{1 * kMiB, microseconds(1000)}));
}

TEST(Autotuner, ShortIdleGapsCountLongPausesDoNot) {
  AutotuneSettings settings = enabled_settings();
  settings.warmup_samples = 1;
  settings.cycles_per_sample = 2;
  settings.log_path = temp_path("time");
  using std::chrono::milliseconds;
  Autotuner tuner(settings, kDefaults);
  Clock::time_point t{};
  tuner.record_cycle(0, t);
  tuner.record_cycle(1000, t + milliseconds(10));
  for (int ms = 20; ms <= 510; ms += 10) tuner.record_cycle(0, t + milliseconds(ms));
  tuner.record_cycle(1000, t + milliseconds(520));  // sample 0: 0.52 s
  for (int ms = 530; ms <= 5520; ms += 10) tuner.record_cycle(0, t + milliseconds(ms));
  tuner.record_cycle(3000, t + milliseconds(5530));
  tuner.record_cycle(3000, t + milliseconds(5540));  // sample 1: 5.02 s less a 5 s pause

  const auto rows = read_csv(settings.log_path);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1][1], "warmup");
  EXPECT_NEAR(number(rows[1][5]), 0.52, 1e-9);
  EXPECT_NEAR(number(rows[1][6]), 2000 / 0.52, 1e-3);
  EXPECT_EQ(rows[2][1], "trial");
  EXPECT_EQ(number(rows[2][4]), 6000);
  EXPECT_NEAR(number(rows[2][5]), 0.02, 1e-9);
  std::remove(settings.log_path.c_str());
}

TEST(Autotuner, APauseDuringATrialDoesNotCostItTheWin) {
  bool paused = false;
  Simulation sim(enabled_settings(), kDefaults, {16 * kMiB, microseconds(500)});
  sim.run([&] {
    if (!paused && sim.in_force == TunedParams{16 * kMiB, microseconds(1000)}) {
      paused = true;  // an evaluation pass: 5 s of idle cycles mid-sample
      for (int i = 0; i < 500; ++i) sim.idle(std::chrono::milliseconds(10));
    }
  });
  EXPECT_TRUE(paused);
  EXPECT_EQ(sim.tuner.current(), (TunedParams{16 * kMiB, microseconds(500)}));
}

TEST(Autotuner, WarmupSamplesAreDiscarded) {
  // The first 30 cycles run 1000x faster than the best candidate ever will;
  // counted, they would make the initial 64 MiB / 1 ms win.
  Simulation sim(enabled_settings(), kDefaults, {16 * kMiB, microseconds(500)});
  sim.call(0);
  const Peak slow = sim.throughput;
  sim.throughput = {64 * kMiB, microseconds(1000), 1000};
  for (int i = 0; i < 29; ++i) sim.busy();
  EXPECT_TRUE(sim.switches.empty());
  sim.throughput = slow;
  sim.busy();  // the 30th cycle: the third warm-up sample ends
  ASSERT_EQ(sim.switches.size(), 1u);
  for (int i = 0; i < 1000 && sim.tuner.active(); ++i) sim.busy();
  EXPECT_EQ(sim.tuner.current(), (TunedParams{16 * kMiB, microseconds(500)}));
}

TEST(Autotuner, NoWarmupSwitchesAtTheFirstCall) {
  AutotuneSettings settings = enabled_settings();
  settings.warmup_samples = 0;
  Simulation sim(settings, kDefaults, {16 * kMiB, microseconds(500)});
  sim.call(0);
  ASSERT_EQ(sim.switches.size(), 1u);
  EXPECT_EQ(sim.switches[0], (TunedParams{1 * kMiB, microseconds(1000)}));
}

TEST(Autotuner, MaxTrialSamplesEndsEarlyOnTheBestSoFar) {
  AutotuneSettings settings = enabled_settings();
  settings.max_trial_samples = 4;  // 1, 4, 8 and 16 MiB
  Simulation sim(settings, kDefaults, {32 * kMiB, microseconds(500)});
  sim.run();
  EXPECT_EQ(sim.busy_cycles, (3 + 4) * 10);
  EXPECT_EQ(sim.tuner.current(), (TunedParams{16 * kMiB, microseconds(1000)}));
}

TEST(Autotuner, CsvLogHasOneRowPerSampleAndTheChoice) {
  AutotuneSettings settings = enabled_settings();
  settings.log_path = temp_path("csv");
  Simulation sim(settings, kDefaults, {16 * kMiB, microseconds(500)});
  sim.run();
  const auto rows = read_csv(settings.log_path);
  ASSERT_EQ(rows.size(), 1u + 3 + 10 + 1);
  EXPECT_EQ(rows[0],
            (std::vector<std::string>{"sample", "phase", "fusion_threshold_bytes", "cycle_time_ms",
                                      "bytes", "seconds", "throughput_bytes_per_s"}));
  for (std::size_t i = 1; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(rows[i].size(), 7u);
    for (int field : {0, 2, 3, 4, 5, 6}) number(rows[i][field]);
    const bool last = i + 1 == rows.size();
    EXPECT_EQ(rows[i][1], last ? "final" : i <= 3 ? "warmup" : "trial");
    if (!last) {
      EXPECT_EQ(number(rows[i][0]), double(i - 1));
      EXPECT_EQ(number(rows[i][4]), 10.0 * kMiB);
      EXPECT_NEAR(number(rows[i][6]), number(rows[i][4]) / number(rows[i][5]), 1);
    }
  }
  const auto& final_row = rows.back();
  EXPECT_EQ(number(final_row[2]), 16.0 * kMiB);
  EXPECT_EQ(number(final_row[3]), 0.5);
  EXPECT_NEAR(number(final_row[6]), 1e9, 1e3);
  std::remove(settings.log_path.c_str());
}

TEST(Autotuner, AnUnwritableLogDoesNotStopTuning) {
  AutotuneSettings settings = enabled_settings();
  settings.log_path = "/nonexistent-directory/autotune.csv";
  Simulation sim(settings, kDefaults, {16 * kMiB, microseconds(500)});
  sim.run();
  EXPECT_EQ(sim.tuner.current(), (TunedParams{16 * kMiB, microseconds(500)}));
}

class AutotuneSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name :
         {"AUTOTUNE", "AUTOTUNE_LOG", "AUTOTUNE_WARMUP_SAMPLES", "AUTOTUNE_STEPS_PER_SAMPLE",
          "AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "FUSION_THRESHOLD", "CYCLE_TIME"}) {
      unsetenv((std::string("HOROVODCPP_") + name).c_str());
      unsetenv((std::string("HOROVOD_") + name).c_str());
    }
  }
};

TEST_F(AutotuneSettingsTest, Defaults) {
  const AutotuneSettings s = autotune_settings_from_environment();
  EXPECT_FALSE(s.enabled);
  EXPECT_EQ(s.log_path, "");
  EXPECT_EQ(s.warmup_samples, 3);
  EXPECT_EQ(s.cycles_per_sample, 10);
  EXPECT_EQ(s.max_trial_samples, 20);
  EXPECT_FALSE(s.fusion_threshold_fixed);
  EXPECT_FALSE(s.cycle_time_fixed);
}

TEST_F(AutotuneSettingsTest, HorovodAndHorovodcppNames) {
  setenv("HOROVOD_AUTOTUNE", "1", 1);
  setenv("HOROVODCPP_AUTOTUNE_LOG", "/tmp/tune.csv", 1);
  setenv("HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "0", 1);
  setenv("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "25", 1);
  setenv("HOROVODCPP_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "7", 1);
  setenv("HOROVOD_FUSION_THRESHOLD", "1048576", 1);
  AutotuneSettings s = autotune_settings_from_environment();
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.log_path, "/tmp/tune.csv");
  EXPECT_EQ(s.warmup_samples, 0);
  EXPECT_EQ(s.cycles_per_sample, 25);
  EXPECT_EQ(s.max_trial_samples, 7);
  EXPECT_TRUE(s.fusion_threshold_fixed);
  EXPECT_FALSE(s.cycle_time_fixed);

  setenv("HOROVODCPP_CYCLE_TIME", "2", 1);
  setenv("HOROVODCPP_AUTOTUNE", "0", 1);  // wins over HOROVOD_AUTOTUNE=1
  s = autotune_settings_from_environment();
  EXPECT_FALSE(s.enabled);
  EXPECT_TRUE(s.cycle_time_fixed);
}

TEST_F(AutotuneSettingsTest, OutOfRangeValuesAreRejected) {
  setenv("HOROVODCPP_AUTOTUNE_STEPS_PER_SAMPLE", "0", 1);
  EXPECT_THROW(autotune_settings_from_environment(), InvalidArgument);
  unsetenv("HOROVODCPP_AUTOTUNE_STEPS_PER_SAMPLE");
  setenv("HOROVODCPP_AUTOTUNE_WARMUP_SAMPLES", "-1", 1);
  EXPECT_THROW(autotune_settings_from_environment(), InvalidArgument);
  unsetenv("HOROVODCPP_AUTOTUNE_WARMUP_SAMPLES");
  setenv("HOROVODCPP_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "many", 1);
  EXPECT_THROW(autotune_settings_from_environment(), InvalidArgument);
}

}  // namespace
}  // namespace hvd
