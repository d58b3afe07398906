#include "backend/mpi/mpi_context.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "backend/mpi/mpi_check.h"
#include "base/check.h"
#include "core/diagnostics/peer_failure.h"
#include "core/process_sets/process_set_rules.h"
#include "core/runtime/coordinator.h"
#include "core/runtime/usable_cpus.h"

namespace hvd {
namespace {

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

// Registered only when we initialized MPI (an application that initialized
// it finalizes it itself). Not done in ~MpiContext: MPI cannot be initialized
// twice, and the runtime must support shutdown followed by init. MPI_Finalize
// waits for every rank, possibly forever: after a rank stopped answering, or
// when the process fails (`status`) after the runtime stopped on an error (a
// stall: a rank may be stuck in its own code). Then abort instead, which
// makes the launcher end the whole job. Abort kills every rank at once, so
// first the others that gave up too get a moment to say so; then the lowest
// rank aborts first (Open MPI 4.1's mpirun garbles the message of aborts
// that arrive together).
void finalize_at_exit(int status, void*) {
  if (mpi_finalized()) return;
  if (MpiRollCall::any_given_up() || (status != 0 && Coordinator::any_stopped_on_error())) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::this_thread::sleep_for(std::chrono::milliseconds(1000 + 500 * std::min(rank, 8)));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
}

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "an unknown MPI thread level";
  }
}

// Every collective here is non-blocking (bounded waits, mpi_wait.h). Open
// MPI's (libnbc) allreduce takes a binomial tree for up to 4 ranks whatever
// the size: on 2 ranks half the bandwidth of its blocking MPI_Allreduce at
// 1-64 MiB, where Rabenseifner's reduce-scatter and allgather matches it
// (docs/performance.md). A value the user set wins.
void prefer_fast_nonblocking_allreduce() {
#if defined(OPEN_MPI) && OPEN_MPI
  setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3", /*overwrite=*/0);
#endif
}

void ensure_mpi_initialized() {
  HVD_CHECK(!mpi_finalized(), BackendError,
            "MPI was already finalized in this process; it cannot be initialized again");
  int initialized = 0;
  HVD_MPI_CHECK(MPI_Initialized(&initialized));
  int provided = MPI_THREAD_SINGLE;
  if (initialized) {
    HVD_MPI_CHECK(MPI_Query_thread(&provided));
  } else {
    prefer_fast_nonblocking_allreduce();
    HVD_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    static std::once_flag registered;
    std::call_once(registered, [] { on_exit(finalize_at_exit, nullptr); });  // (glibc's)
  }
  // Levels are ordered: SINGLE < FUNNELED < SERIALIZED < MULTIPLE.
  HVD_CHECK(provided >= MPI_THREAD_SERIALIZED, BackendError,
            "MPI provides " << thread_level_name(provided)
                            << " but horovodcpp calls MPI from its background thread and needs "
                               "at least MPI_THREAD_SERIALIZED (initialize MPI with "
                               "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...))");
}

// Rank and size in `comm`, which is freed afterwards.
std::pair<int, int> rank_and_size_then_free(MPI_Comm* comm) {
  int rank = 0, size = 0;
  try {
    HVD_MPI_CHECK(MPI_Comm_rank(*comm, &rank));
    HVD_MPI_CHECK(MPI_Comm_size(*comm, &size));
  } catch (...) {
    MPI_Comm_free(comm);
    throw;
  }
  MPI_Comm_free(comm);
  return {rank, size};
}

// The job's communicator when it is a subset of MPI_COMM_WORLD (ours to free).
MPI_Comm g_job = MPI_COMM_WORLD;
constexpr int kJobTag = 0x68766a;  // MPI_Comm_create_group's tag: "hvj"

void free_job_communicator() {
  if (g_job != MPI_COMM_WORLD && !mpi_finalized()) MPI_Comm_free(&g_job);
  g_job = MPI_COMM_WORLD;
}

}  // namespace

MPI_Comm dup_with_errors_return(MPI_Comm comm) {
  MPI_Comm dup = MPI_COMM_NULL;
  HVD_MPI_CHECK(MPI_Comm_dup(comm, &dup));
  try {
    HVD_MPI_CHECK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
  } catch (...) {
    MPI_Comm_free(&dup);
    throw;
  }
  return dup;
}

void require_mpi_thread_multiple(const char* what) {
  int provided = MPI_THREAD_SINGLE;
  HVD_MPI_CHECK(MPI_Query_thread(&provided));
  HVD_CHECK(provided == MPI_THREAD_MULTIPLE, BackendError,
            what << " needs MPI_THREAD_MULTIPLE (each process set has its own thread calling "
                    "MPI), but MPI provides "
                 << thread_level_name(provided)
                 << " (initialize MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...), or let "
                    "hvd::init() do it)");
}

MPI_Comm job_communicator() { return g_job; }

std::shared_ptr<MpiContext> MpiContext::create(const std::vector<int>& world_ranks) {
  ensure_mpi_initialized();
  int world_rank = 0, world_size = 0;
  HVD_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
  HVD_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  std::vector<int> sorted = world_ranks;
  std::sort(sorted.begin(), sorted.end());
  const bool everyone = world_ranks.empty() || is_every_rank_in_order(world_ranks, world_size);
  if (everyone) {
    free_job_communicator();
    return create(MPI_COMM_WORLD);
  }
  HVD_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end() &&
                sorted.front() >= 0 && sorted.back() < world_size,
            InvalidArgument,
            "init on ranks " << rank_list_str(world_ranks)
                             << ": each must be an MPI_COMM_WORLD rank "
                             << "(0.." << world_size - 1 << ") and appear once");
  HVD_CHECK(std::binary_search(sorted.begin(), sorted.end(), world_rank), InvalidArgument,
            "init on ranks " << rank_list_str(world_ranks)
                             << ": this process is MPI_COMM_WORLD rank " << world_rank
                             << ", which is not one of them");
  MPI_Group world = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
  HVD_MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
  const int rc =
      MPI_Group_incl(world, static_cast<int>(world_ranks.size()), world_ranks.data(), &members);
  MPI_Group_free(&world);
  HVD_MPI_CHECK(rc);
  MPI_Comm job = MPI_COMM_NULL;
  // Collective over the members only: other ranks may form other jobs.
  const int created = MPI_Comm_create_group(MPI_COMM_WORLD, members, kJobTag, &job);
  MPI_Group_free(&members);
  HVD_MPI_CHECK(created);
  free_job_communicator();
  g_job = job;
  return create(job);
}

std::shared_ptr<MpiContext> MpiContext::create(MPI_Comm comm) {
  std::shared_ptr<MpiContext> context(new MpiContext());
  // From here on the destructor frees whatever was created if a step throws.
  context->control_comm_ = dup_with_errors_return(comm);
  context->data_comm_ = dup_with_errors_return(comm);

  const MPI_Comm world = context->control_comm_;
  Topology& topology = context->topology_;
  HVD_MPI_CHECK(MPI_Comm_rank(world, &topology.rank));
  HVD_MPI_CHECK(MPI_Comm_size(world, &topology.size));

  MPI_Comm local = MPI_COMM_NULL;
  HVD_MPI_CHECK(
      MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, topology.rank, MPI_INFO_NULL, &local));
  std::tie(topology.local_rank, topology.local_size) = rank_and_size_then_free(&local);

  MPI_Comm cross = MPI_COMM_NULL;
  HVD_MPI_CHECK(MPI_Comm_split(world, topology.local_rank, topology.rank, &cross));
  std::tie(topology.cross_rank, topology.cross_size) = rank_and_size_then_free(&cross);

  context->roll_call_ = std::make_unique<MpiRollCall>(comm);
  context->control_wait_.timeout = peer_timeout();
  context->control_wait_.spin = topology.local_size <= usable_cpus();
  context->data_wait_.timeout = context->control_wait_.timeout;
  context->data_wait_.sleep = false;
  return context;
}

void MpiContext::give_up(const std::string& what, const std::string& cause,
                         const std::vector<int>& blamed, bool listen) {
  const auto window =
      listen ? roll_call_window(control_wait_.timeout) : std::chrono::milliseconds(0);
  roll_call_->give_up(what, cause, window, blamed);
}

void MpiContext::wait(MpiPlane plane, MPI_Request* request, const char* what) {
  wait_for_request(request, what, plane == MpiPlane::kControl ? control_wait_ : data_wait_,
                   *roll_call_);
}

MpiContext::~MpiContext() {
  // After MPI_Finalize (e.g. a context kept alive until static destruction)
  // the handles are gone with MPI itself.
  if (mpi_finalized()) return;
  // Given up on: collectives still pending on the communicators.
  if (roll_call_ && MpiRollCall::any_given_up()) return;
  if (data_comm_ != MPI_COMM_NULL) MPI_Comm_free(&data_comm_);
  if (control_comm_ != MPI_COMM_NULL) MPI_Comm_free(&control_comm_);
}

}  // namespace hvd
