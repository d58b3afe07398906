// The number of descriptors a process may open (ulimit -n): raised to what
// a job of many ranks needs, within the hard limit, since the common
// default soft limit (1024) is below what Gloo's full mesh of connections
// or hvdrun's pipes to hundreds of ranks take.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <climits>

namespace hvd {

// Raises the soft limit to at least `wanted` when the hard limit allows
// (to the hard limit when it does not); returns the soft limit now.
inline long raise_descriptor_limit(long wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
  if (limit.rlim_cur != RLIM_INFINITY && static_cast<long>(limit.rlim_cur) < wanted) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max == RLIM_INFINITY
                          ? static_cast<rlim_t>(wanted)
                          : std::min(static_cast<rlim_t>(wanted), limit.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? LONG_MAX : static_cast<long>(limit.rlim_cur);
}

}  // namespace hvd
