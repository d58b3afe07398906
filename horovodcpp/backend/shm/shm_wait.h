// How a rank waits on its peers in shared memory: never forever, and never
// burning a core that a peer needs. A wait spins briefly (the peer is
// usually a few microseconds away), then yields the CPU, then sleeps with
// exponential backoff; every check interval the caller looks at its peers
// (alive? gave up?), and past the timeout it gives up.
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
  std::chrono::nanoseconds check_interval = std::chrono::milliseconds(100);
};

class Backoff {
 public:
  explicit Backoff(const WaitPolicy& policy) : policy_(policy) {}

  // Progress was made: the next wait starts from a short spin again.
  void reset() { waiting_ = false; }
  // No progress possible now: waits a little. Returns true when a check of
  // the peers is due (every check interval of one uninterrupted wait).
  bool wait();
  bool expired() const { return waited() >= policy_.timeout; }
  std::chrono::nanoseconds waited() const;

 private:
  using Clock = std::chrono::steady_clock;

  const WaitPolicy& policy_;
  bool waiting_ = false;
  Clock::time_point start_;
  Clock::time_point next_check_;
  std::chrono::microseconds sleep_{0};
};

}  // namespace shm
}  // namespace hvd
