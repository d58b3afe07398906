// Process sets, as in Horovod: collectives over a subset of the job's ranks.
//
//   hvd::init();
//   hvd::ProcessSet even = hvd::add_process_set({0, 2});   // on EVERY rank
//   hvd::ProcessSet odd = hvd::add_process_set({1, 3});
//   hvd::ProcessSet& mine = hvd::rank() % 2 ? odd : even;
//   hvd::allreduce(hvd::view(grad), "g", hvd::ReduceOp::kSum, 1.0, 1.0, mine);
//   hvd::remove_process_set(odd);                          // on EVERY rank
//
// Each set negotiates and runs its collectives on its own communicators and
// background thread, so sets progress independently of each other and of
// the global set. Inside a set, rank r of the set is the r-th of its
// ascending global ranks: alltoall splits, reducescatter shares and the rank
// numbers in error messages count in the set; a broadcast's root_rank is a
// global rank (as in Horovod).
#pragma once

#include <memory>
#include <vector>

#include "horovodcpp/export.h"

namespace hvd {

class Runtime;

// A value naming one registered process set (cheap to copy). Obtained from
// global_process_set(), add_process_set() or process_sets(); a default one
// names no set.
class HVD_EXPORT ProcessSet {
 public:
  ProcessSet() = default;

  // 0 for the global set; added sets count up from 1 in the order they were
  // added (the same on every rank). -1 for a default-constructed value.
  int id() const { return id_; }
  // The members' global ranks, ascending.
  const std::vector<int>& ranks() const;
  int size() const { return static_cast<int>(ranks().size()); }
  // This process's rank inside the set, or -1 if it is not a member.
  int rank() const { return rank_; }
  bool included() const { return rank_ >= 0; }

  friend bool operator==(const ProcessSet& a, const ProcessSet& b) {
    return a.id_ == b.id_ && (a.ranks_ == b.ranks_ || a.ranks() == b.ranks());
  }
  friend bool operator!=(const ProcessSet& a, const ProcessSet& b) { return !(a == b); }

 private:
  friend class Runtime;  // the only maker of valid sets
  ProcessSet(int id, std::vector<int> ranks, int this_global_rank);

  int id_ = -1;
  std::shared_ptr<const std::vector<int>> ranks_;  // shared: copies stay cheap
  int rank_ = -1;
};

// Every rank of the job (id 0). Throws InvalidArgument before init().
HVD_EXPORT ProcessSet global_process_set();

// Registers the set of the given global ranks (any order; duplicates, ranks
// outside [0, size()) and an empty list are an InvalidArgument, as is a set
// equal to a registered one, the global set included). Collective over ALL
// ranks of the job, members or not: every rank must call it, in the same
// order relative to the other add/remove calls, with the same ranks. Every
// rank's arguments are compared; if they differ, every rank throws
// InvalidArgument naming each rank's call. A rank that does not make the call
// within HOROVODCPP_PROCESS_SET_TIMEOUT_SECONDS makes the others throw
// hvd::Timeout (process sets can then no longer change until shutdown()).
// With MPI, MPI must provide MPI_THREAD_MULTIPLE (several sets' threads call
// MPI at once): BackendError otherwise.
HVD_EXPORT ProcessSet add_process_set(std::vector<int> ranks);

// Unregisters `process_set`; collective over all ranks like
// add_process_set(). Operations still pending on it fail with an error on
// its members, later submissions with InvalidArgument. The global set cannot
// be removed (InvalidArgument), nor an unknown or already removed one.
HVD_EXPORT void remove_process_set(const ProcessSet& process_set);

// Every registered set: the global one first, then by id.
HVD_EXPORT std::vector<ProcessSet> process_sets();

}  // namespace hvd
