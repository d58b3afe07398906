#include "backend/shm/shm_pipeline.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <utility>

#include "base/check.h"
#include "core/diagnostics/peer_failure.h"

namespace hvd {
namespace shm {

ChunkPipeline::ChunkPipeline(const ShmSegment& segment, int rank, WaitPolicy policy)
    : segment_(segment),
      rank_(rank),
      ranks_(segment.geometry().ranks),
      stages_(static_cast<std::uint64_t>(segment.geometry().stages)),
      policy_(policy),
      watched_(static_cast<std::size_t>(ranks_)),
      names_(static_cast<std::size_t>(ranks_)) {
  for (int r = 0; r < ranks_; ++r) {
    watched_[r] = process_alive(segment.record(r).process);
    names_[r] = r;
  }
}

void ChunkPipeline::name_ranks(std::vector<int> names) {
  HVD_CHECK(names.size() == static_cast<std::size_t>(ranks_), InvalidArgument,
            "a name for each of the segment's " << ranks_ << " ranks, got " << names.size());
  names_ = std::move(names);
}

bool ChunkPipeline::all_at_least(Counter counter, std::uint64_t value) {
  if (reached_by_all_[counter] >= value) return true;
  std::uint64_t lowest = UINT64_MAX;
  for (int r = 0; r < ranks_; ++r) {
    // seq_cst: a rank about to sleep asks again here (shm_wait.h).
    const std::uint64_t reached =
        segment_.record(r).counters[counter].value.load(std::memory_order_seq_cst);
    if (reached < value) return false;
    lowest = std::min(lowest, reached);
  }
  reached_by_all_[counter] = lowest;
  return true;
}

void ChunkPipeline::publish(Counter counter, std::uint64_t value, bool wake) const {
  std::atomic<std::uint64_t>& mine = segment_.record(rank_).counters[counter].value;
  if (!wake) {
    mine.store(value, std::memory_order_release);
    return;
  }
  mine.store(value, std::memory_order_seq_cst);
  ring(segment_.header().doorbell);
}

void ChunkPipeline::check_usable(const char* what) const {
  HVD_CHECK(!broken_, RankFailure,
            "shm " << what
                   << ": the shared-memory path failed in an earlier collective; the "
                      "ranks are no longer in step");
}

void ChunkPipeline::give_up(const char* reason) {
  broken_ = true;
  Header& header = segment_.header();
  std::int32_t none = -1;
  if (!header.failed_rank.compare_exchange_strong(none, rank_, std::memory_order_acq_rel)) return;
  std::strncpy(header.failed_reason, reason, sizeof header.failed_reason - 1);
  header.failed_reason[sizeof header.failed_reason - 1] = '\0';
  header.failed_reason_ready.store(1, std::memory_order_release);
}

void ChunkPipeline::check_peers(const char* what, Counter counter, std::uint64_t needed,
                                std::uint64_t base, std::uint64_t chunks,
                                const Backoff& backoff) const {
  static const char* const kSteps[] = {"copied in", "reduced", "copied out"};
  // The chunk waited for, counted in this call (a slot's previous user may
  // belong to the call before: then it is negative).
  const long long chunk = static_cast<long long>(needed - 1) - static_cast<long long>(base);
  std::vector<int> behind;
  for (int r = 0; r < ranks_; ++r) {
    const RankRecord& record = segment_.record(r);
    if (record.counters[counter].value.load(std::memory_order_acquire) >= needed) continue;
    if (watched_[r] && !process_alive(record.process)) {
      std::ostringstream message;
      message << "shm " << what << ": rank " << names_[r] << " (pid " << record.process.pid
              << ") died; this rank waited for it to have " << kSteps[counter] << " chunk " << chunk
              << " of " << chunks;
      throw RankFailure(message.str(), {names_[r]});
    }
    behind.push_back(names_[r]);
  }
  const Header& header = segment_.header();
  const std::int32_t failed = header.failed_rank.load(std::memory_order_acquire);
  if (failed >= 0 && failed != rank_) {
    const bool told = header.failed_reason_ready.load(std::memory_order_acquire) != 0;
    HVD_THROW(PeerSilent, "rank " << names_[failed] << " gave up on the shared-memory segment: "
                                  << (told ? header.failed_reason : "(no reason yet)"));
  }
  HVD_CHECK(!backoff.expired(), PeerSilent,
            ranks_str(behind) << " did not get chunk " << chunk << " of " << chunks << " "
                              << kSteps[counter] << " within "
                              << std::chrono::duration<double>(policy_.timeout).count()
                              << " s, HOROVODCPP_PEER_TIMEOUT_SECONDS");
}

}  // namespace shm
}  // namespace hvd
