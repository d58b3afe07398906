// MpiBackend: the collectives on the context's data communicator.
#pragma once

#include <climits>
#include <cstddef>
#include <memory>
#include <vector>

#include "backend/mpi/mpi_context.h"
#include "backend/mpi/mpi_user_ops.h"
#include "core/execution/backend.h"

namespace hvd {

class MpiBackend : public Backend {
 public:
  static constexpr std::size_t kMaxBytesPerCall = std::size_t{1} << 30;

  // MPI counts are int, so larger buffers are moved in several calls of at
  // most `max_elements_per_call` elements (tests lower it to force that),
  // and of at most kMaxBytesPerCall bytes: Open MPI 4.1 slows down by two
  // orders of magnitude on single calls close to 2 GiB.
  explicit MpiBackend(std::shared_ptr<MpiContext> context,
                      std::size_t max_elements_per_call = INT_MAX);

  const char* name() const override { return "mpi"; }
  BackendCapabilities capabilities() const override;

  void allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) override;
  void allgatherv(const void* input, void* output, const std::vector<std::size_t>& counts,
                  DataType dtype) override;
  void broadcast(void* buffer, std::size_t count, DataType dtype, int root) override;
  // One MPI_Alltoallv when every rank's counts and displacements fit the
  // per-call limit (the ranks agree on that with a one-int MPI_Allreduce),
  // else a pairwise exchange of chunked MPI_Isend/MPI_Irecv.
  void alltoallv(const void* input, const std::vector<std::size_t>& send_counts, void* output,
                 const std::vector<std::size_t>& recv_counts, DataType dtype) override;
  // MPI_Reduce_scatter, or chunked MPI_Reduce to each rank in turn when the
  // total exceeds the per-call limit.
  void reducescatter(void* buffer, void* output, const std::vector<std::size_t>& counts,
                     DataType dtype, ReduceOp op) override;
  // Chunked MPI_Isend/MPI_Irecv with the peer.
  void sendrecv(const void* send, std::size_t send_count, void* recv, std::size_t recv_count,
                DataType dtype, int peer) override;

 private:
  MPI_Datatype mpi_datatype(DataType dtype) const;
  MPI_Op mpi_op(DataType dtype, ReduceOp op) const;
  void chunked_broadcast(char* buffer, std::size_t count, DataType dtype, int root);
  void pairwise_alltoallv(const char* input, const std::vector<std::size_t>& send_counts,
                          char* output, const std::vector<std::size_t>& recv_counts,
                          DataType dtype);
  // Sends `send_count` elements to `to` while receiving `recv_count` from
  // `from`, each in chunks of at most chunk_elements(dtype).
  void exchange(const char* send, std::size_t send_count, int to, char* recv,
                std::size_t recv_count, int from, DataType dtype);
  // Elements of `dtype` one MPI call moves at most.
  std::size_t chunk_elements(DataType dtype) const;

  std::shared_ptr<MpiContext> context_;
  std::size_t max_elements_per_call_;
  MpiUserOps user_ops_;
};

}  // namespace hvd
