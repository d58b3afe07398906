#include "runner/cli/config_file.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "runner/cli/flags.h"
#include "runner/cli/text.h"
#include "runner/cli/yaml_subset.h"

namespace hvdrun {
namespace {

// YAML's booleans (true/yes/on/1 and their opposites, any case) as "true" or
// "false"; any other value in lower case (controller: GLOO).
std::string normalized(const std::string& value) {
  std::string t = lower(trim(value));
  if (t == "true" || t == "yes" || t == "on" || t == "1") return "true";
  if (t == "false" || t == "no" || t == "off" || t == "0") return "false";
  return t;
}

// "params" of "params.cycle_time_ms".
bool is_section(const std::string& key) {
  for (const Flag& flag : flag_table()) {
    if (flag.config_key.rfind(key + ".", 0) == 0) return true;
  }
  return false;
}

void apply_scalar(Options& options, const YamlScalar& scalar, const std::set<std::string>& given) {
  std::vector<const Flag*> flags;  // one, or one per value of a switch key
  for (const Flag& flag : flag_table()) {
    if (flag.config_key == scalar.path) flags.push_back(&flag);
  }
  if (flags.empty()) {
    if (!is_section(scalar.path)) {
      usage("unknown key '" + scalar.path + "' (hvdrun --help shows every key, in brackets)");
    }
    if (!scalar.value) return;  // a section with nothing in it
    usage("'" + scalar.path + "' holds indented keys (e.g. '" + scalar.path +
          ":' then '  key: value'), not a value");
  }
  // A null leaves the setting alone, as in Horovod; the command line wins.
  if (!scalar.value || given.count(flags.front()->dest)) return;
  if (flags.front()->arity != Arity::kSwitch) {
    flags.front()->apply(options, scalar.path, {*scalar.value});
    return;
  }
  const std::string choice = normalized(*scalar.value);
  std::string choices;
  for (const Flag* flag : flags) {
    if (flag->config_value == choice) {
      flag->apply(options, scalar.path, {});
      return;
    }
    choices += (choices.empty() ? "" : ", ") + flag->config_value;
  }
  usage(scalar.path + " must be one of " + choices + "; got '" + *scalar.value + "'");
}

}  // namespace

void apply_config_file(Options& options, const std::string& path,
                       const std::set<std::string>& given) {
  std::ifstream in(path);
  if (!in) usage("--config-file: cannot read '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  std::vector<YamlScalar> scalars;
  try {
    scalars = parse_yaml_subset(text.str());
  } catch (const UsageError& e) {
    usage(path + ":" + e.message);
  }
  for (const YamlScalar& scalar : scalars) {
    try {
      apply_scalar(options, scalar, given);
    } catch (const UsageError& e) {
      usage(path + ":" + std::to_string(scalar.line) + ": " + e.message);
    }
  }
}

}  // namespace hvdrun
