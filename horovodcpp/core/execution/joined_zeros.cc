#include "core/execution/joined_zeros.h"

#include <algorithm>
#include <memory>

namespace hvd {

bool has_joined(const Response& response, int rank) {
  return std::count(response.joined_ranks.begin(), response.joined_ranks.end(), rank) > 0;
}

TensorEntry JoinedZeros::make(const Request& agreed, bool device_zeroes_itself) {
  TensorEntry entry;
  entry.request = agreed;
  if (device_zeroes_itself) {
    entry.input = TensorView(nullptr, agreed.dtype, agreed.shape, agreed.device);
  } else {
    Tensor zeros(agreed.dtype, agreed.shape);
    kept_.push_back(zeros);
    entry.input = zeros.view();
  }
  entry.output = entry.input;
  entry.work = std::make_shared<detail::WorkState>();
  entry.joined = true;
  return entry;
}

}  // namespace hvd
