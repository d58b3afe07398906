#include "registry/transports.h"

#include <memory>
#include <sstream>

#include "base/check.h"
#include "core/negotiation/layered_controller.h"
#include "core/process_sets/process_set_rules.h"

#if HVD_HAVE_MPI
#include "backend/mpi/mpi_backend.h"
#include "backend/mpi/mpi_context.h"
#include "backend/mpi/mpi_controller.h"
#include "backend/mpi/mpi_process_set_channel.h"
#endif
#if HVD_HAVE_SHM
#include "backend/shm/shm_backend.h"
#include "backend/shm/shm_controller.h"
#include "backend/shm/two_level_backend.h"
#endif
#if HVD_HAVE_GLOO
#include "backend/gloo/gloo_backend.h"
#include "backend/gloo/gloo_context.h"
#include "backend/gloo/gloo_controller.h"
#include "backend/gloo/gloo_process_set_channel.h"
#include "backend/gloo/tcp_controller.h"
#endif

namespace hvd {
namespace {

struct TransportEntry {
  const char* name;
  Transport (*create)(const std::vector<int>& world_ranks);
};

// Shared memory for the data path of a transport (all its ranks on this
// host), or inside each host (several hosts) (HOROVODCPP_SHM).
Transport with_shared_memory(Transport transport) {
#if HVD_HAVE_SHM
  transport.backend = maybe_use_shm(std::move(transport.backend), *transport.controller);
  transport.backend = maybe_stage_hosts(std::move(transport.backend), *transport.controller,
                                        *transport.process_sets);
#endif
  return transport;
}

// Negotiation through shared memory, layered over `setup` (which sets it up
// and names the ranks that stop answering), when every rank of `setup`
// shares this host and HOROVODCPP_SHM allows it; else null, and `setup`
// stays the caller's. `fallback` names what negotiates otherwise.
std::unique_ptr<Controller> shm_plane_over(std::unique_ptr<Controller>& setup,
                                           const std::string& fallback) {
#if HVD_HAVE_SHM
  if (auto shm = maybe_shm_controller(*setup, fallback)) {
    return std::make_unique<LayeredController>(std::move(shm), std::move(setup));
  }
#else
  (void)setup;
  (void)fallback;
#endif
  return nullptr;
}

#if HVD_HAVE_MPI
// Negotiation in MPI mode, for the job and each process set: through shared
// memory when every rank of the transport shares this host (a cycle's
// bit-vector AND takes about 0.4 us there, a tenth of an exchange of MPI
// messages at 2 ranks, bench/control_bench), else over MPI's
// control communicator, which also sets the plane up and names the ranks
// that stopped answering (docs/internals.md, "Where the ranks negotiate").
std::unique_ptr<Controller> mpi_control_plane(const std::shared_ptr<MpiContext>& context) {
  std::unique_ptr<Controller> setup = std::make_unique<MpiController>(context);
  if (auto plane = shm_plane_over(setup, "MPI negotiation")) return plane;
  return setup;
}

Transport create_mpi_transport(const std::vector<int>& world_ranks) {
  std::shared_ptr<MpiContext> context = MpiContext::create(world_ranks);
  Transport transport;
  transport.controller = mpi_control_plane(context);
  transport.backend = std::make_unique<MpiBackend>(context);
  transport.process_sets = std::make_unique<MpiProcessSetChannel>(context, &mpi_control_plane);
  transport.sigpipe_free = context->sigpipe_free();
  return with_shared_memory(std::move(transport));
}
#endif

#if HVD_HAVE_GLOO
// Negotiation in Gloo mode, for the job and each process set: Gloo's
// collectives cost hundreds of microseconds each, so the ranks negotiate
// through shared memory when they share a host, else over TCP connections
// of their own (docs/internals.md, "Where the ranks negotiate"); Gloo's
// control context only sets these up, and stays the control plane only if
// neither can be.
std::unique_ptr<Controller> gloo_control_plane(const std::shared_ptr<GlooContext>& context) {
  std::unique_ptr<Controller> setup = std::make_unique<GlooController>(context);
  if (auto plane = shm_plane_over(setup, "TCP negotiation")) return plane;
  const TcpControllerOptions tcp_options{context->listen_address(), context->timeout()};
  if (auto tcp = TcpController::connect(*setup, tcp_options, "Gloo's negotiation")) {
    return std::make_unique<LayeredController>(std::move(tcp), std::move(setup));
  }
  return setup;
}

Transport create_gloo_transport(const std::vector<int>& world_ranks) {
  std::shared_ptr<GlooContext> context = GlooContext::create([&](const Topology& job) {
    HVD_CHECK(world_ranks.empty() || is_every_rank_in_order(world_ranks, job.size), InvalidArgument,
              "Gloo mode runs on every rank hvdrun launched (0.."
                  << job.size - 1 << "), not on " << rank_list_str(world_ranks)
                  << ": a job on part of the ranks (Horovod's init(comm=[...]), a list of "
                     "MPI_COMM_WORLD ranks) needs MPI mode (hvdrun --mpi); process sets run "
                     "collectives on part of the ranks in either mode");
  });
  Transport transport;
  transport.controller = gloo_control_plane(context);
  transport.backend = std::make_unique<GlooBackend>(context);
  transport.process_sets = std::make_unique<GlooProcessSetChannel>(context, &gloo_control_plane);
  return with_shared_memory(std::move(transport));
}
#endif

// The compiled transports, in order of preference.
const std::vector<TransportEntry>& transport_table() {
  static const std::vector<TransportEntry> table = {
#if HVD_HAVE_MPI
    {"mpi", &create_mpi_transport},
#endif
#if HVD_HAVE_GLOO
    {"gloo", &create_gloo_transport},
#endif
  };
  return table;
}

}  // namespace

std::vector<std::string> available_transports() {
  std::vector<std::string> names;
  for (const TransportEntry& entry : transport_table()) names.emplace_back(entry.name);
  return names;
}

Transport create_transport(const std::string& name, const std::vector<int>& world_ranks) {
  for (const TransportEntry& entry : transport_table()) {
    if (name == entry.name) return entry.create(world_ranks);
  }
  std::ostringstream available;
  for (const TransportEntry& entry : transport_table()) {
    available << (available.tellp() > 0 ? ", " : "") << entry.name;
  }
  HVD_THROW(InvalidArgument, "unknown transport \""
                                 << name << "\"; this build has: "
                                 << (available.tellp() > 0 ? available.str() : "none"));
}

}  // namespace hvd
