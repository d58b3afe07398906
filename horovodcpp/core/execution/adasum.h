// Adasum: the adaptive summation of Maleki et al. ("Scaling Distributed
// Training with Adaptive Summation", MLSys 2021), the allreduce behind
// Horovod's hvd.Adasum. Two gradients a and b combine into
//
//   (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b
//
// (a coefficient is 1 where its vector's squared norm is below 1e-8): their
// sum where they are orthogonal, their average where they are equal. The
// ranks combine pairwise up a binary tree, adjacent ranks first, as
// Horovod's adasum.h does: a vector-halving distance-doubling reduce-scatter
// (each rank ends with 1/size of the result) followed by the mirror-image
// allgather, all on Backend::sendrecv. A vector split across ranks needs
// its dot product and norms summed over the ranks that hold its pieces: a
// recursive-doubling exchange among them (Horovod: an MPI_Allreduce on a
// sub-communicator).
#pragma once

#include <cstddef>
#include <vector>

#include "core/execution/backend.h"
#include "horovodcpp/types.h"

namespace hvd {

class AdasumReducer {
 public:
  // Over the `size` ranks of `backend`, as `rank`.
  AdasumReducer(Backend& backend, int rank, int size);

  // Collective: replaces `buffer` (float32 or float64) with the Adasum of
  // every rank's buffer. The buffer holds several tensors back to back,
  // counts[t] elements each; each is combined with coefficients of its own
  // (as if reduced alone). Every rank gets the same bits. The number of
  // ranks must be a power of two (InvalidArgument otherwise, before any
  // communication).
  void allreduce(void* buffer, const std::vector<std::size_t>& counts, DataType dtype);

 private:
  template <typename T>
  void run(T* buffer, const std::vector<std::size_t>& counts);
  // Sums `values` over the 2 * level ranks that share rank / (2 * level).
  void sum_over_group(std::vector<double>& values, int level);

  Backend& backend_;
  int rank_;
  int size_;
  std::vector<unsigned char> received_;  // the partner's half, reused across calls
  std::vector<double> partials_;         // per tensor: dot, |left|^2, |right|^2
  std::vector<double> peer_partials_;
};

}  // namespace hvd
