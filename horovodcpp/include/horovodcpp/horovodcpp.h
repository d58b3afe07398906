// horovodcpp: data-parallel collectives for training loops.
//
//   hvd::init();
//   hvd::allreduce(hvd::view(grad), "fc1.grad");   // averaged across ranks
//   hvd::shutdown();
//
// Tensors are identified by name: every rank submits the same names (in any
// order) and a background coordinator agrees on one execution order. An
// empty name gets an automatic one ("allreduce.noname.<n>"), which is only
// consistent when every rank issues its unnamed calls in the same order.
#pragma once

#include <string>
#include <vector>

#include "horovodcpp/errors.h"
#include "horovodcpp/tensor.h"
#include "horovodcpp/types.h"
#include "horovodcpp/version.h"
#include "horovodcpp/work.h"

namespace hvd {

// Starts the runtime (and MPI if nobody has yet). Settings come from the
// environment (HOROVODCPP_*, or Horovod's HOROVOD_* names). After
// shutdown(), init() may be called again.
void init();
// Stops the coordinator. Operations still pending on any rank fail with
// hvd::RankFailure on every rank. Safe to call twice.
void shutdown();
bool is_initialized();

int rank();
int size();
int local_rank();   // rank among the processes on this host
int local_size();
int cross_rank();   // index of this host among hosts (ranks with equal local_rank)
int cross_size();

// Allreduce, out of place: `output` must have the dtype and element count of
// `input` (it may alias it). output = postscale * reduce(prescale * input).
Work allreduce_async(const TensorView& input, const TensorView& output,
                     const std::string& name = "", ReduceOp op = ReduceOp::kAverage,
                     double prescale_factor = 1.0, double postscale_factor = 1.0);
// Allreduce in place.
Work allreduce_async(const TensorView& tensor, const std::string& name = "",
                     ReduceOp op = ReduceOp::kAverage, double prescale_factor = 1.0,
                     double postscale_factor = 1.0);
void allreduce(const TensorView& input, const TensorView& output,
               const std::string& name = "", ReduceOp op = ReduceOp::kAverage,
               double prescale_factor = 1.0, double postscale_factor = 1.0);
void allreduce(const TensorView& tensor, const std::string& name = "",
               ReduceOp op = ReduceOp::kAverage, double prescale_factor = 1.0,
               double postscale_factor = 1.0);

// Allgather: concatenates every rank's tensor along the first dimension,
// which may differ between ranks (the other dimensions may not). The result
// is allocated by the library: Work::output(). Scalars are gathered as
// tensors of shape [1].
Work allgather_async(const TensorView& input, const std::string& name = "");
Tensor allgather(const TensorView& input, const std::string& name = "");

// Broadcast in place from `root_rank` to every other rank.
Work broadcast_async(const TensorView& tensor, int root_rank, const std::string& name = "");
void broadcast(const TensorView& tensor, int root_rank, const std::string& name = "");

// Alltoall: this rank sends splits[j] rows (first-dimension slices) of
// `input` to rank j, in rank order; empty `splits` sends equal parts (the
// first dimension must then be divisible by size()). The result, allocated
// by the library, concatenates in rank order the rows every rank sent to
// this one: Work::output(); how many rows came from each rank:
// Work::received_splits().
Work alltoall_async(const TensorView& input, const std::vector<std::int64_t>& splits = {},
                    const std::string& name = "");
Tensor alltoall(const TensorView& input, const std::vector<std::int64_t>& splits = {},
                const std::string& name = "",
                std::vector<std::int64_t>* received_splits = nullptr);

// Reducescatter: reduces `input` (same shape on every rank) like allreduce,
// and rank r receives its share of the first dimension: rows are split as
// evenly as possible, the first (rows % size) ranks getting one row more
// (as Horovod does). `op` is Sum or Average. Result: Work::output().
Work reducescatter_async(const TensorView& input, const std::string& name = "",
                         ReduceOp op = ReduceOp::kAverage, double prescale_factor = 1.0,
                         double postscale_factor = 1.0);
Tensor reducescatter(const TensorView& input, const std::string& name = "",
                     ReduceOp op = ReduceOp::kAverage, double prescale_factor = 1.0,
                     double postscale_factor = 1.0);

// Returns once every rank has called barrier().
void barrier();

}  // namespace hvd
