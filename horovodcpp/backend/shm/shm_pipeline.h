// ChunkPipeline: runs one collective on the segment as a stream of chunks,
// each going through three steps on every rank:
//   fill    this rank copies its part of the chunk into its slot
//   reduce  once every rank has filled it, this rank reduces its share of
//           the chunk across all slots (skipped by collectives that only move data)
//   drain   once every rank has reduced it, this rank copies out the result
// The segment has `stages` slots per rank, so a rank fills chunk c+1, c+2,
// ... while the others still reduce or drain chunk c: large tensors stream
// through a fixed amount of memory. A slot is refilled only after every rank
// has drained the chunk that used it before.
//
// Steps are published as per-rank counters (seq_cst stores, then the
// doorbell rings for any rank asleep) and read by the others. Collectives
// that only move data have no reduce step: a rank drains a chunk once
// every rank has filled it, and its reduced counter only keeps in step.
// The loop does whatever step is possible, the reduce first (the others
// wait for it), and waits (shm_wait.h) only when none is. What a rank last
// read of its peers' counters is remembered: they only grow, so a slot
// that every rank had drained is not asked about again.
#pragma once

#include <cstdint>
#include <exception>
#include <vector>

#include "backend/shm/shm_segment.h"
#include "backend/shm/shm_wait.h"
#include "core/diagnostics/peer_failure.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace shm {

// A peer did not make progress in time, or gave up on the segment.
using PeerSilent = hvd::PeerSilent;

class ChunkPipeline {
 public:
  // Every rank's record must hold its process identity by now.
  ChunkPipeline(const ShmSegment& segment, int rank, WaitPolicy policy);

  // fill(chunk, stage), reduce(chunk, stage), drain(chunk, stage); chunks
  // are numbered from 0 within this call. Every rank must call run with the
  // same number of chunks. Throws RankFailure naming a peer that died,
  // PeerSilent when a peer gives up or the timeout passes; the pipeline is
  // unusable afterwards (the ranks no longer agree on the chunk numbers), so
  // later calls throw too.
  template <typename Fill, typename Reduce, typename Drain>
  void run(const char* what, std::uint64_t chunks, bool reduces, Fill&& fill, Reduce&& reduce,
           Drain&& drain);
  // Marks the pipeline broken and tells the peers why (header.failed_*), so
  // they fail at once instead of waiting for this rank until the timeout.
  void give_up(const char* reason);
  // What its errors call the segment's ranks: names[r] for rank r (by
  // default r itself).
  void name_ranks(std::vector<int> names);

 private:
  int stage_of(std::uint64_t chunk) const { return static_cast<int>(chunk % stages_); }
  bool all_at_least(Counter counter, std::uint64_t value);
  // Stores this rank's counter; `wake`: rings for ranks that may wait on it.
  void publish(Counter counter, std::uint64_t value, bool wake = true) const;
  void check_usable(const char* what) const;
  // Throws if a rank this one waits for (counter below `needed`) has died or
  // a peer gave up; past the timeout, throws naming the ranks behind. `base`
  // and `chunks` place the chunk in this call, for the message.
  void check_peers(const char* what, Counter counter, std::uint64_t needed, std::uint64_t base,
                   std::uint64_t chunks, const Backoff& backoff) const;
  const ShmSegment& segment_;
  const int rank_;
  const int ranks_;
  const std::uint64_t stages_;
  const WaitPolicy policy_;
  // Peers whose process this rank could see at setup: only those are
  // checked for liveness (one in another pid namespace would look dead).
  std::vector<bool> watched_;
  std::vector<int> names_;
  // Per counter, the lowest value of any rank when last read.
  std::uint64_t reached_by_all_[kNumCounters] = {};
  std::uint64_t next_chunk_ = 0;  // chunk number the next call starts at
  bool broken_ = false;
};

template <typename Fill, typename Reduce, typename Drain>
void ChunkPipeline::run(const char* what, std::uint64_t chunks, bool reduces, Fill&& fill,
                        Reduce&& reduce, Drain&& drain) {
  check_usable(what);
  if (chunks == 0) return;
  const std::uint64_t base = next_chunk_;
  const std::uint64_t end = base + chunks;
  std::uint64_t filled = base, reduced = base, drained = base;
  // What a chunk's drain waits for.
  const Counter drain_after = reduces ? kReduced : kFilled;
  // The slot of chunk `filled` was last used by chunk filled - stages.
  auto can_reduce = [&] { return reduced < filled && all_at_least(kFilled, reduced + 1); };
  auto can_fill = [&] {
    return filled < end && (filled < stages_ || all_at_least(kDrained, filled - stages_ + 1));
  };
  auto can_drain = [&] { return drained < reduced && all_at_least(drain_after, drained + 1); };
  Backoff backoff(policy_, segment_.header().doorbell);
  try {
    while (drained < end) {
      bool progress = false;
      if (can_reduce()) {
        reduce(reduced - base, stage_of(reduced));
        publish(kReduced, ++reduced);
        progress = true;
      }
      if (can_fill()) {
        fill(filled - base, stage_of(filled));
        publish(kFilled, ++filled);
        if (!reduces) publish(kReduced, reduced = filled, /*wake=*/false);  // in step
        progress = true;
      }
      if (can_drain()) {
        drain(drained - base, stage_of(drained));
        publish(kDrained, ++drained);
        progress = true;
      }
      if (progress) {
        backoff.reset();
      } else if (backoff.wait([&] { return can_reduce() || can_fill() || can_drain(); })) {
        // What this rank waits for, in the loop's order of preference.
        if (drained < reduced) {
          check_peers(what, drain_after, drained + 1, base, chunks, backoff);
        } else if (reduced < filled) {
          check_peers(what, kFilled, reduced + 1, base, chunks, backoff);
        } else {
          check_peers(what, kDrained, filled - stages_ + 1, base, chunks, backoff);
        }
      }
    }
  } catch (const std::exception& e) {
    give_up(e.what());
    throw;
  }
  next_chunk_ = end;
}

}  // namespace shm
}  // namespace hvd
