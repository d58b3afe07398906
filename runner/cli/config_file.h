// --config-file: Horovod's YAML settings file (the layout of horovod/runner/
// common/util/config_parser.py), e.g.
//
//   controller: gloo
//   params:
//     fusion_threshold_mb: 32
//     cycle_time_ms: 2
//   stall_check:
//     enabled: false
//   logging:
//     level: info
//
// Each key acts as the flag the table (runner/flags.cc) gives it; a key of a
// flag whose feature hvdrun lacks fails as that flag does. Unlike Horovod,
// which ignores keys it does not know, an unknown key is an error: a typo
// must not silently leave a setting at its default.
#pragma once

#include <set>
#include <string>

#include "runner/cli/options.h"

namespace hvdrun {

// Applies the file at `path` to `options`, except the keys whose flag's dest
// is in `given` (the command line wins). Errors read "PATH:LINE: ...".
void apply_config_file(Options& options, const std::string& path,
                       const std::set<std::string>& given);

}  // namespace hvdrun
