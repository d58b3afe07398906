#include "runner/options.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "runner/text.h"

namespace hvdrun {
namespace {

// A whole-string integer in [min, max]; `what` names the flag in the error.
int parse_int(const std::string& what, const std::string& text, long long min, long long max) {
  std::string t = trim(text);
  errno = 0;
  char* end = nullptr;
  long long value = t.empty() ? 0 : std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || *end != '\0' || errno == ERANGE) {
    usage(what + " expects an integer, got '" + text + "'");
  }
  if (max == INT_MAX) {
    if (value < min) usage(what + " must be at least " + std::to_string(min) + ", got " + t);
    if (value > max) usage(what + " is too large: " + t);
  } else if (value < min || value > max) {
    usage(what + " must be between " + std::to_string(min) + " and " + std::to_string(max) +
          ", got " + t);
  }
  return static_cast<int>(value);
}

double parse_number(const std::string& what, const std::string& text) {
  std::string t = trim(text);
  errno = 0;
  char* end = nullptr;
  double value = t.empty() ? 0 : std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(value)) {
    usage(what + " expects a number, got '" + text + "'");
  }
  if (value < 0) usage(what + " must not be negative, got " + t);
  return value;
}

// Canonical long names of every option that takes a value, and of switches.
const std::set<std::string>& value_options() {
  static const std::set<std::string> names = {
      "num-proc",          "hosts",          "hostfile",       "network-interface",
      "ssh-port",          "ssh-identity-file", "output-filename", "start-timeout",
      "fusion-threshold-mb", "cycle-time-ms", "cache-capacity", "timeline-filename",
      "log-level",         "config-file",    "remote-shell",   "autotune-log-file"};
  return names;
}
const std::set<std::string>& switch_options() {
  static const std::set<std::string> names = {"mpi",  "gloo",    "verbose",
                                              "check-build", "help", "autotune"};
  return names;
}

// Maps the spelling on the command line to the canonical long name, or "".
std::string canonical_name(const std::string& flag) {
  static const std::map<std::string, std::string> aliases = {
      {"-np", "num-proc"},        {"-n", "num-proc"},
      {"--np", "num-proc"},       {"-H", "hosts"},
      {"-p", "ssh-port"},         {"-i", "ssh-identity-file"},
      {"-h", "help"},             {"--ssh-port", "ssh-port"},
      {"--ssh-identity-file", "ssh-identity-file"},
  };
  auto it = aliases.find(flag);
  if (it != aliases.end()) return it->second;
  if (flag.rfind("--", 0) == 0) {
    std::string name = flag.substr(2);
    if (value_options().count(name) || switch_options().count(name)) return name;
  }
  return "";
}

const char* const kLogLevels[] = {"trace", "debug", "info", "warning", "error", "fatal"};

// Applies one option; `shown` is how the user spelled it, for messages.
void apply(Options& options, const std::string& name, const std::string& shown,
           const std::string& value) {
  if (name == "num-proc") {
    options.num_proc = parse_int(shown, value, 1, INT_MAX);
  } else if (name == "hosts") {
    if (trim(value).empty()) usage(shown + " expects a host list like h1:4,h2:4, got ''");
    options.hosts = value;
  } else if (name == "hostfile") {
    if (value.empty()) usage(shown + " expects a file name");
    options.hostfile = value;
  } else if (name == "network-interface") {
    if (value.empty()) usage(shown + " expects an interface name (e.g. eth0)");
    options.network_interface = value;
  } else if (name == "ssh-port") {
    options.ssh_port = parse_int(shown, value, 1, 65535);
  } else if (name == "ssh-identity-file") {
    if (value.empty()) usage(shown + " expects a key file");
    options.ssh_identity_file = value;
  } else if (name == "output-filename") {
    if (value.empty()) usage(shown + " expects a directory");
    options.output_filename = value;
  } else if (name == "start-timeout") {
    options.start_timeout_seconds = parse_int(shown, value, 1, INT_MAX);
  } else if (name == "fusion-threshold-mb") {
    double mb = parse_number(shown, value);
    double bytes = std::llround(mb * 1024.0 * 1024.0);
    if (bytes > 1e15) usage(shown + " is too large: " + value);
    options.rank_settings["HOROVODCPP_FUSION_THRESHOLD"] =
        std::to_string(static_cast<long long>(bytes));
  } else if (name == "cycle-time-ms") {
    parse_number(shown, value);
    options.rank_settings["HOROVODCPP_CYCLE_TIME"] = trim(value);
  } else if (name == "cache-capacity") {
    options.rank_settings["HOROVODCPP_CACHE_CAPACITY"] =
        std::to_string(parse_int(shown, value, 0, INT_MAX));
  } else if (name == "timeline-filename") {
    if (value.empty()) usage(shown + " expects a file name");
    options.rank_settings["HOROVODCPP_TIMELINE"] = value;
  } else if (name == "autotune-log-file") {
    if (value.empty()) usage(shown + " expects a file name");
    options.rank_settings["HOROVODCPP_AUTOTUNE_LOG"] = value;
  } else if (name == "log-level") {
    std::string level = trim(value);
    std::transform(level.begin(), level.end(), level.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (std::find(std::begin(kLogLevels), std::end(kLogLevels), level) == std::end(kLogLevels)) {
      usage(shown + " must be one of trace, debug, info, warning, error, fatal; got '" + value +
            "'");
    }
    options.rank_settings["HOROVODCPP_LOG_LEVEL"] = level;
  } else if (name == "remote-shell") {
    if (value.find("{host}") == std::string::npos) {
      usage(shown + " must contain {host}, e.g. 'ssh -o BatchMode=yes {host}'; got '" + value +
            "'");
    }
    options.remote_shell = value;
  } else if (name == "mpi") {
    options.mode = Mode::kMpi;
  } else if (name == "gloo") {
    options.mode = Mode::kGloo;
  } else if (name == "verbose") {
    options.verbose = true;
  } else if (name == "check-build") {
    options.check_build = true;
  } else if (name == "autotune") {
    options.rank_settings["HOROVODCPP_AUTOTUNE"] = "1";
  } else if (name == "help") {
    options.help = true;
  }
}

bool truthy(const std::string& text) {
  std::string t = trim(text);
  std::transform(t.begin(), t.end(), t.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (t.empty() || t == "1" || t == "true" || t == "yes" || t == "on") return true;
  if (t == "0" || t == "false" || t == "no" || t == "off") return false;
  usage("expected true or false, got '" + text + "'");
}

// "key: value" / "key=value" lines; '#' comments; keys are the long option
// names (with or without "--"). Options already given on the command line
// (`given`) are skipped: the command line wins.
void apply_config_file(Options& options, const std::string& path,
                       const std::set<std::string>& given) {
  std::ifstream in(path);
  if (!in) usage("--config-file: cannot read '" + path + "'");
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    std::string where = path + ":" + std::to_string(line_number);
    std::size_t hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    std::size_t sep = line.find_first_of(":=");
    if (sep == std::string::npos) {
      usage(where + ": expected 'key: value' or 'key=value', got '" + line + "'");
    }
    std::string key = trim(line.substr(0, sep));
    std::string value = trim(line.substr(sep + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    if (key.rfind("--", 0) == 0) key = key.substr(2);
    std::replace(key.begin(), key.end(), '_', '-');
    if (key == "np") key = "num-proc";
    if (key == "config-file") usage(where + ": config-file cannot be nested");
    bool is_value = value_options().count(key) > 0;
    bool is_switch = switch_options().count(key) > 0;
    if (!is_value && !is_switch) usage(where + ": unknown option '" + key + "'");
    if (given.count(key)) continue;
    if (key == "mpi" || key == "gloo") {
      if (given.count("mpi") || given.count("gloo")) continue;
    }
    try {
      if (is_switch) {
        if (truthy(value)) apply(options, key, key, "");
      } else {
        apply(options, key, key, value);
      }
    } catch (const UsageError& e) {
      usage(where + ": " + e.message);
    }
  }
}

}  // namespace

Options parse_options(const std::vector<std::string>& args) {
  Options options;
  std::set<std::string> given;
  std::string config_file;
  std::string mode_flag;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;  // the command starts here
    std::string flag = arg;
    std::optional<std::string> inline_value;
    std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
    }
    std::string name = canonical_name(flag);
    if (name.empty()) {
      usage("unknown option '" + flag + "'");
    }
    if (switch_options().count(name)) {
      if (inline_value) usage("option '" + flag + "' takes no value");
      if (name == "mpi" || name == "gloo") {
        if (!mode_flag.empty() && mode_flag != flag) {
          usage("choose one of --mpi and --gloo, not both");
        }
        mode_flag = flag;
      }
      apply(options, name, flag, "");
      given.insert(name);
      continue;
    }
    std::string value;
    if (inline_value) {
      value = *inline_value;
    } else {
      if (i + 1 >= args.size()) usage("option '" + flag + "' expects a value");
      value = args[++i];
    }
    if (name == "config-file") {
      if (value.empty()) usage("option '" + flag + "' expects a file name");
      config_file = value;
    } else {
      apply(options, name, flag, value);
    }
    given.insert(name);
  }
  options.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());

  if (!config_file.empty()) apply_config_file(options, config_file, given);

  if (!options.hosts.empty() && !options.hostfile.empty()) {
    usage("give either -H/--hosts or --hostfile, not both");
  }
  if (options.command.empty() && !options.help && !options.check_build) {
    usage("missing the command to run (e.g. hvdrun -np 4 ./train)");
  }
  return options;
}

std::string help_text() {
  return R"(usage: hvdrun -np N [options] command [args...]

Launches N copies of `command` as one horovodcpp job: through mpirun (MPI
mode) or by starting every rank itself (Gloo mode). Options end at the first
word that is not an option (or at "--"); the rest is the command.

Placement:
  -np N, --num-proc N        number of ranks (default: the Slurm/PBS
                             allocation's task count; else required)
  -H, --hosts H1:S1,H2:S2    hosts and their slots ("host" alone = 1 slot);
                             default: Slurm/PBS allocation, else
                             localhost:<cores of this machine>
  --hostfile FILE            one host per line: "host slots=N", "host:N"
                             or "host"; '#' starts a comment

Mode:
  --mpi                      launch through mpirun (Open MPI or MPICH)
  --gloo                     start the ranks directly; they meet through a
                             TCP store hvdrun runs
                             (default: --mpi if mpirun is on PATH, else --gloo)
  --network-interface IF     interface the ranks talk over (Open MPI
                             btl_tcp_if_include, MPICH -iface, Gloo iface)

Remote hosts:
  -p, --ssh-port PORT        ssh port
  -i, --ssh-identity-file KEY  ssh private key
  --remote-shell TEMPLATE    how to run a command on a host; {host} is
                             replaced (default: "ssh [-p PORT] [-i KEY]
                             -o BatchMode=yes {host}"; env HVDRUN_REMOTE_SHELL)
  --start-timeout S          seconds a remote host has to answer before the
                             job starts (default 30)

Output:
  --output-filename DIR      write each rank's output under DIR
  --verbose                  print the launch command and the placement

Rank settings (forwarded to every rank as environment variables):
  --fusion-threshold-mb M    HOROVODCPP_FUSION_THRESHOLD (= M*1024*1024 bytes)
  --cycle-time-ms T          HOROVODCPP_CYCLE_TIME (milliseconds)
  --cache-capacity C         HOROVODCPP_CACHE_CAPACITY (response cache entries)
  --timeline-filename F      HOROVODCPP_TIMELINE
  --autotune                 HOROVODCPP_AUTOTUNE=1: rank 0 tunes the fusion
                             threshold and cycle time (those not set)
  --autotune-log-file F      HOROVODCPP_AUTOTUNE_LOG (CSV of the samples)
  --log-level L              HOROVODCPP_LOG_LEVEL (trace, debug, info,
                             warning, error, fatal)
  --config-file F            "key: value" or "key=value" lines of the long
                             option names above (e.g. "cycle-time-ms: 2");
                             options on the command line win

Other:
  --check-build              print the version and the built backends
  -h, --help                 print this help

Environment read by the ranks (each HOROVODCPP_X may also be given as
Horovod's HOROVOD_X; the HOROVODCPP_ name wins):
  HOROVODCPP_CYCLE_TIME             ms an idle rank waits before a negotiation cycle
                                    (default 1; submissions start one at once)
  HOROVODCPP_IDLE_SPIN_MICROSECONDS us an idle rank polls before sleeping (default 0)
  HOROVODCPP_LOG_LEVEL              trace|debug|info|warning|error (default warning)
  HOROVODCPP_CPU_OPERATIONS         transport: mpi or gloo (alias
    (or HOROVODCPP_CONTROLLER)      HOROVOD_CPU_OPERATIONS / HOROVOD_CONTROLLER)
  HOROVODCPP_FUSION_THRESHOLD       fusion buffer bytes (default 64 MiB; 0 disables)
  HOROVODCPP_CACHE_CAPACITY         response cache entries (default 1024; 0 disables)
  HOROVODCPP_AUTOTUNE               1: rank 0 tunes fusion threshold and cycle time
  HOROVODCPP_AUTOTUNE_LOG           rank 0's CSV log of the autotune samples
  HOROVODCPP_TIMELINE               rank 0 writes a Chrome-trace timeline to this file
  HOROVODCPP_TIMELINE_MARK_CYCLES   1: mark each coordinator cycle in the timeline
  HOROVODCPP_TIMELINE_MAX_BYTES     the timeline stops growing here (default 256 MiB)
  HOROVODCPP_STALL_CHECK_TIME_SECONDS     warn about tensors missing on some ranks
                                        after this many seconds (default 60; 0: off)
  HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS  fail every pending operation after this
                                        many seconds of stall (default 600; 0: off)
  HOROVODCPP_PROCESS_SET_TIMEOUT_SECONDS  add/remove_process_set: how long to wait
                                        for every rank's call (default 60)
  HOROVODCPP_SHM                    0: no shared memory when all ranks share a host
                                    (data path; Gloo mode's negotiation goes over
                                    TCP instead) (default 1: use it)
  HOROVODCPP_SHM_TIMEOUT_SECONDS    shared-memory wait for a peer before failing
                                    (default 30; a dead peer fails within ~0.1 s)
  HOROVODCPP_SHM_SLOT_BYTES         shared-memory chunk per rank (default 256 KiB)
  HOROVODCPP_GLOO_TIMEOUT_SECONDS   Gloo rendezvous/collective timeout, also of Gloo
                                    mode's TCP negotiation (default 30)
  HOROVODCPP_GPU_OPERATIONS         CUDA tensors: nccl (default when built) or
                                    mpi|gloo (staged through pinned host memory
                                    onto the job's CPU transport)
  HOROVODCPP_NCCL_TIMEOUT_SECONDS   NCCL wait before aborting (default 300)
  HOROVODCPP_HIERARCHICAL_ALLREDUCE 1: CUDA allreduce as NCCL inside hosts and
                                    the CPU transport across them (several
                                    hosts, equal ranks per host; default 0)
  HOROVODCPP_GLOO_IFACE             Gloo network interface (alias HOROVOD_GLOO_IFACE)
  HOROVODCPP_GLOO_FILE_STORE        Gloo without hvdrun: a directory shared by
                                    ranks on one host (with HOROVODCPP_RANK, _SIZE,
                                    _LOCAL_RANK, _LOCAL_SIZE, _CROSS_RANK, _CROSS_SIZE)
Environment read by hvdrun:
  HVDRUN_REMOTE_SHELL               default for --remote-shell
  SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE, SLURM_NTASKS, PBS_NODEFILE
                                    the allocation's hosts and slots

Exit status: the job's (0 only if every rank succeeded); 2 for usage errors.
)";
}

}  // namespace hvdrun
