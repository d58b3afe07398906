// The subset of YAML that Horovod's --config-file uses: nested maps of
// scalars ("section:" then indented "key: value" lines), '#' comments, plain,
// 'single' and "double" quoted scalars. Anything else (lists, flow
// collections, anchors, block scalars, tabs) is a UsageError naming the line,
// rather than a silent misreading: hvdrun has no YAML library to fall back on.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hvdrun {

struct YamlScalar {
  std::string path;                  // keys from the top, joined by '.': "params.cycle_time_ms"
  std::optional<std::string> value;  // nullopt: null ("", "~", "null" unquoted)
  int line = 0;                      // 1-based, for messages
};

// Every scalar in document order. A key whose value is a nested map does not
// appear itself, only its scalars; a key with neither value nor nested lines
// is a null scalar. Duplicate keys are an error (YAML forbids them).
// Errors read "LINE: what" (the caller prefixes the file name).
std::vector<YamlScalar> parse_yaml_subset(const std::string& text);

}  // namespace hvdrun
