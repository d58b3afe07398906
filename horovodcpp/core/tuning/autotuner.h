// Autotuner: rank 0's search for the fusion threshold and cycle time that
// move the most bytes per second (HOROVODCPP_AUTOTUNE=1). The coordinator
// calls record_cycle() once per cycle with the bytes it reduced; whenever a
// call returns parameters, rank 0 broadcasts them in that cycle's response
// list so every rank switches at the same cycle.
//
// Search (deterministic, so a log can be explained and a run repeated):
// `warmup_samples` samples at the initial values are discarded (first steps
// allocate, compile and fill caches); then each fusion threshold candidate is
// measured for one sample with the cycle time unchanged, the best is kept,
// and each cycle time candidate is measured with that threshold. The best
// pair of the last dimension is final and tuning ends. A dimension the user
// set explicitly is skipped. Horovod uses Bayesian optimisation over both at
// once; two short one-dimensional sweeps need fewer samples for two knobs
// and their outcome can be read off the CSV log.
#pragma once

#include <chrono>
#include <cstddef>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace hvd {

struct TunedParams {
  std::size_t fusion_threshold_bytes;
  std::chrono::microseconds cycle_time;
};

inline bool operator==(const TunedParams& a, const TunedParams& b) {
  return a.fusion_threshold_bytes == b.fusion_threshold_bytes && a.cycle_time == b.cycle_time;
}
inline bool operator!=(const TunedParams& a, const TunedParams& b) { return !(a == b); }

struct AutotuneSettings {
  bool enabled = false;                 // AUTOTUNE
  std::string log_path;                 // AUTOTUNE_LOG: CSV of every sample; empty: none
  int warmup_samples = 3;               // AUTOTUNE_WARMUP_SAMPLES: discarded samples
  int cycles_per_sample = 10;           // AUTOTUNE_STEPS_PER_SAMPLE: non-idle cycles per sample
  int max_trial_samples = 20;           // AUTOTUNE_BAYES_OPT_MAX_SAMPLES: cap on measured samples
  bool fusion_threshold_fixed = false;  // FUSION_THRESHOLD set explicitly
  bool cycle_time_fixed = false;        // CYCLE_TIME set explicitly

  // Up to 64 MiB, Horovod's range: the fusion buffer grows to the threshold
  // and stays, so a larger candidate would cost memory for the whole job.
  std::vector<std::size_t> fusion_threshold_candidates = {1u << 20,  4u << 20,  8u << 20,
                                                          16u << 20, 32u << 20, 64u << 20};
  // Around the 1 ms default: shorter cycles start collectives sooner, longer
  // ones fuse more tensors per collective and negotiate less often.
  std::vector<std::chrono::microseconds> cycle_time_candidates = {
      std::chrono::microseconds(200), std::chrono::microseconds(500),
      std::chrono::microseconds(1000), std::chrono::microseconds(2500),
      std::chrono::microseconds(5000)};
  // A run of idle cycles longer than this inside a sample (evaluation, a
  // checkpoint, a slow data loader) is left out of the sample's time: it is
  // the training loop's, not the parameters'. Shorter gaps (the forward pass
  // between two backward passes) count, whatever the cycle time, so that
  // short cycle times are not favoured for merely seeing more idle cycles.
  std::chrono::steady_clock::duration pause_threshold = std::chrono::seconds(1);
};

// HOROVODCPP_AUTOTUNE, _AUTOTUNE_LOG, _AUTOTUNE_WARMUP_SAMPLES,
// _AUTOTUNE_STEPS_PER_SAMPLE, _AUTOTUNE_BAYES_OPT_MAX_SAMPLES (or their
// HOROVOD_* names); a dimension is fixed when HOROVODCPP_FUSION_THRESHOLD /
// HOROVODCPP_CYCLE_TIME is set. Out-of-range values are an InvalidArgument.
AutotuneSettings autotune_settings_from_environment();

class Autotuner {
 public:
  Autotuner(const AutotuneSettings& settings, TunedParams initial);

  // Enabled, something left to tune and not finished.
  bool active() const { return phase_ != Phase::kDone; }
  // The parameters in force (those last returned, or the initial ones).
  const TunedParams& current() const { return current_; }

  // Rank 0, once per coordinator cycle: `bytes` reduced this cycle, 0 for an
  // idle cycle (idle cycles do not count towards a sample). A sample's time
  // runs from the previous sample's end, so the wait for each cycle counts.
  // Returns the parameters to switch to when they change (the next
  // candidate, or the final best), else nullopt. Never throws; the first
  // call only starts the clock.
  std::optional<TunedParams> record_cycle(std::size_t bytes,
                                          std::chrono::steady_clock::time_point now);

 private:
  enum class Phase { kWarmup, kFusionThreshold, kCycleTime, kDone };
  struct Trial {
    TunedParams params;
    int sample;
    std::size_t bytes;
    double seconds;
    double throughput;
  };

  void finish_sample(std::chrono::steady_clock::time_point now);
  void start_search();
  void start_phase(Phase phase);
  void select_candidate();
  const Trial* best() const;
  void finish();
  void write_row(const char* phase, const Trial& trial);

  AutotuneSettings settings_;
  TunedParams current_;
  Phase phase_;
  std::vector<TunedParams> candidates_;  // the phase's, ascending
  std::size_t candidate_index_ = 0;
  std::vector<Trial> trials_;  // measured samples (warm-up excluded)
  int samples_ = 0;            // samples completed (warm-up included): the CSV index
  int warmups_left_;

  bool started_ = false;
  std::chrono::steady_clock::time_point sample_start_, last_call_, last_busy_;
  std::chrono::steady_clock::duration paused_{0};
  int busy_cycles_ = 0;
  std::size_t sample_bytes_ = 0;

  std::ofstream log_;
  bool log_failed_ = false;
};

}  // namespace hvd
