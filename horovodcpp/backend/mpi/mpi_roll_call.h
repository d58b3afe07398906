// MpiRollCall: how the ranks of one communicator that gave up on a
// collective find out which ranks stopped answering (core/diagnostics/peer_failure.h).
// A rank that gives up sends a notice (the ranks it already blames, maybe
// none) to every other rank on a communicator of its own; a rank still
// waiting sees the notice and gives up at once instead of at its own
// timeout; each listens for the others' notices for the roll-call window,
// and names the ranks it heard nothing from and the ranks the notices
// blame. Afterwards the communicator is broken: later waits fail at once.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "backend/mpi/mpi_check.h"

namespace hvd {

class MpiRollCall {
 public:
  // Collective over `comm`, which is only duplicated. Errors name the
  // ranks by their rank in MPI_COMM_WORLD.
  explicit MpiRollCall(MPI_Comm comm);
  ~MpiRollCall();
  MpiRollCall(const MpiRollCall&) = delete;
  MpiRollCall& operator=(const MpiRollCall&) = delete;

  // Whether another rank's notice is waiting (a cheap probe, for polls).
  bool notice_pending() const;
  // Gives up on `what` because of `cause`: notifies the others (passing on
  // `blamed`, ranks of MPI_COMM_WORLD), listens for `window`, throws the
  // RankFailure naming the silent and blamed ranks (`blamed` alone for a
  // zero window). Once given up, every later call throws that error again
  // at once.
  [[noreturn]] void give_up(const std::string& what, const std::string& cause,
                            std::chrono::milliseconds window, const std::vector<int>& blamed = {});
  // Throws the earlier verdict if this communicator was given up on.
  void check_usable() const;

  // Whether any rank of this process gave up on a communicator: MPI cannot
  // be finalized then (MPI_Finalize waits for every rank).
  static bool any_given_up() { return any_given_up_.load(); }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> world_ranks_;  // the job rank of each rank of `comm_`: errors name these
  std::vector<int> notice_;       // what this rank sent (MPI reads it until sent)
  std::string verdict_;           // the error message, once given up
  std::vector<int> silent_;       // the ranks it named
  static std::atomic<bool> any_given_up_;
};

}  // namespace hvd
