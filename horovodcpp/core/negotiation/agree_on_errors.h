// A setup step that every rank must complete, or none uses its result.
#pragma once

#include <string>

#include "core/negotiation/controller.h"

namespace hvd {

// Collective over `controller`: every rank gets "rank r: <error>; " for each
// rank r whose `error` is not empty, in rank order (empty: no rank failed).
std::string agree_on_errors(Controller& controller, const std::string& error);

}  // namespace hvd
