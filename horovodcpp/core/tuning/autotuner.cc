#include "core/tuning/autotuner.h"

#include <algorithm>
#include <exception>
#include <iomanip>

#include "base/check.h"
#include "core/diagnostics/logging.h"
#include "settings/settings.h"

namespace hvd {
namespace {

double milliseconds(std::chrono::microseconds t) { return t.count() / 1000.0; }

}  // namespace

AutotuneSettings autotune_settings_from_environment() {
  using settings::Setting;
  AutotuneSettings s;
  s.enabled = settings::read_bool(Setting::kAutotune);
  s.log_path = settings::read_string(Setting::kAutotuneLog);
  // The table bounds them to [0 or 1, INT_MAX].
  s.warmup_samples = static_cast<int>(settings::read_int(Setting::kAutotuneWarmupSamples));
  s.cycles_per_sample = static_cast<int>(settings::read_int(Setting::kAutotuneStepsPerSample));
  s.max_trial_samples = static_cast<int>(settings::read_int(Setting::kAutotuneBayesOptMaxSamples));
  // Horovod's rule: a value the user chose is kept, only the others are tuned.
  s.fusion_threshold_fixed = settings::is_set(Setting::kFusionThreshold);
  s.cycle_time_fixed = settings::is_set(Setting::kCycleTime);
  return s;
}

Autotuner::Autotuner(const AutotuneSettings& settings, TunedParams initial)
    : settings_(settings),
      current_(initial),
      phase_(Phase::kDone),
      warmups_left_(std::max(0, settings.warmup_samples)) {
  settings_.cycles_per_sample = std::max(1, settings_.cycles_per_sample);
  settings_.max_trial_samples = std::max(1, settings_.max_trial_samples);
  if (!settings_.enabled) return;
  if (settings_.fusion_threshold_fixed && settings_.cycle_time_fixed) {
    HVD_LOG(Info) << "autotune: fusion threshold and cycle time are both set explicitly; "
                     "nothing to tune";
    return;
  }
  phase_ = Phase::kWarmup;
}

std::optional<TunedParams> Autotuner::record_cycle(std::size_t bytes,
                                                   std::chrono::steady_clock::time_point now) {
  if (phase_ == Phase::kDone) return std::nullopt;
  const TunedParams before = current_;
  try {
    if (!started_) {
      // Nothing is known about the time before the first call.
      started_ = true;
      sample_start_ = last_call_ = last_busy_ = now;
      if (warmups_left_ == 0) start_search();
    } else if (bytes == 0) {
      last_call_ = now;
    } else {
      const auto idle = last_call_ - last_busy_;
      if (idle > settings_.pause_threshold) paused_ += idle;
      last_call_ = last_busy_ = now;
      sample_bytes_ += bytes;
      if (++busy_cycles_ >= settings_.cycles_per_sample) finish_sample(now);
    }
  } catch (const std::exception& e) {
    // Tuning is an optimisation: the coordinator must keep running.
    HVD_LOG(Warning) << "autotune stopped: " << e.what();
    phase_ = Phase::kDone;
  }
  if (current_ != before) return current_;
  return std::nullopt;
}

void Autotuner::finish_sample(std::chrono::steady_clock::time_point now) {
  const double seconds =
      std::max(0.0, std::chrono::duration<double>(now - sample_start_ - paused_).count());
  Trial trial{current_, samples_++, sample_bytes_, seconds,
              seconds > 0 ? static_cast<double>(sample_bytes_) / seconds : 0.0};
  sample_start_ = now;
  paused_ = std::chrono::steady_clock::duration::zero();
  busy_cycles_ = 0;
  sample_bytes_ = 0;

  if (phase_ == Phase::kWarmup) {
    write_row("warmup", trial);
    if (--warmups_left_ <= 0) start_search();
    return;
  }
  write_row("trial", trial);
  HVD_LOG(Info) << "autotune: sample " << trial.sample << " fusion threshold "
                << trial.params.fusion_threshold_bytes << " B, cycle time "
                << milliseconds(trial.params.cycle_time) << " ms: " << trial.throughput << " B/s";
  trials_.push_back(trial);
  if (static_cast<int>(trials_.size()) >= settings_.max_trial_samples) {
    finish();
    return;
  }
  ++candidate_index_;
  select_candidate();
}

void Autotuner::start_search() {
  start_phase(settings_.fusion_threshold_fixed ? Phase::kCycleTime : Phase::kFusionThreshold);
}

void Autotuner::start_phase(Phase phase) {
  if (phase == Phase::kCycleTime && settings_.cycle_time_fixed) {
    finish();
    return;
  }
  // The current value is always a candidate, so tuning never ends on a value
  // measured slower than the one it started from.
  candidates_.assign(1, current_);
  if (phase == Phase::kFusionThreshold) {
    for (std::size_t bytes : settings_.fusion_threshold_candidates)
      candidates_.push_back({bytes, current_.cycle_time});
    std::sort(candidates_.begin(), candidates_.end(), [](const auto& a, const auto& b) {
      return a.fusion_threshold_bytes < b.fusion_threshold_bytes;
    });
  } else {
    for (auto cycle : settings_.cycle_time_candidates)
      candidates_.push_back({current_.fusion_threshold_bytes, cycle});
    std::sort(candidates_.begin(), candidates_.end(),
              [](const auto& a, const auto& b) { return a.cycle_time < b.cycle_time; });
  }
  candidates_.erase(std::unique(candidates_.begin(), candidates_.end()), candidates_.end());
  phase_ = phase;
  candidate_index_ = 0;
  select_candidate();
}

// Moves to the first candidate from candidate_index_ on that has no sample
// yet (the pair kept from the fusion phase is not measured twice); after the
// last one, keeps the best and starts the next phase.
void Autotuner::select_candidate() {
  const auto is_measured = [this](const TunedParams& p) {
    return std::any_of(trials_.begin(), trials_.end(),
                       [&p](const Trial& t) { return t.params == p; });
  };
  while (candidate_index_ < candidates_.size() && is_measured(candidates_[candidate_index_]))
    ++candidate_index_;
  if (candidate_index_ < candidates_.size()) {
    current_ = candidates_[candidate_index_];
    return;
  }
  if (const Trial* b = best()) current_ = b->params;
  if (phase_ == Phase::kFusionThreshold) {
    start_phase(Phase::kCycleTime);
  } else {
    finish();
  }
}

// The highest throughput measured; the earliest on a tie.
const Autotuner::Trial* Autotuner::best() const {
  const Trial* b = nullptr;
  for (const Trial& t : trials_)
    if (!b || t.throughput > b->throughput) b = &t;
  return b;
}

void Autotuner::finish() {
  phase_ = Phase::kDone;
  const Trial* b = best();
  if (!b) return;
  current_ = b->params;
  write_row("final", *b);
  HVD_LOG(Info) << "autotune: done after " << samples_ << " samples: fusion threshold "
                << current_.fusion_threshold_bytes << " B, cycle time "
                << milliseconds(current_.cycle_time) << " ms (" << b->throughput << " B/s)";
  if (log_.is_open()) log_.close();
}

// One CSV row per sample; the "final" row repeats the numbers of the sample
// that measured the chosen values. The file is opened at the first row.
void Autotuner::write_row(const char* phase, const Trial& trial) {
  if (settings_.log_path.empty() || log_failed_) return;
  if (!log_.is_open()) {
    log_.open(settings_.log_path, std::ios::out | std::ios::trunc);
    log_ << std::setprecision(12)
         << "sample,phase,fusion_threshold_bytes,cycle_time_ms,bytes,seconds,"
            "throughput_bytes_per_s\n";
  }
  log_ << trial.sample << ',' << phase << ',' << trial.params.fusion_threshold_bytes << ','
       << milliseconds(trial.params.cycle_time) << ',' << trial.bytes << ',' << trial.seconds << ','
       << trial.throughput << '\n';
  log_.flush();
  if (!log_) {
    HVD_LOG(Warning) << "autotune: cannot write " << settings_.log_path
                     << "; tuning goes on without its log";
    log_failed_ = true;
    log_.close();
  }
}

}  // namespace hvd
