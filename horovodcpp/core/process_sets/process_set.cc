#include "horovodcpp/process_set.h"

#include <algorithm>
#include <utility>

namespace hvd {

ProcessSet::ProcessSet(int id, std::vector<int> ranks, int this_global_rank)
    : id_(id), ranks_(std::make_shared<const std::vector<int>>(std::move(ranks))) {
  const auto it = std::lower_bound(ranks_->begin(), ranks_->end(), this_global_rank);
  if (it != ranks_->end() && *it == this_global_rank) {
    rank_ = static_cast<int>(it - ranks_->begin());
  }
}

const std::vector<int>& ProcessSet::ranks() const {
  static const std::vector<int> kNone;
  return ranks_ ? *ranks_ : kNone;
}

}  // namespace hvd
