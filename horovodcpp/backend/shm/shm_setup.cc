#include "backend/shm/shm_setup.h"

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <sstream>

#include "backend/shm/shm_wait.h"
#include "base/check.h"
#include "core/diagnostics/logging.h"
#include "core/negotiation/agree_on_errors.h"

namespace hvd {
namespace shm {
namespace {

// A name no other job on this host uses: rank 0's random bits, pid and clock.
std::string fresh_segment_name() {
  std::uint64_t bits = static_cast<std::uint64_t>(::getpid()) << 32;
  bits ^= static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  try {
    std::random_device device;
    bits ^= (static_cast<std::uint64_t>(device()) << 32) | device();
  } catch (const std::exception&) {
    // No entropy source: pid and clock still tell jobs apart.
  }
  std::ostringstream name;
  name << "/hvdcpp-" << std::hex << bits;
  return name.str();
}

}  // namespace

SharedSegment share_segment(Controller& controller, std::size_t slot_bytes, int stages,
                            const std::string& fallback) {
  const int rank = controller.topology().rank;
  const int size = controller.topology().size;
  SharedSegment shared;
  std::string& name = shared.name;
  std::string message;
  if (rank == 0) {
    name = fresh_segment_name();
    try {
      shared.segment = ShmSegment::create(name, Geometry{size, slot_bytes, stages});
      message = name + " " + std::to_string(slot_bytes) + " " + std::to_string(stages);
    } catch (const Error& e) {
      message = std::string("!") + e.what();
    }
  }
  try {
    message = controller.broadcast_from_root(message);
    if (!message.empty() && message[0] == '!') {
      if (rank == 0) {
        HVD_LOG(Warning) << message.substr(1) << "; using " << fallback;
      }
      return SharedSegment{};
    }
    std::string error;
    if (rank != 0) {
      Geometry geometry{size, 0, 0};
      std::istringstream fields(message);
      fields >> name >> geometry.slot_bytes >> geometry.stages;
      try {
        shared.segment = ShmSegment::open(name, geometry);
      } catch (const Error& e) {
        error = e.what();
      }
    }
    if (shared.segment.mapped()) shared.segment.record(rank).process = this_process();

    // Once everybody has tried to map it (and said so), the name goes.
    const std::string decision = agree_on_errors(controller, error);
    ShmSegment::unlink(name);
    if (!decision.empty()) {
      if (rank == 0) {
        HVD_LOG(Warning) << "shm: " << decision << "using " << fallback;
      }
      return SharedSegment{};
    }
  } catch (...) {
    // A rank failed during setup: nobody will use the segment.
    if (!name.empty()) ::shm_unlink(name.c_str());
    throw;
  }
  return shared;
}

}  // namespace shm
}  // namespace hvd
