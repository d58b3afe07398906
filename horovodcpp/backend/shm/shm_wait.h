// How a rank waits on its peers in shared memory: never forever, and never
// burning a core that a peer needs. A wait spins briefly (the peer is
// usually a few microseconds away; only when every rank has a core), then
// yields the CPU for a while, then sleeps on the segment's doorbell (a
// futex) until a peer publishes progress. Every check interval the caller
// looks at its peers (alive? gave up?), and past the timeout it gives up.
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

// Wakes the ranks sleeping on `bell`; called after publishing progress.
// Enters the kernel only when some rank sleeps.
void ring(Doorbell& bell);

class Backoff {
 public:
  Backoff(const WaitPolicy& policy, Doorbell& bell) : policy_(policy), bell_(bell) {}

  // The doorbell's count, read before checking whether progress is
  // possible: a wait returns at once if it rang since.
  std::uint32_t rings() const { return bell_.rings.load(std::memory_order_seq_cst); }
  // Progress was made: the next wait starts from a short spin again.
  void reset() { waiting_ = false; }
  // No progress was possible when the doorbell showed `seen`: waits a
  // little, or until it rings. Returns true when a check of the peers is due
  // (every check interval of one uninterrupted wait).
  bool wait(std::uint32_t seen);
  bool expired() const { return waited() >= policy_.timeout; }
  std::chrono::nanoseconds waited() const;

 private:
  using Clock = std::chrono::steady_clock;

  // Sleeps on the doorbell while it still shows `seen`, at most `limit`.
  void sleep(std::uint32_t seen, std::chrono::nanoseconds limit);

  const WaitPolicy& policy_;
  Doorbell& bell_;
  bool waiting_ = false;
  Clock::time_point start_;
  Clock::time_point next_check_;
};

}  // namespace shm
}  // namespace hvd
