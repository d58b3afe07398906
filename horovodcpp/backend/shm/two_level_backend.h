// TwoLevelBackend: shared memory as the local stage of a job that spans
// hosts. Allreduce runs in three stages: inside each host through shared
// memory (a ShmBackend over the host's ranks), between hosts over the
// transport (MPI or Gloo), and inside the host again. It decorates the
// transport's flat backend (the inner one), which still runs allgatherv,
// broadcast, alltoallv and reducescatter.
//
// Its sub-transports come from the job's ProcessSetChannel under the ids
// reserved for it (core/process_sets/internal_set_ids.h):
//   kShmHostSetId - h   the ranks of host h (only hosts with several ranks)
//   kShmCrossSetId - l  the l-th rank of every host ("cross l")
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backend/shm/shm_backend.h"
#include "core/execution/backend.h"
#include "core/execution/transport.h"
#include "core/negotiation/controller.h"
#include "core/process_sets/host_layout.h"
#include "core/process_sets/process_set_channel.h"

namespace hvd {

class TwoLevelBackend : public ForwardingBackend {
 public:
  // Collective over every rank of the job (same arguments everywhere):
  // creates the sub-transports through `channel` and the host's segment.
  TwoLevelBackend(std::unique_ptr<Backend> inner, ProcessSetChannel& channel,
                  const HostLayout& layout);

  // "shm+mpi", "shm+gloo".
  const char* name() const override { return name_.c_str(); }
  // Like ShmBackend: the core stages float16/bfloat16 Sum/Product through float32.
  BackendCapabilities capabilities() const override;

  // Even hosts (L ranks each): a shared-memory reducescatter leaves each
  // local rank 1/L of the buffer, the L cross transports allreduce their
  // shares in parallel, a shared-memory allgatherv reassembles the buffer.
  // Uneven hosts: a shared-memory allreduce, the hosts' first ranks
  // allreduce across hosts, a shared-memory broadcast from the first rank.
  // A failure in any stage fails this rank's later allreduces too, and
  // makes its peers stop waiting for it at once: its host's segment is
  // marked failed, it gives up on both stages' transports (passing on whom
  // it blames) and its cross-host connections are closed.
  void allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) override;
  // The other collectives go to the inner (flat) backend.

 private:
  // The stages of allreduce (see above).
  void run_stages(void* buffer, std::size_t count, DataType dtype, ReduceOp op);

  std::string name_;
  bool even_ = false;
  bool broken_ = false;                          // a stage failed
  int rank_ = 0;                                 // in the job
  int local_ = 0;                                // in the host
  std::unique_ptr<Controller> host_controller_;  // null on a host of one rank
  std::unique_ptr<ShmBackend> host_;             // null on a host of one rank
  Transport cross_;  // empty where this rank takes no part in the cross stage
  // Kept between calls: no allocation in steady state.
  std::vector<std::size_t> shares_;     // elements of each local rank's share
  std::vector<unsigned char> scratch_;  // this rank's share
};

// The transport hook for jobs on several hosts: wraps `backend` in a
// TwoLevelBackend when some host has several ranks and HOROVODCPP_SHM is
// not 0 on rank 0. Collective over `controller` and `channel` (all ranks).
std::unique_ptr<Backend> maybe_stage_hosts(std::unique_ptr<Backend> backend, Controller& controller,
                                           ProcessSetChannel& channel);

}  // namespace hvd
