#include "core/negotiation/agree_on_errors.h"

#include <vector>

namespace hvd {

std::string agree_on_errors(Controller& controller, const std::string& error) {
  const std::vector<std::string> errors = controller.gather_to_root(error);
  std::string all;  // rank 0's list; the others' `errors` are empty
  for (std::size_t r = 0; r < errors.size(); ++r) {
    if (!errors[r].empty()) all += "rank " + std::to_string(r) + ": " + errors[r] + "; ";
  }
  return controller.broadcast_from_root(all);
}

}  // namespace hvd
