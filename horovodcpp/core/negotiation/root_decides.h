// Settings that every rank must apply alike (a backend that only some ranks
// set up would hang the others): rank 0's value decides for all.
#pragma once

#include "core/negotiation/controller.h"

namespace hvd {

// Collective over `controller`: rank 0's `mine` on every rank.
inline bool root_decides(Controller& controller, bool mine) {
  return controller.broadcast_from_root(mine ? "1" : "0") == "1";
}

}  // namespace hvd
