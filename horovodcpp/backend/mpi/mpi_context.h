// MpiContext: MPI initialization plus the communicators and Topology that
// the MPI controller and backend share. One per Runtime; MPI itself outlives
// it, so the runtime can be shut down and initialized again.
#pragma once

#include <memory>
#include <vector>

#include "backend/mpi/mpi_check.h"
#include "backend/mpi/mpi_roll_call.h"
#include "backend/mpi/mpi_wait.h"
#include "core/negotiation/controller.h"

namespace hvd {

// Negotiation and data move on separate communicators (and wait alike but
// for the pauses between polls, mpi_wait.h).
enum class MpiPlane { kControl, kData };

class MpiContext {
 public:
  // Initializes MPI unless someone (the application, an earlier context)
  // already has. A background thread makes all MPI calls, so MPI must
  // provide at least MPI_THREAD_SERIALIZED. Throws BackendError otherwise
  // or when MPI was already finalized.
  // The job is every rank MPI launched, or the MPI_COMM_WORLD ranks
  // `world_ranks` in that order (Horovod's init(comm=[...]); collective over
  // those ranks only). InvalidArgument when this rank is not one of them.
  static std::shared_ptr<MpiContext> create(const std::vector<int>& world_ranks);
  // A context over the ranks of `comm` (a process set's communicator; MPI is
  // already initialized). Collective over `comm`, which is only duplicated.
  static std::shared_ptr<MpiContext> create(MPI_Comm comm);
  ~MpiContext();
  MpiContext(const MpiContext&) = delete;
  MpiContext& operator=(const MpiContext&) = delete;

  // Duplicates of MPI_COMM_WORLD (or of the set's communicator) with
  // MPI_ERRORS_RETURN: negotiation and data move on separate communicators
  // so their messages never match.
  MPI_Comm control_comm() const { return control_comm_; }
  MPI_Comm data_comm() const { return data_comm_; }
  const Topology& topology() const { return topology_; }
  // On one host, nothing here writes to a socket (negotiation and data go
  // through shared memory, ours or Open MPI's between ranks of a node), so
  // nothing can raise SIGPIPE (Transport::sigpipe_free). Across hosts Open
  // MPI's TCP transport may write to a peer that died, and not all its
  // writes suppress SIGPIPE.
  bool sigpipe_free() const { return topology_.local_size == topology_.size; }

  // Completes `request`, started on the communicator of `plane`, or throws
  // the RankFailure naming the ranks that stopped answering (mpi_wait.h).
  // Either plane giving up breaks both.
  void wait(MpiPlane plane, MPI_Request* request, const char* what);
  // Gives up on both communicators (Controller::give_up).
  [[noreturn]] void give_up(const std::string& what, const std::string& cause,
                            const std::vector<int>& blamed, bool listen);
  // Starts a non-blocking call (`start(MPI_Request*)` returns MPI's code)
  // and waits for it.
  template <typename Start>
  void run(MpiPlane plane, const char* what, Start&& start) {
    MPI_Request request = MPI_REQUEST_NULL;
    const int rc = start(&request);
    if (rc != MPI_SUCCESS) detail::throw_mpi_error(what, rc);
    wait(plane, &request, what);
  }

 private:
  MpiContext() = default;

  MPI_Comm control_comm_ = MPI_COMM_NULL;
  MPI_Comm data_comm_ = MPI_COMM_NULL;
  Topology topology_;
  MpiWait control_wait_;
  MpiWait data_wait_;
  std::unique_ptr<MpiRollCall> roll_call_;
};

// The communicator of the job's ranks (MPI_COMM_WORLD unless the job is a
// subset of it): process sets are made from it, and failures name its ranks.
MPI_Comm job_communicator();

// A duplicate of `comm` with MPI_ERRORS_RETURN; the caller frees it.
MPI_Comm dup_with_errors_return(MPI_Comm comm);

// Throws BackendError, saying that `what` needs it, unless MPI provides
// MPI_THREAD_MULTIPLE.
void require_mpi_thread_multiple(const char* what);

}  // namespace hvd
