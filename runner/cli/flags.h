// Every flag hvdrun accepts: all of horovodrun 0.28.1's (horovod/runner/
// launch.py) and hvdrun's own, each with what it does here. One table serves
// the command line, Horovod's --config-file keys and --help, so the three
// cannot disagree. A horovodrun flag whose feature hvdrun lacks is still in
// the table: using it is one UsageError saying why.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runner/cli/options.h"

namespace hvdrun {

enum class Arity { kSwitch, kValue, kTwoValues };

struct Flag {
  std::vector<std::string> spellings;  // "-np", "--num-proc", ...
  Arity arity = Arity::kSwitch;
  std::string metavar;  // "N", "MIN MAX"; empty for switches
  // Flags with the same dest set the same thing (--autotune, --no-autotune):
  // the command line may name only one of them, and it wins over the
  // config file. Default: the first long spelling without its dashes.
  std::string dest;
  // Horovod's config-file key ("params.cycle_time_ms"); for a switch also the
  // value that selects it ("true", "false", "gloo").
  std::string config_key;
  std::string config_value;
  std::string section;  // its heading in --help
  std::string help;
  // `shown`: the flag as the user wrote it (or the config key), for messages.
  std::function<void(Options&, const std::string& shown, const std::vector<std::string>& values)>
      apply;
};

const std::vector<Flag>& flag_table();
// The flag spelled `spelling` ("-np", "--gloo"), or nullptr.
const Flag* find_flag(const std::string& spelling);

// Value parsers that throw UsageError naming `what`: a whole-string integer
// in [min, max]; a finite number >= 0.
int parse_int(const std::string& what, const std::string& text, long long min, long long max);
double parse_number(const std::string& what, const std::string& text);

}  // namespace hvdrun
