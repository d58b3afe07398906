// GlooBackend: the collectives on the context's data Gloo context. Gloo's
// counts are size_t, so no call is split. Reductions run hvd::reduce_into,
// so every dtype and op has the semantics documented in types.h (integers
// wrap around, bool is OR/AND, float16/bfloat16 round after each step).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/gloo/gloo_context.h"
#include "core/execution/backend.h"

namespace hvd {

class GlooBackend : public Backend {
 public:
  explicit GlooBackend(std::shared_ptr<GlooContext> context);

  const char* name() const override { return "gloo"; }
  BackendCapabilities capabilities() const override;

  void allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) override;
  // Lane 1 takes its tags from a range of its own.
  void allreduce_in_lane(void* buffer, std::size_t count, DataType dtype, ReduceOp op,
                         int lane) override;
  void allgatherv(const void* input, void* output, const std::vector<std::size_t>& counts,
                  DataType dtype) override;
  void broadcast(void* buffer, std::size_t count, DataType dtype, int root) override;
  // gloo::alltoallv.
  void alltoallv(const void* input, const std::vector<std::size_t>& send_counts, void* output,
                 const std::vector<std::size_t>& recv_counts, DataType dtype) override;
  // An allreduce of the whole buffer (with reduce_into), then this rank's
  // share is copied out. Gloo's own ReduceScatterHalvingDoubling is an
  // algorithm of the older typed API whose reduction is a plain function
  // pointer per element type: it cannot carry the dtype and op that
  // float16/bfloat16, bool and wrapping integers need. The allreduce moves
  // about twice the data of a true reduce-scatter.
  void reducescatter(void* buffer, void* output, const std::vector<std::size_t>& counts,
                     DataType dtype, ReduceOp op) override;
  // Gloo's unbound buffers: one send and one receive with the peer.
  void sendrecv(const void* send, std::size_t send_count, void* recv, std::size_t recv_count,
                DataType dtype, int peer) override;

 private:
  // Same order of collectives on every rank: the same tag everywhere.
  std::uint32_t next_tag() { return tag_++; }
  void allreduce_tagged(void* buffer, std::size_t count, DataType dtype, ReduceOp op,
                        std::uint32_t tag);

  std::shared_ptr<GlooContext> context_;
  std::uint32_t tag_ = 0;
  std::uint32_t second_lane_tag_ = std::uint32_t{1} << 31;
};

}  // namespace hvd
