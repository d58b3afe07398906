#include "core/transport.h"

#include <memory>
#include <sstream>

#include "core/check.h"

#if HVD_HAVE_MPI
#include "backend/mpi/mpi_backend.h"
#include "backend/mpi/mpi_context.h"
#include "backend/mpi/mpi_controller.h"
#endif
#if HVD_HAVE_GLOO
#include "backend/gloo/gloo_backend.h"
#include "backend/gloo/gloo_context.h"
#include "backend/gloo/gloo_controller.h"
#endif

namespace hvd {
namespace {

struct TransportEntry {
  const char* name;
  Transport (*create)();
};

#if HVD_HAVE_MPI
Transport create_mpi_transport() {
  // Controller and backend share one MPI initialization and topology.
  std::shared_ptr<MpiContext> context = MpiContext::create();
  Transport transport;
  transport.controller = std::make_unique<MpiController>(context);
  transport.backend = std::make_unique<MpiBackend>(context);
  return transport;
}
#endif

#if HVD_HAVE_GLOO
Transport create_gloo_transport() {
  // Controller and backend share one rendezvous, topology and TCP device.
  std::shared_ptr<GlooContext> context = GlooContext::create();
  Transport transport;
  transport.controller = std::make_unique<GlooController>(context);
  transport.backend = std::make_unique<GlooBackend>(context);
  return transport;
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
