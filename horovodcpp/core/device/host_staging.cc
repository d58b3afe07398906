#include "core/device/host_staging.h"

#include <algorithm>

namespace hvd {

StagingPlan plan_staging(const std::vector<std::size_t>& bytes, std::size_t alignment) {
  StagingPlan plan;
  plan.offsets.reserve(bytes.size());
  for (std::size_t n : bytes) {
    plan.offsets.push_back(plan.total);
    plan.total += (n + alignment - 1) & ~(alignment - 1);
  }
  return plan;
}

std::size_t grown_capacity(std::size_t current, std::size_t needed) {
  if (needed <= current) return current;
  constexpr std::size_t kMiB = std::size_t(1) << 20;
  const std::size_t wanted = std::max(needed, 2 * current);
  return (wanted + kMiB - 1) / kMiB * kMiB;
}

}  // namespace hvd
