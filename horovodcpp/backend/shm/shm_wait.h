// How a rank waits on its peers in shared memory: never forever, and never
// burning a core that a peer needs. A wait spins briefly (the peer is
// usually a few microseconds away; only when every rank has a core), then
// yields the CPU for a while, then sleeps on the segment's doorbell (a
// futex) until a peer publishes progress. Every check interval the caller
// looks at its peers (alive? gave up?), and past the timeout it gives up.
//
// The doorbell is written only while some rank sleeps: a publisher that
// found no sleeper leaves its cache line shared, so that ranks in step
// exchange only the lines of their counters and data. This is the store
// buffering pattern: the publisher stores its counter (seq_cst), then reads
// the sleeper count (ring); a sleeper increments the count, then checks
// the counters again before it sleeps (Backoff::wait). Either the
// publisher sees the sleeper and rings, or the sleeper sees the counter.
#pragma once

#include <chrono>
#include <cstdint>

#include "backend/shm/shm_segment.h"

namespace hvd {
namespace shm {

// This process's identity; whether a process is still running (false once
// it has exited, even as a zombie its parent has not reaped yet, or when its
// pid now belongs to a newer process).
ProcessId this_process();
bool process_alive(const ProcessId& process);

struct WaitPolicy {
  std::chrono::nanoseconds timeout = std::chrono::seconds(30);
  // Spinning only pays while every rank has a core of its own.
  bool spin = true;
  std::chrono::nanoseconds spin_for = std::chrono::microseconds(20);
  std::chrono::nanoseconds check_interval = std::chrono::milliseconds(100);
};

// Wakes the ranks sleeping on `bell`; called after publishing progress
// with a seq_cst store. Writes the doorbell and enters the kernel only when
// some rank sleeps.
void ring(Doorbell& bell);

class Backoff {
 public:
  Backoff(const WaitPolicy& policy, Doorbell& bell) : policy_(policy), bell_(bell) {}

  // Progress was made: the next wait starts from a short spin again.
  void reset() {
    waiting_ = false;
    spinning_ = false;
  }
  // No progress was possible: waits a little, or sleeps until the doorbell
  // rings, unless `ready()` (the caller's check for progress, with seq_cst
  // loads of the counters), asked again once this rank counts as a
  // sleeper, finds progress possible. Returns true when a check of the
  // peers is due (every check interval of one uninterrupted wait).
  template <typename Ready>
  bool wait(const Ready& ready);
  bool expired() const { return waited() >= policy_.timeout; }
  std::chrono::nanoseconds waited() const;

 private:
  using Clock = std::chrono::steady_clock;

  struct Step {
    std::chrono::nanoseconds sleep{0};  // > 0: sleep at most this long
    bool check_due = false;
  };
  // Spins or yields once, or says how long to sleep.
  Step step();
  // Counts this rank as a sleeper (until end_sleep); returns the
  // doorbell's count.
  std::uint32_t begin_sleep();
  // Sleeps while the doorbell still shows `seen`, at most `limit`.
  void sleep(std::uint32_t seen, std::chrono::nanoseconds limit);
  void end_sleep();

  const WaitPolicy& policy_;
  Doorbell& bell_;
  bool waiting_ = false;
  bool spinning_ = false;  // the last clock read was within the spin
  int spins_ = 0;          // since the last clock read
  Clock::time_point start_;
  Clock::time_point next_check_;
};

template <typename Ready>
bool Backoff::wait(const Ready& ready) {
  const Step next = step();
  if (next.sleep.count() > 0) {
    const std::uint32_t seen = begin_sleep();
    if (!ready()) sleep(seen, next.sleep);
    end_sleep();
  }
  return next.check_due;
}

}  // namespace shm
}  // namespace hvd
