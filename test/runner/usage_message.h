// The message of the UsageError that `f` throws, for exact assertions.
#pragma once

#include <functional>
#include <string>

#include "runner/cli/options.h"

namespace hvdrun {

inline std::string usage_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.message;
  }
  return "<no UsageError>";
}

}  // namespace hvdrun
