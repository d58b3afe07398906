#include "runner/cli/options.h"

#include <climits>
#include <set>

#include "runner/cli/config_file.h"
#include "runner/cli/flags.h"
#include "runner/cli/text.h"
#include "settings/settings.h"

namespace hvdrun {
namespace {

using hvd::settings::Setting;

// Defaults from hvdrun's environment for what no flag gave.
void apply_environment(Options& options, const std::set<std::string>& given,
                       const std::map<std::string, std::string>& env) {
  auto value_of = [&](const std::string& name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  if (options.remote_shell.empty()) {
    std::string shell = value_of("HVDRUN_REMOTE_SHELL");
    if (!shell.empty() && shell.find("{host}") == std::string::npos) {
      usage("HVDRUN_REMOTE_SHELL='" + shell + "' must contain {host}");
    }
    options.remote_shell = shell;
  }
  // The table's HOROVODCPP_ name, else Horovod's; usage errors as for the flags.
  auto seconds_setting = [&](Setting setting, int& seconds) {
    for (const std::string& name :
         {hvd::settings::variable(setting), hvd::settings::horovod_variable(setting)}) {
      const std::string text = value_of(name);
      if (text.empty()) continue;
      seconds =
          parse_int(name, text, static_cast<long long>(hvd::settings::entry(setting).min), INT_MAX);
      return;
    }
  };
  if (!given.count("elastic-timeout")) {
    seconds_setting(Setting::kElasticTimeout, options.elastic.timeout_seconds);
  }
  if (!given.count("start-timeout")) {
    seconds_setting(Setting::kStartTimeout, options.start_timeout_seconds);
  }
}

// The elastic flags that only mean something in an elastic job.
void check_elastic(const Options& options, const std::set<std::string>& given) {
  if (!options.elastic.enabled()) {
    for (const char* dest : {"max-np", "slots-per-host", "elastic-timeout", "reset-limit",
                             "blacklist-cooldown-range"}) {
      if (given.count(dest)) {
        usage("--" + std::string(dest) +
              " applies to elastic jobs: add --min-np N or --host-discovery-script SCRIPT");
      }
    }
    return;
  }
  if (options.mode == Mode::kMpi) {
    usage(
        "elastic training (--min-np, --host-discovery-script) runs in Gloo mode, as "
        "horovodrun's: drop --mpi");
  }
  const ElasticOptions& e = options.elastic;
  if (e.min_np && e.max_np && *e.min_np > *e.max_np) {
    usage("--min-np " + std::to_string(*e.min_np) + " is more than --max-np " +
          std::to_string(*e.max_np));
  }
  if (options.num_proc && ((e.min_np && *options.num_proc < *e.min_np) ||
                           (e.max_np && *options.num_proc > *e.max_np))) {
    usage("-np " + std::to_string(*options.num_proc) + " must lie between --min-np and --max-np");
  }
  if (!e.discovery_script.empty() && (!options.hosts.empty() || !options.hostfile.empty())) {
    usage("give the hosts either with --host-discovery-script or with -H/--hostfile, not both");
  }
}

}  // namespace

Options parse_options(const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env) {
  Options options;
  std::set<std::string> given;                 // dests set on the command line
  std::map<std::string, std::string> spelled;  // dest -> the flag that set it, as written
  std::string config_file;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;  // the command starts here
    std::string spelling = arg;
    std::optional<std::string> inline_value;
    std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      spelling = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    const Flag* flag = find_flag(spelling);
    if (flag == nullptr) usage("unknown option '" + spelling + "'");

    std::vector<std::string> values;
    if (flag->arity == Arity::kSwitch) {
      if (inline_value) usage("option '" + spelling + "' takes no value");
    } else if (inline_value) {
      if (flag->arity == Arity::kTwoValues) usage("option '" + spelling + "' expects two values");
      values.push_back(*inline_value);
    } else {
      const std::size_t count = flag->arity == Arity::kTwoValues ? 2 : 1;
      if (i + count >= args.size()) {
        usage("option '" + spelling + "' expects " + (count == 2 ? "two values" : "a value"));
      }
      for (std::size_t k = 0; k < count; ++k) values.push_back(args[++i]);
    }

    // Flags of one dest are alternatives (--mpi, --gloo): one per command line.
    auto [it, first] = spelled.emplace(flag->dest, spelling);
    if (!first && find_flag(it->second) != flag) {
      usage("choose one of " + it->second + " and " + spelling + ", not both");
    }
    if (flag->dest == "config-file") {
      if (values[0].empty()) usage("option '" + spelling + "' expects a file name");
      config_file = values[0];
    } else {
      flag->apply(options, spelling, values);
    }
    given.insert(flag->dest);
  }
  options.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());

  if (!config_file.empty()) apply_config_file(options, config_file, given);
  apply_environment(options, given, env);

  if (!options.hosts.empty() && !options.hostfile.empty()) {
    usage("give either -H/--hosts or --hostfile, not both");
  }
  check_elastic(options, given);
  if (options.command.empty() && !options.help && !options.version && !options.check_build) {
    usage("missing the command to run (e.g. hvdrun -np 4 ./train)");
  }
  return options;
}

}  // namespace hvdrun
