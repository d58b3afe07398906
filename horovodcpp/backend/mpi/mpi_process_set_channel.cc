#include "backend/mpi/mpi_process_set_channel.h"

#include <algorithm>
#include <cstdint>
#include <thread>
#include <utility>

#include "backend/mpi/mpi_backend.h"
#include "base/check.h"
#include "core/execution/transport.h"

namespace hvd {
namespace {

// The buffers of one exchange. Heap-allocated: on a timeout MPI may still
// write into them later, so they are leaked rather than freed.
struct Exchange {
  std::int64_t my_size = 0;
  std::vector<std::int64_t> sizes;
  std::vector<int> counts, displacements;
  std::string mine;
  std::vector<char> all;
};

// Polls `request` until it completes (true) or `deadline` passes (false).
bool wait_until(MPI_Request* request, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    int done = 0;
    HVD_MPI_CHECK(MPI_Test(request, &done, MPI_STATUS_IGNORE));
    if (done) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

MpiProcessSetChannel::MpiProcessSetChannel(std::shared_ptr<MpiContext> world,
                                           ControllerFactory make_controller)
    : world_(std::move(world)),
      make_controller_(make_controller),
      comm_(dup_with_errors_return(world_->control_comm())) {}

// comm_ is never freed, one communicator per init(): another rank may have
// abandoned an exchange on it (a timeout there, not here), and Open MPI
// delivers that exchange's late messages to whatever communicator later gets
// the freed id on this rank, crashing when it is smaller (a one-rank
// process set's, seen in mca_pml_ob1_add_comm).
MpiProcessSetChannel::~MpiProcessSetChannel() = default;

std::vector<std::string> MpiProcessSetChannel::allgather(const std::string& message,
                                                         std::chrono::milliseconds timeout) {
  require_mpi_thread_multiple("a process set");
  HVD_CHECK(!abandoned_, BackendError, "an earlier process-set exchange timed out");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const int size = world_->topology().size;
  auto exchange = std::make_unique<Exchange>();
  Exchange& x = *exchange;
  x.mine = message;
  x.my_size = static_cast<std::int64_t>(message.size());
  x.sizes.resize(static_cast<std::size_t>(size));
  const auto wait = [&](MPI_Request* request) {
    if (wait_until(request, deadline)) return;
    abandoned_ = true;
    exchange.release();  // MPI still owns the buffers (see Exchange)
    HVD_THROW(Timeout, "not every rank made the same process-set call within "
                           << std::chrono::duration<double>(timeout).count()
                           << " s (HOROVODCPP_PROCESS_SET_TIMEOUT_SECONDS)");
  };

  MPI_Request request = MPI_REQUEST_NULL;
  HVD_MPI_CHECK(
      MPI_Iallgather(&x.my_size, 1, MPI_INT64_T, x.sizes.data(), 1, MPI_INT64_T, comm_, &request));
  wait(&request);
  int total = 0;
  for (std::int64_t s : x.sizes) {
    x.displacements.push_back(total);
    x.counts.push_back(static_cast<int>(s));
    total += static_cast<int>(s);
  }
  x.all.resize(static_cast<std::size_t>(std::max(total, 1)));
  HVD_MPI_CHECK(MPI_Iallgatherv(x.mine.data(), static_cast<int>(x.my_size), MPI_CHAR, x.all.data(),
                                x.counts.data(), x.displacements.data(), MPI_CHAR, comm_,
                                &request));
  wait(&request);

  std::vector<std::string> messages;
  for (int r = 0; r < size; ++r) {
    messages.emplace_back(x.all.data() + x.displacements[r],
                          x.all.data() + x.displacements[r] + x.counts[r]);
  }
  return messages;
}

Transport MpiProcessSetChannel::create_transport(int /*id*/, const std::vector<int>& ranks) {
  require_mpi_thread_multiple("a process set");
  const int me = world_->topology().rank;
  const bool member = std::binary_search(ranks.begin(), ranks.end(), me);
  // Keyed by global rank: the set's ranks keep the global order.
  MPI_Comm split = MPI_COMM_NULL;
  HVD_MPI_CHECK(MPI_Comm_split(comm_, member ? 0 : MPI_UNDEFINED, me, &split));
  if (!member) return Transport{};
  std::shared_ptr<MpiContext> context;
  try {
    context = MpiContext::create(split);
  } catch (...) {
    MPI_Comm_free(&split);
    throw;
  }
  MPI_Comm_free(&split);
  Transport transport;
  transport.controller = make_controller_(context);
  transport.backend = std::make_unique<MpiBackend>(context);
  transport.sigpipe_free = context->sigpipe_free();
  return transport;
}

const std::vector<std::string>& MpiProcessSetChannel::host_keys() {
  if (!hosts_.empty()) return hosts_;
  // The split MpiContext takes local_rank from, keyed by global rank: its
  // first member is the lowest global rank on the host, which names it.
  const int me = world_->topology().rank;
  MPI_Comm local = MPI_COMM_NULL;
  HVD_MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &local));
  int first = me;
  const int status = MPI_Bcast(&first, 1, MPI_INT, 0, local);
  MPI_Comm_free(&local);
  HVD_MPI_CHECK(status);
  std::vector<int> firsts(static_cast<std::size_t>(world_->topology().size));
  HVD_MPI_CHECK(MPI_Allgather(&first, 1, MPI_INT, firsts.data(), 1, MPI_INT, comm_));
  for (int f : firsts) hosts_.push_back("host-of-rank-" + std::to_string(f));
  return hosts_;
}

std::string MpiProcessSetChannel::cannot_create_transports() const {
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Query_thread(&provided) != MPI_SUCCESS || provided != MPI_THREAD_MULTIPLE) {
    return "MPI does not provide MPI_THREAD_MULTIPLE";
  }
  return "";
}

}  // namespace hvd
