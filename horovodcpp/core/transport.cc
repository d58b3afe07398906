#include "core/transport.h"

#include <memory>
#include <sstream>

#include "core/check.h"

#if HVD_HAVE_MPI
#include "backend/mpi/mpi_backend.h"
#include "backend/mpi/mpi_context.h"
#include "backend/mpi/mpi_controller.h"
#include "backend/mpi/mpi_process_set_channel.h"
#endif
#if HVD_HAVE_SHM
#include "backend/shm/hierarchical_backend.h"
#include "backend/shm/shm_backend.h"
#endif
#if HVD_HAVE_GLOO
#include "backend/gloo/gloo_backend.h"
#include "backend/gloo/gloo_context.h"
#include "backend/gloo/gloo_controller.h"
#include "backend/gloo/gloo_process_set_channel.h"
#endif

namespace hvd {
namespace {

struct TransportEntry {
  const char* name;
  Transport (*create)();
};

// The job-wide transport and its process-set channel over one context.
template <typename Context, typename ControllerType, typename BackendType, typename ChannelType>
Transport create_transport_with() {
  std::shared_ptr<Context> context = Context::create();
  Transport transport = transport_over<ControllerType, BackendType>(context);
  transport.process_sets = std::make_unique<ChannelType>(context);
#if HVD_HAVE_SHM
  // All ranks on this host: collectives through shared memory; on several
  // hosts: shared memory inside each (HOROVODCPP_SHM).
  transport.backend = maybe_use_shm(std::move(transport.backend), *transport.controller);
  transport.backend = maybe_stage_hosts(std::move(transport.backend), *transport.controller,
                                        *transport.process_sets);
#endif
  return transport;
}

// The compiled transports, in order of preference.
const std::vector<TransportEntry>& transport_table() {
  static const std::vector<TransportEntry> table = {
#if HVD_HAVE_MPI
    {"mpi", &create_transport_with<MpiContext, MpiController, MpiBackend, MpiProcessSetChannel>},
#endif
#if HVD_HAVE_GLOO
    {"gloo",
     &create_transport_with<GlooContext, GlooController, GlooBackend, GlooProcessSetChannel>},
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

Transport create_transport(const std::string& name) {
  for (const TransportEntry& entry : transport_table()) {
    if (name == entry.name) return entry.create();
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
