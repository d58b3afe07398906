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

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "horovodcpp/errors.h"
#include "horovodcpp/export.h"
#include "horovodcpp/process_set.h"
#include "horovodcpp/tensor.h"
#include "horovodcpp/types.h"
#include "horovodcpp/version.h"
#include "horovodcpp/work.h"

namespace hvd {

// Starts the runtime (and MPI if nobody has yet). Settings come from the
// environment (HOROVODCPP_*, or Horovod's HOROVOD_* names). After
// shutdown(), init() may be called again.
HVD_EXPORT void init();
// init(), then add_process_set() of each rank list in order (ids 1, 2, ...;
// process_sets() lists them). Every rank must pass the same lists.
// InvalidArgument if already initialized.
HVD_EXPORT void init(const std::vector<std::vector<int>>& process_sets);
// init() on part of the ranks MPI launched, as Horovod's
// hvd.init(comm=[...]): the MPI_COMM_WORLD ranks `world_ranks` form a job of
// their own, ranked in the order given; each of them calls this with the
// same list (other ranks may form other jobs at the same time). MPI mode
// only (Gloo mode: only every rank in order); InvalidArgument on a rank that
// is not in the list.
HVD_EXPORT void init_on_ranks(const std::vector<int>& world_ranks,
                              const std::vector<std::vector<int>>& process_sets = {});
// Stops every process set's coordinator, then the global one. Operations
// still pending on any rank fail with hvd::RankFailure on every rank. Safe
// to call twice.
HVD_EXPORT void shutdown();
HVD_EXPORT bool is_initialized();

// This rank's place in the job (the global process set).
HVD_EXPORT int rank();
HVD_EXPORT int size();
HVD_EXPORT int local_rank();  // rank among the processes on this host
HVD_EXPORT int local_size();
HVD_EXPORT int cross_rank();  // index of this host among hosts (ranks with equal local_rank)
HVD_EXPORT int cross_size();
// True when every host runs the same number of ranks (agreed at init()).
HVD_EXPORT bool is_homogeneous();

// The transports this build has ("mpi", "gloo"), in order of preference;
// callable before init().
HVD_EXPORT std::vector<std::string> built_transports();
// What HOROVODCPP_GPU_OPERATIONS may name in this build: "nccl" when built
// with NCCL, then the CPU transports CUDA tensors can be staged through;
// empty without CUDA (CUDA tensors are refused). Callable before init().
HVD_EXPORT std::vector<std::string> built_gpu_operations();
// NCCL_VERSION_CODE of the NCCL this build uses (e.g. 22807 for 2.28.7),
// 0 without NCCL (Horovod's nccl_built()). Callable before init().
HVD_EXPORT int nccl_version();
// Whether MPI provides MPI_THREAD_MULTIPLE (other code may then call MPI
// too). InvalidArgument when the job does not run on MPI.
HVD_EXPORT bool mpi_threads_supported();
// The transport this job runs on: HOROVODCPP_CPU_OPERATIONS (or
// HOROVODCPP_CONTROLLER) as read at init(), else built_transports()[0].
HVD_EXPORT std::string transport();
// What the global process set's collectives run on: the transport's own
// backend ("mpi", "gloo"), "shm" (one host: shared memory), or "shm+mpi" /
// "shm+gloo" (several hosts: allreduce through shared memory inside each).
HVD_EXPORT std::string backend_name();

// Every collective runs on `process_set` (default: the global set, every
// rank); only its members may submit to it (InvalidArgument at once
// otherwise, or for a removed set). Tensor names are per process set, and
// "rank" and "size" in the comments below mean the rank and size in it.

// Allreduce, out of place: `output` must have the dtype and element count of
// `input` (it may alias it). output = postscale * reduce(prescale * input).
HVD_EXPORT Work allreduce_async(const TensorView& input, const TensorView& output,
                                const std::string& name = "", ReduceOp op = ReduceOp::kAverage,
                                double prescale_factor = 1.0, double postscale_factor = 1.0,
                                const ProcessSet& process_set = global_process_set());
// Allreduce in place.
HVD_EXPORT Work allreduce_async(const TensorView& tensor, const std::string& name = "",
                                ReduceOp op = ReduceOp::kAverage, double prescale_factor = 1.0,
                                double postscale_factor = 1.0,
                                const ProcessSet& process_set = global_process_set());
// Allreduces of several tensors in place, submitted in one call (for front
// ends that hand over many gradients at once): tensors[i] is named
// names[i] and is an operation of its own, negotiated and fused exactly as
// if submitted by allreduce_async one after the other (not a group). All
// are queued, or none if one is refused (e.g. its name is in flight).
HVD_EXPORT std::vector<Work> allreduce_async_many(
    const std::vector<TensorView>& tensors, const std::vector<std::string>& names,
    ReduceOp op = ReduceOp::kAverage, double prescale_factor = 1.0, double postscale_factor = 1.0,
    const ProcessSet& process_set = global_process_set());
// The blocking allreduce: a lone CPU allreduce runs in the caller's own
// cycle. With a timeout, hvd::Timeout is thrown after it (the operation
// stays in flight, and its name with it).
HVD_EXPORT void allreduce(const TensorView& input, const TensorView& output,
                          const std::string& name = "", ReduceOp op = ReduceOp::kAverage,
                          double prescale_factor = 1.0, double postscale_factor = 1.0,
                          const ProcessSet& process_set = global_process_set(),
                          std::optional<std::chrono::milliseconds> timeout = std::nullopt);
HVD_EXPORT void allreduce(const TensorView& tensor, const std::string& name = "",
                          ReduceOp op = ReduceOp::kAverage, double prescale_factor = 1.0,
                          double postscale_factor = 1.0,
                          const ProcessSet& process_set = global_process_set(),
                          std::optional<std::chrono::milliseconds> timeout = std::nullopt);

// Allgather: concatenates every rank's tensor along the first dimension,
// which may differ between ranks (the other dimensions may not). The result
// is allocated by the library: Work::output(). Scalars are gathered as
// tensors of shape [1].
HVD_EXPORT Work allgather_async(const TensorView& input, const std::string& name = "",
                                const ProcessSet& process_set = global_process_set());
HVD_EXPORT Tensor allgather(const TensorView& input, const std::string& name = "",
                            const ProcessSet& process_set = global_process_set());

// Broadcast in place from `root_rank` to every other rank. `root_rank` is
// a global rank (hvd::rank() of the root), also on a process set, as in
// Horovod; a root outside the set is an InvalidArgument on every member.
HVD_EXPORT Work broadcast_async(const TensorView& tensor, int root_rank,
                                const std::string& name = "",
                                const ProcessSet& process_set = global_process_set());
HVD_EXPORT void broadcast(const TensorView& tensor, int root_rank, const std::string& name = "",
                          const ProcessSet& process_set = global_process_set());

// Alltoall: this rank sends splits[j] rows (first-dimension slices) of
// `input` to rank j, in rank order; empty `splits` sends equal parts (the
// first dimension must then be divisible by size()). The result, allocated
// by the library, concatenates in rank order the rows every rank sent to
// this one: Work::output(); how many rows came from each rank:
// Work::received_splits().
HVD_EXPORT Work alltoall_async(const TensorView& input,
                               const std::vector<std::int64_t>& splits = {},
                               const std::string& name = "",
                               const ProcessSet& process_set = global_process_set());
HVD_EXPORT Tensor alltoall(const TensorView& input, const std::vector<std::int64_t>& splits = {},
                           const std::string& name = "",
                           std::vector<std::int64_t>* received_splits = nullptr,
                           const ProcessSet& process_set = global_process_set());

// Reducescatter: reduces `input` (same shape on every rank) like allreduce,
// and rank r receives its share of the first dimension: rows are split as
// evenly as possible, the first (rows % size) ranks getting one row more
// (as Horovod does). `op` is Sum or Average. Result: Work::output().
HVD_EXPORT Work reducescatter_async(const TensorView& input, const std::string& name = "",
                                    ReduceOp op = ReduceOp::kAverage, double prescale_factor = 1.0,
                                    double postscale_factor = 1.0,
                                    const ProcessSet& process_set = global_process_set());
HVD_EXPORT Tensor reducescatter(const TensorView& input, const std::string& name = "",
                                ReduceOp op = ReduceOp::kAverage, double prescale_factor = 1.0,
                                double postscale_factor = 1.0,
                                const ProcessSet& process_set = global_process_set());

// Grouped collectives: the tensors of a group are negotiated and executed
// together. Member i is named "<name>.<i>" (an automatic group name when
// empty); no member runs before every member is ready on every rank, then
// all run in the same cycle in member order. Grouped allreduces of equal
// dtype/op/scale factors are fused into one backend call even beyond
// HOROVODCPP_FUSION_THRESHOLD (even when it is 0). If any member fails
// negotiation (e.g. a shape mismatch on one rank), every member fails on
// every rank with the same message. One Work per member, in member order.
HVD_EXPORT std::vector<Work> grouped_allreduce_async(
    const std::vector<TensorView>& tensors, const std::string& name = "",
    ReduceOp op = ReduceOp::kAverage, double prescale_factor = 1.0, double postscale_factor = 1.0,
    const ProcessSet& process_set = global_process_set());
HVD_EXPORT std::vector<Work> grouped_allreduce_async(
    const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs,
    const std::string& name = "", ReduceOp op = ReduceOp::kAverage, double prescale_factor = 1.0,
    double postscale_factor = 1.0, const ProcessSet& process_set = global_process_set());
HVD_EXPORT void grouped_allreduce(const std::vector<TensorView>& tensors,
                                  const std::string& name = "", ReduceOp op = ReduceOp::kAverage,
                                  double prescale_factor = 1.0, double postscale_factor = 1.0,
                                  const ProcessSet& process_set = global_process_set());
HVD_EXPORT void grouped_allreduce(const std::vector<TensorView>& inputs,
                                  const std::vector<TensorView>& outputs,
                                  const std::string& name = "", ReduceOp op = ReduceOp::kAverage,
                                  double prescale_factor = 1.0, double postscale_factor = 1.0,
                                  const ProcessSet& process_set = global_process_set());
HVD_EXPORT std::vector<Work> grouped_allgather_async(
    const std::vector<TensorView>& inputs, const std::string& name = "",
    const ProcessSet& process_set = global_process_set());
HVD_EXPORT std::vector<Tensor> grouped_allgather(
    const std::vector<TensorView>& inputs, const std::string& name = "",
    const ProcessSet& process_set = global_process_set());
HVD_EXPORT std::vector<Work> grouped_reducescatter_async(
    const std::vector<TensorView>& inputs, const std::string& name = "",
    ReduceOp op = ReduceOp::kAverage, double prescale_factor = 1.0, double postscale_factor = 1.0,
    const ProcessSet& process_set = global_process_set());
HVD_EXPORT std::vector<Tensor> grouped_reducescatter(
    const std::vector<TensorView>& inputs, const std::string& name = "",
    ReduceOp op = ReduceOp::kAverage, double prescale_factor = 1.0, double postscale_factor = 1.0,
    const ProcessSet& process_set = global_process_set());

// Returns once every rank (of the process set) has called barrier().
HVD_EXPORT void barrier(const ProcessSet& process_set = global_process_set());

// For uneven numbers of batches: a rank that has run out calls join() and
// waits there. Until every rank has joined, the others' allreduces (any op)
// and barriers proceed without it: a joined rank contributes zeros (for
// CUDA tensors on NCCL, on the GPU it used for CUDA tensors, else GPU
// local_rank % visible GPUs; staged, from host memory), and Average divides
// by the number of ranks, joined ones included, as Horovod does. Other
// collectives submitted after a rank joined fail on every rank with an
// InvalidArgument naming the joined ranks. Returns, on every rank, the last
// rank to join; then a new round of joins may start.
HVD_EXPORT int join();

// Timeline: rank 0 writes a Chrome-trace JSON file (chrome://tracing,
// Perfetto) of each tensor's phases to `path`, replacing any timeline in
// progress; `mark_cycles` adds a mark per coordinator cycle. The file is
// valid JSON once stop_timeline() or shutdown() returns. No-ops on other
// ranks; may be called while operations run. Also started by init() from
// HOROVODCPP_TIMELINE (and HOROVODCPP_TIMELINE_MARK_CYCLES=1), except for
// HOROVODCPP_TIMELINE=DYNAMIC (Horovod's way to say: only at run time).
HVD_EXPORT void start_timeline(const std::string& path, bool mark_cycles = false);
HVD_EXPORT void stop_timeline();

// Writes this rank's flight recorder (its last collectives, and how far each
// got) to HOROVODCPP_FLIGHT_RECORDER_DIR now, saying `reason`, and returns
// the file's path; empty when the recorder is off (HOROVODCPP_FLIGHT_RECORDER_SIZE=0)
// or the file could not be written. Any thread, also while a collective
// hangs. docs/faults.md#flight-recorder.
HVD_EXPORT std::string dump_flight_recorder(const std::string& reason = "on demand");

}  // namespace hvd
