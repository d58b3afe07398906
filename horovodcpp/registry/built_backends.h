// The Runtime's BackendFactory over what this build has (registry/).
#pragma once

#include "core/runtime/backend_factory.h"

namespace hvd {

BackendFactory built_backends();

}  // namespace hvd
