#include "backend/mpi/mpi_roll_call.h"

#include <algorithm>
#include <set>
#include <thread>

#include "backend/mpi/mpi_context.h"
#include "base/check.h"
#include "core/diagnostics/logging.h"
#include "core/diagnostics/peer_failure.h"

namespace hvd {
namespace {

constexpr int kNoticeTag = 1;

}  // namespace

std::atomic<bool> MpiRollCall::any_given_up_{false};

MpiRollCall::MpiRollCall(MPI_Comm comm) : comm_(dup_with_errors_return(comm)) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  std::vector<int> ranks(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) ranks[static_cast<std::size_t>(r)] = r;
  world_ranks_.resize(ranks.size());
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  MPI_Comm_group(comm_, &group);
  MPI_Comm_group(job_communicator(), &world);
  MPI_Group_translate_ranks(group, size_, ranks.data(), world, world_ranks_.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world);
}

MpiRollCall::~MpiRollCall() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // After a give-up, notices to silent ranks are still pending on it.
  if (!finalized && verdict_.empty()) MPI_Comm_free(&comm_);
}

bool MpiRollCall::notice_pending() const {
  int pending = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, kNoticeTag, comm_, &pending, MPI_STATUS_IGNORE);
  return pending != 0;
}

void MpiRollCall::check_usable() const {
  if (!verdict_.empty()) throw RankFailure(verdict_, silent_);
}

void MpiRollCall::give_up(const std::string& what, const std::string& cause,
                          std::chrono::milliseconds window, const std::vector<int>& blamed) {
  check_usable();
  any_given_up_ = true;
  HVD_LOG(Info) << what << ": giving up (" << cause << "); roll call of the other ranks";
  // Notices are sent and forgotten: a silent rank never receives its copy.
  notice_ = blamed;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    if (MPI_Isend(notice_.data(), static_cast<int>(notice_.size()), MPI_INT, r, kNoticeTag, comm_,
                  &request) == MPI_SUCCESS) {
      MPI_Request_free(&request);
    }
  }
  std::set<int> named(blamed.begin(), blamed.end());
  std::vector<bool> heard(static_cast<std::size_t>(size_), false);
  heard[static_cast<std::size_t>(rank_)] = true;
  int missing = size_ - 1;
  const auto deadline = std::chrono::steady_clock::now() + window;
  while (missing > 0 && std::chrono::steady_clock::now() < deadline) {
    int pending = 0, count = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kNoticeTag, comm_, &pending, &status) != MPI_SUCCESS) break;
    if (!pending) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    MPI_Get_count(&status, MPI_INT, &count);
    std::vector<int> passed_on(static_cast<std::size_t>(std::max(count, 0)));
    MPI_Recv(passed_on.data(), count, MPI_INT, status.MPI_SOURCE, kNoticeTag, comm_,
             MPI_STATUS_IGNORE);
    named.insert(passed_on.begin(), passed_on.end());
    if (!heard[static_cast<std::size_t>(status.MPI_SOURCE)]) --missing;
    heard[static_cast<std::size_t>(status.MPI_SOURCE)] = true;
  }
  for (int r = 0; r < size_ && window.count() > 0; ++r) {
    const auto at = static_cast<std::size_t>(r);
    if (!heard[at]) named.insert(world_ranks_[at]);
  }
  silent_.assign(named.begin(), named.end());
  const RankFailure failure = peer_failure(what, silent_, cause);
  verdict_ = failure.what();
  throw failure;
}

}  // namespace hvd
