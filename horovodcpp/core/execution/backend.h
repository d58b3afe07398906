// Backend: collectives on flat buffers. One implementation per communication
// library (backend/mpi, backend/gloo, backend/nccl); the core never knows which.
#pragma once

#include <cstddef>
#include <vector>

#include "base/check.h"
#include "core/execution/reduction.h"
#include "horovodcpp/types.h"

namespace hvd {

struct BackendCapabilities {
  // True if allreduce Sum/Product of float16/bfloat16 accumulates in float32
  // and rounds once. If false, the core stages those through float32.
  bool half_reduction_in_float32 = false;
  // True where the backend's bytes cross a network (MPI, Gloo) and it has
  // sendrecv: the core then reduces float16/bfloat16 Sum/Product of 64 KiB
  // and more as 16-bit shares (half_shares.h), half the bytes of widening
  // them to float32.
  bool half_as_16bit_shares = false;
  // True where the backend's transfers wait on a network (MPI, Gloo): a
  // large fused allreduce then runs a chunk at a time, the fusion buffer's
  // copies overlapping the transfers (fusion_pipeline.h).
  bool waits_on_network = false;
  // True for device backends (NCCL): buffers are device memory and each
  // call returns once its work is queued on the backend's CUDA stream, not
  // when it has completed.
  bool stream_ordered = false;
  // True if reducescatter leaves its `buffer` as it was: the core then
  // reduces the caller's tensor itself instead of a copy.
  bool reducescatter_keeps_input = false;
  // How many allreduces may run at once, each in its own lane
  // (allreduce_in_lane): a fused allreduce then keeps that many chunks on
  // the network, so the link does not idle while one chunk's ring drains.
  int allreduce_lanes = 1;
};

// What every sendrecv checks before communicating: `peer` is a rank of the
// `size` ranks, and an exchange with itself has equal counts.
inline void check_sendrecv_arguments(int peer, int rank, int size, std::size_t send_count,
                                     std::size_t recv_count) {
  HVD_CHECK(peer >= 0 && peer < size, InvalidArgument,
            "sendrecv: peer " << peer << " is not a rank of a job of size " << size);
  HVD_CHECK(
      peer != rank || send_count == recv_count, InvalidArgument,
      "sendrecv with itself: " << send_count << " elements sent, " << recv_count << " received");
}

// Element offsets of consecutive blocks of `counts` (each rank's part of a
// buffer in rank order); returns the total.
inline std::size_t offsets_of(const std::vector<std::size_t>& counts,
                              std::vector<std::size_t>& offsets) {
  offsets.resize(counts.size());
  std::size_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = total;
    total += counts[r];
  }
  return total;
}

// What a backend checks of a call's dtype and op: the core passes a known
// dtype and Sum, Min, Max or Product (Average is Sum and its own division).
// `backend` names it in the message ("Gloo", "shm").
inline void check_backend_dtype(DataType dtype) {
  HVD_CHECK(static_cast<unsigned>(dtype) < static_cast<unsigned>(kNumDataTypes), InvalidArgument,
            "unknown dtype " << static_cast<int>(dtype));
}
inline void check_backend_reduce_op(const char* backend, ReduceOp op) {
  HVD_CHECK(
      op != ReduceOp::kAverage, InvalidArgument,
      "the " << backend << " backend does not average; the core reduces with Sum and divides");
  HVD_CHECK(op == ReduceOp::kSum || op == ReduceOp::kMin || op == ReduceOp::kMax ||
                op == ReduceOp::kProduct,
            InvalidArgument, "unknown reduce op " << static_cast<int>(op));
}

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual BackendCapabilities capabilities() const = 0;

  // In-place allreduce of `count` elements. `op` is Sum, Min, Max or
  // Product (the core turns Average into Sum plus a division).
  virtual void allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) = 0;
  // allreduce from lane `lane` (< capabilities().allreduce_lanes), which
  // may run while another lane's does: each lane's calls come in the same
  // order on every rank. By default there is one lane.
  virtual void allreduce_in_lane(void* buffer, std::size_t count, DataType dtype, ReduceOp op,
                                 int lane) {
    HVD_CHECK(lane == 0, InvalidArgument, "the " << name() << " backend has one allreduce lane");
    allreduce(buffer, count, dtype, op);
  }
  // allreduce, then every element of the result scaled by factor / divisor
  // as scale_in_place does (Average, postscale).
  // A backend that can scale while the data is in its cache overrides this
  // and saves a pass over the buffer.
  virtual void allreduce_scaled(void* buffer, std::size_t count, DataType dtype, ReduceOp op,
                                double divisor, double factor) {
    allreduce(buffer, count, dtype, op);
    scale_in_place(dtype, buffer, count, divisor, factor);
  }
  // Rank r contributes counts[r] elements; `output` receives all of them
  // concatenated in rank order. `input` holds counts[rank] elements.
  virtual void allgatherv(const void* input, void* output, const std::vector<std::size_t>& counts,
                          DataType dtype) = 0;
  // In-place broadcast of `count` elements from `root`.
  virtual void broadcast(void* buffer, std::size_t count, DataType dtype, int root) = 0;
  // This rank sends send_counts[j] elements to rank j, taken consecutively
  // from `input` in rank order, and receives recv_counts[r] elements from
  // rank r into `output`, concatenated in rank order. Counts are elements;
  // send_counts[j] on this rank equals recv_counts[this rank] on rank j.
  virtual void alltoallv(const void* input, const std::vector<std::size_t>& send_counts,
                         void* output, const std::vector<std::size_t>& recv_counts,
                         DataType dtype) = 0;
  // Reduces `buffer` (sum of counts elements, the same counts on every rank)
  // across ranks and leaves rank r's share, counts[r] elements starting at
  // the sum of counts[0..r), in `output` (not aliasing `buffer`). `buffer`
  // may be clobbered. `op` is Sum, Min, Max or Product.
  virtual void reducescatter(void* buffer, void* output, const std::vector<std::size_t>& counts,
                             DataType dtype, ReduceOp op) = 0;
  // Pairwise exchange, collective over every rank: each calls it at the
  // same time naming its partner `peer` (whose partner it is), sends
  // `send_count` elements of `send` to it and receives the `recv_count`
  // elements the partner sends into `recv` (which must not overlap
  // `send`). A rank without a partner names itself: `send` is copied to
  // `recv` (equal counts). The Adasum reduction is built on it
  // (core/execution/adasum.h). The CPU backends implement it; this default refuses.
  virtual void sendrecv(const void* /*send*/, std::size_t /*send_count*/, void* /*recv*/,
                        std::size_t /*recv_count*/, DataType /*dtype*/, int /*peer*/) {
    HVD_THROW(InvalidArgument, "the " << name() << " backend has no pairwise exchange (sendrecv)");
  }
};

}  // namespace hvd
