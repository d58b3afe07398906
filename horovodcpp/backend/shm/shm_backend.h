// ShmBackend: collectives through one shared-memory segment when every rank
// of the transport runs on this host. It decorates the transport's own
// backend (the inner one), which still runs alltoallv, and everything when
// the segment could not be set up.
//
// Allreduce and reducescatter are a pipelined reduce-scatter + allgather
// over the segment (shm_pipeline.h): each rank copies a chunk of its buffer
// into its slot, reduces its share of the chunk across all slots (in rank
// order, in one pass: reduce_many), and copies every share of the result
// out. Each element is thus reduced by one rank only, so every rank gets
// the same bits. Broadcast and allgatherv stream through the slots the same
// way without the reduce step.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backend/shm/forwarding_backend.h"
#include "backend/shm/shm_pipeline.h"
#include "backend/shm/shm_segment.h"
#include "core/execution/backend.h"
#include "core/negotiation/controller.h"

namespace hvd {

struct ShmOptions {
  // One rank's slot per stage. 256 KiB measured best on 2 cores (2 and 4
  // ranks, 1-64 MiB; bench/README.md): large enough that a chunk's steps
  // cost more than the waits between them, small enough to stay in cache.
  std::size_t slot_bytes = std::size_t{256} << 10;
  int stages = 4;
  std::chrono::nanoseconds timeout = std::chrono::seconds(30);

  // HOROVODCPP_PEER_TIMEOUT_SECONDS (or HOROVODCPP_SHM_TIMEOUT_SECONDS for
  // shared memory alone), HOROVODCPP_SHM_SLOT_BYTES.
  static ShmOptions from_environment();
};

class ShmBackend : public ForwardingBackend {
 public:
  // Collective over `controller`'s ranks, which must all be on this host.
  // Rank 0 creates the segment under a fresh name and tells the others; once
  // every rank has mapped it, the name is removed, so nothing is left in
  // /dev/shm however the job ends. If any rank cannot map it, every rank
  // logs why and delegates everything to `inner`. A peer that stops
  // answering (no progress within the timeout) is named by `controller`'s
  // roll call (Controller::give_up), which outlives this backend.
  ShmBackend(std::unique_ptr<Backend> inner, Controller& controller,
             const ShmOptions& options = ShmOptions::from_environment());

  const char* name() const override { return active() ? "shm" : inner_->name(); }
  // False: the core stages float16/bfloat16 Sum/Product through float32.
  // (Halves this backend gets directly are also accumulated in float32 and
  // rounded once, so both paths give the same results.)
  BackendCapabilities capabilities() const override;

  void allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) override;
  // Inactive, the inner backend's lanes (its capabilities are this one's).
  void allreduce_in_lane(void* buffer, std::size_t count, DataType dtype, ReduceOp op,
                         int lane) override;
  // Each rank scales its share of a chunk right after reducing it, in cache.
  void allreduce_scaled(void* buffer, std::size_t count, DataType dtype, ReduceOp op,
                        double divisor, double factor) override;
  void allgatherv(const void* input, void* output, const std::vector<std::size_t>& counts,
                  DataType dtype) override;
  void broadcast(void* buffer, std::size_t count, DataType dtype, int root) override;
  // The allreduce's pipeline, each rank copying out only its own share.
  void reducescatter(void* buffer, void* output, const std::vector<std::size_t>& counts,
                     DataType dtype, ReduceOp op) override;

  // This rank cannot go on (a stage outside the segment failed): the peers'
  // next or current wait on it fails at once with `reason`.
  void abandon(const std::string& reason);

  // What its errors call the ranks: job_ranks[r] for the controller's rank
  // r (by default r itself). The two-level backend, whose segment is one
  // host's, names the job's ranks.
  void name_ranks(std::vector<int> job_ranks) {
    if (pipeline_) pipeline_->name_ranks(std::move(job_ranks));
  }

  // Whether the segment is in use (false: everything goes to the inner backend).
  bool active() const { return pipeline_ != nullptr; }
  // The segment's name ("/hvdcpp-..."), already removed from /dev/shm.
  const std::string& segment_name() const { return segment_name_; }

 private:
  // pipeline_->run, and a peer that stopped answering (shm::PeerSilent)
  // through the controller's roll call.
  template <typename Fill, typename Reduce, typename Drain>
  void run_pipeline(const char* what, std::uint64_t chunks, bool reduces, Fill&& fill,
                    Reduce&& reduce, Drain&& drain) {
    try {
      pipeline_->run(what, chunks, reduces, fill, reduce, drain);
    } catch (const shm::PeerSilent& e) {
      controller_.give_up(std::string("shm ") + what, e.what());
    }
  }
  // Reduces `count` elements of `buffer` across ranks, scaling the result
  // (scale_in_place's divisor and factor); each rank's drain copies the
  // elements in [keep_begin, keep_end) to out + (i - keep_begin).
  void reduce_chunks(const char* what, unsigned char* buffer, std::size_t count, DataType dtype,
                     ReduceOp op, std::size_t keep_begin, std::size_t keep_end, unsigned char* out,
                     double divisor = 1.0, double factor = 1.0);

  Controller& controller_;
  int rank_ = 0;
  int size_ = 1;
  std::string segment_name_;
  shm::ShmSegment segment_;
  std::unique_ptr<shm::ChunkPipeline> pipeline_;
  // Per-call scratch, kept to avoid allocations: reduce_many's inputs and
  // allgatherv's byte offsets.
  std::vector<const void*> sources_;
  std::vector<std::size_t> offsets_;
};

// Whether the ranks use shared memory: rank 0's HOROVODCPP_SHM decides for
// all (ranks that disagreed would run different setup collectives and hang).
// Collective over `controller`.
bool shm_agreed(Controller& controller);

// The transport hook: wraps `backend` in a ShmBackend when the job has more
// than one rank, all on this host, and HOROVODCPP_SHM is not 0 on rank 0.
// Collective over `controller` in that case.
std::unique_ptr<Backend> maybe_use_shm(std::unique_ptr<Backend> backend, Controller& controller);

}  // namespace hvd
