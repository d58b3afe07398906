#include "backend/mpi/mpi_controller.h"

#include <climits>
#include <cstdint>
#include <utility>

#include "backend/mpi/mpi_check.h"
#include "base/check.h"

namespace hvd {
namespace {

constexpr int kRoot = 0;

}  // namespace

MpiController::MpiController(std::shared_ptr<MpiContext> context)
    : context_(std::move(context)), and_(context_) {
  HVD_CHECK(context_ != nullptr, InvalidArgument, "MpiController needs an MpiContext");
}

std::vector<std::string> MpiController::gather_to_root(const std::string& message) {
  // Control messages are request lists, far below MPI's int count limit.
  // A larger one is a bug; it is reported before any communication.
  HVD_CHECK(message.size() <= static_cast<std::size_t>(INT_MAX), BackendError,
            "control message of " << message.size() << " bytes exceeds MPI's limit of " << INT_MAX
                                  << " bytes");
  const MPI_Comm comm = context_->control_comm();
  const Topology& topology = context_->topology();
  const bool is_root = topology.rank == kRoot;
  int my_size = static_cast<int>(message.size());

  std::vector<int> sizes(is_root ? topology.size : 0);
  context_->run(MpiPlane::kControl, "MPI_Igather", [&](MPI_Request* r) {
    return MPI_Igather(&my_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, kRoot, comm, r);
  });

  if (!is_root) {
    context_->run(MpiPlane::kControl, "MPI_Igatherv", [&](MPI_Request* r) {
      return MPI_Igatherv(message.data(), my_size, MPI_BYTE, nullptr, nullptr, nullptr, MPI_BYTE,
                          kRoot, comm, r);
    });
    return {};
  }
  std::vector<int> displacements(sizes.size());
  std::int64_t total = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    HVD_CHECK(total + sizes[r] <= INT_MAX, BackendError,
              "gathered control messages exceed MPI's limit of " << INT_MAX << " bytes");
    displacements[r] = static_cast<int>(total);
    total += sizes[r];
  }
  std::string gathered(static_cast<std::size_t>(total), '\0');
  context_->run(MpiPlane::kControl, "MPI_Igatherv", [&](MPI_Request* r) {
    return MPI_Igatherv(message.data(), my_size, MPI_BYTE, gathered.data(), sizes.data(),
                        displacements.data(), MPI_BYTE, kRoot, comm, r);
  });
  std::vector<std::string> messages;
  messages.reserve(sizes.size());
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    messages.push_back(gathered.substr(displacements[r], sizes[r]));
  }
  return messages;
}

std::string MpiController::broadcast_from_root(const std::string& message) {
  const MPI_Comm comm = context_->control_comm();
  const bool is_root = context_->topology().rank == kRoot;
  // The size travels as 64 bits so every rank sees an oversized message and
  // throws together instead of leaving the others waiting.
  std::int64_t size = is_root ? static_cast<std::int64_t>(message.size()) : 0;
  context_->run(MpiPlane::kControl, "MPI_Ibcast",
                [&](MPI_Request* r) { return MPI_Ibcast(&size, 1, MPI_INT64_T, kRoot, comm, r); });
  HVD_CHECK(
      size <= INT_MAX, BackendError,
      "control message of " << size << " bytes exceeds MPI's limit of " << INT_MAX << " bytes");
  std::string result = is_root ? message : std::string(static_cast<std::size_t>(size), '\0');
  context_->run(MpiPlane::kControl, "MPI_Ibcast", [&](MPI_Request* r) {
    return MPI_Ibcast(result.data(), static_cast<int>(size), MPI_BYTE, kRoot, comm, r);
  });
  return result;
}

}  // namespace hvd
