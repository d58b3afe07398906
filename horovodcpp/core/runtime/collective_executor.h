// CollectiveExecutor: runs one cycle's agreed collectives on this rank's
// tensors and completes their Works. It takes the entries from the queue
// (a joined rank's zeros where it has none: JoinedZeros), plans fusion
// (fusion_plan), and hands each group to the CPU backend (CpuCollectives)
// or, for CUDA tensors, to the device (DeviceRouter).
#pragma once

#include <chrono>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include "core/device/device_operations.h"
#include "core/device/device_router.h"
#include "core/diagnostics/flight_recorder.h"
#include "core/diagnostics/timeline.h"
#include "core/execution/adasum.h"
#include "core/execution/backend.h"
#include "core/execution/cpu_collectives.h"
#include "core/execution/execution_trace.h"
#include "core/execution/joined_zeros.h"
#include "core/negotiation/controller.h"
#include "core/negotiation/message.h"
#include "core/negotiation/tensor_queue.h"

namespace hvd {

class CollectiveExecutor {
 public:
  // `fusion_threshold`: bytes of the fusion buffer (0 disables fusion).
  // `timeline` (may be null) receives each tensor's execution phases.
  // `device` (may be null: CUDA tensors are refused) runs CUDA tensors'
  // collectives, or stages them for `backend`; they complete asynchronously.
  // `recorder` (may be null): each batch's launch goes to its records.
  CollectiveExecutor(Backend& backend, const Topology& topology, Timeline* timeline,
                     DeviceOperations* device, std::size_t fusion_threshold,
                     FlightRecorder* recorder = nullptr);

  // Runs one cycle's agreed responses in order, taking their entries from
  // `queue`; allreduces that can share the fusion buffer run as one.
  // Never throws: failures go to the entries' Work.
  // Returns the bytes of this rank's tensors that the collectives moved
  // (what the autotuner measures).
  // `agreed`: the start of the cycle that agreed them (the flight recorder's).
  std::size_t execute_all(const std::vector<const Response*>& responses, TensorQueue& queue,
                          std::chrono::steady_clock::time_point agreed = {});

  // Inline allreduce (CacheNegotiation): writes this rank's input of
  // `request` to `out` as every rank reduces it (prescaled) and returns
  // true, if it is a CPU allreduce of at most `capacity` bytes (not
  // Adasum) in flight in `queue`.
  bool inline_input(const Request& request, std::size_t capacity, TensorQueue& queue,
                    std::string& out) const;
  // The same for a request whose input is `input` (null: none).
  bool inline_input(const Request& request, std::size_t capacity, const TensorView* input,
                    std::string& out) const;
  // Whether `request` on `input` is one that goes inline within `capacity`.
  static bool goes_inline(const Request& request, const TensorView& input, std::size_t capacity);
  // Completes `response`'s allreduce from every rank's inline input
  // (`inputs`, by rank): each rank reduces them in rank order, as the
  // shared-memory backend reduces a small tensor, so all get the same
  // bits. Never throws. Returns the bytes of this rank's tensor.
  std::size_t execute_inline(const Response& response, const std::vector<std::string>& inputs,
                             TensorQueue& queue, std::chrono::steady_clock::time_point agreed = {});
  // That reduction into `output` for this rank's `request`; throws if a
  // rank's input has another size. Returns the bytes of `output`.
  std::size_t reduce_inline(const Request& request, const TensorView& output,
                            const std::vector<std::string>& inputs);

  // The first RankFailure a collective failed with since the last call
  // (null if none): a peer was lost, and the job with it.
  std::exception_ptr take_peer_lost() { return std::exchange(peer_lost_, nullptr); }

  std::size_t fusion_threshold() const { return fusion_threshold_; }
  // Every rank must switch at the same cycle (they plan fusion alike).
  void set_fusion_threshold(std::size_t bytes) { fusion_threshold_ = bytes; }

 private:
  // The flight recorder's record of one batch's launch now (recorder_ set).
  void record_launch(const TensorEntry* const* batch, std::size_t count,
                     std::chrono::steady_clock::time_point agreed);
  // The response's entry from `queue` (zeros for a rank that joined);
  // nullopt when this rank has nothing to run for it.
  std::optional<TensorEntry> take(const Response& response, TensorQueue& queue);
  // One response's collective on its one entry.
  void execute(const Response& response, const TensorEntry& entry);
  // A fused allreduce group (two or more), completed or failed together.
  void execute_fused(const Response& response, const std::vector<const TensorEntry*>& group);
  // Keeps the exception in flight if it is a RankFailure (take_peer_lost).
  void note_if_peer_lost();

  const Topology& topology_;
  ExecutionTrace trace_;
  CpuCollectives cpu_;
  DeviceRouter device_;
  JoinedZeros joined_zeros_;  // a joined rank's zeros, kept for one cycle
  std::size_t fusion_threshold_;
  FlightRecorder* recorder_;   // may be null
  const char* backend_label_;  // the backends' names, as the recorder keeps them
  const char* device_label_;
  std::vector<const void*> inline_sources_;  // execute_inline's, reused
  std::exception_ptr peer_lost_;
};

}  // namespace hvd
