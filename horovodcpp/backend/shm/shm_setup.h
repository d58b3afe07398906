// How the ranks of one host come to share a segment, collectively over a
// Controller: rank 0 creates it under a fresh name and broadcasts the name
// and geometry (rank 0's settings decide), or why it could not; the others
// map it; everyone reports back; rank 0 removes the name and broadcasts
// whether every rank has it mapped. Once the name is gone the memory
// disappears with the last process that maps it, even after SIGKILL.
#pragma once

#include <string>

#include "backend/shm/shm_segment.h"
#include "core/negotiation/controller.h"

namespace hvd {
namespace shm {

struct SharedSegment {
  ShmSegment segment;  // unmapped on every rank if some rank could not map it
  std::string name;    // "/hvdcpp-...", already removed from /dev/shm
};

// Collective over `controller`, whose ranks must all be on this host: one
// slot per rank and stage; only rank 0's `slot_bytes` and `stages` count. Each rank's
// record holds its process identity on return. When the segment cannot be
// shared, rank 0 logs why and that `fallback` is used instead.
SharedSegment share_segment(Controller& controller, std::size_t slot_bytes, int stages,
                            const std::string& fallback);

}  // namespace shm
}  // namespace hvd
