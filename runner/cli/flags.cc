#include "runner/cli/flags.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <iterator>

#include "runner/cli/text.h"
#include "settings/settings.h"

namespace hvdrun {

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

namespace {

using Values = std::vector<std::string>;
using hvd::settings::Setting;
using hvd::settings::variable;
using Apply = std::function<void(Options&, const std::string&, const Values&)>;

const char* const kLogLevels[] = {"trace", "debug", "info", "warning", "error", "fatal"};

// Words as a POSIX shell splits them: blanks separate, '...' and "..." group,
// a backslash escapes the next character (outside '...').
Values split_shell_words(const std::string& what, const std::string& text) {
  Values words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < text.size() &&
                 std::string("\"\\$`").find(text[i + 1]) != std::string::npos) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      in_word = true;
      if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '\\' && i + 1 < text.size()) {
        word += text[++i];
      } else {
        word += c;
      }
    }
  }
  if (quote) usage(what + " has an unterminated " + std::string(1, quote) + " quote: " + text);
  if (in_word) words.push_back(word);
  return words;
}

// ---- what a flag does --------------------------------------------------
// A flag sets a setting of the table (horovodcpp/settings), by its
// HOROVODCPP_ name; its help is the table's line.

// "HOROVODCPP_X: the table's doc".
std::string about(Setting setting) {
  return variable(setting) + ": " + hvd::settings::entry(setting).doc;
}

// The help of a flag that sets one of Horovod's knobs horovodcpp does not act on.
std::string no_effect(Setting setting) {
  return std::string("accepted, no effect (rank 0 says so): ") + hvd::settings::entry(setting).doc;
}

Apply set_to(Setting setting, std::string value) {
  return [setting, value](Options& o, const std::string&, const Values&) {
    o.rank_settings[variable(setting)] = value;
  };
}

Apply set_int(Setting setting, long long min) {
  return [setting, min](Options& o, const std::string& shown, const Values& v) {
    o.rank_settings[variable(setting)] = std::to_string(parse_int(shown, v[0], min, INT_MAX));
  };
}

Apply set_number(Setting setting) {
  return [setting](Options& o, const std::string& shown, const Values& v) {
    parse_number(shown, v[0]);
    o.rank_settings[variable(setting)] = trim(v[0]);
  };
}

Apply set_file(Setting setting) {
  return [setting](Options& o, const std::string& shown, const Values& v) {
    if (v[0].empty()) usage(shown + " expects a file name");
    o.rank_settings[variable(setting)] = v[0];
  };
}

Apply unsupported(std::string reason) {
  return [reason](Options&, const std::string& shown, const Values&) {
    usage(shown + " is not supported: " + reason);
  };
}

Apply nothing() {
  return [](Options&, const std::string&, const Values&) {};
}

void add_network_interfaces(Options& o, const std::string& shown, const std::string& list) {
  std::size_t begin = 0;
  for (;;) {
    std::size_t comma = list.find(',', begin);
    std::string name = trim(list.substr(begin, comma - begin));
    if (name.empty())
      usage(shown + " expects interface names like eth0 or eth0,eth1, got '" + list + "'");
    auto& names = o.network_interfaces;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    if (comma == std::string::npos) return;
    begin = comma + 1;
  }
}

// ---- the table -----------------------------------------------------------

class TableBuilder {
 public:
  void section(std::string name) { section_ = std::move(name); }

  TableBuilder& add(Values spellings, Arity arity, std::string metavar, std::string help,
                    Apply apply) {
    Flag flag;
    for (const std::string& s : spellings) {
      if (flag.dest.empty() && s.rfind("--", 0) == 0) flag.dest = s.substr(2);
    }
    flag.spellings = std::move(spellings);
    flag.arity = arity;
    flag.metavar = std::move(metavar);
    flag.section = section_;
    flag.help = std::move(help);
    flag.apply = std::move(apply);
    flags_.push_back(std::move(flag));
    return *this;
  }
  TableBuilder& unsupported(Values spellings, Arity arity, std::string metavar,
                            const std::string& reason) {
    return add(std::move(spellings), arity, std::move(metavar), "not supported: " + reason,
               hvdrun::unsupported(reason));
  }
  // Horovod's --x / --no-x: two switches setting `setting` to one value or
  // the other; config_key's true picks `on`, false picks `off`.
  struct Side {
    Values spellings;
    std::string value;
    std::string help;  // after "VARIABLE=value: "
  };
  void switch_pair(Setting setting, const std::string& config_key, Side on, Side off) {
    add_side(setting, config_key, "true", std::move(on));
    const std::string dest = flags_.back().dest;
    add_side(setting, config_key, "false", std::move(off));
    flags_.back().dest = dest;
  }
  // Modifiers of the flag added last.
  TableBuilder& config(std::string key, std::string value = "") {
    flags_.back().config_key = std::move(key);
    flags_.back().config_value = std::move(value);
    return *this;
  }
  TableBuilder& dest(std::string name) {
    flags_.back().dest = std::move(name);
    return *this;
  }

  std::vector<Flag> take() { return std::move(flags_); }

 private:
  void add_side(Setting setting, const std::string& config_key, const char* choice, Side side) {
    const std::string assignment = variable(setting) + "=" + side.value;
    add(std::move(side.spellings), Arity::kSwitch, "",
        side.help.empty() ? assignment : assignment + ": " + side.help, set_to(setting, side.value))
        .config(config_key, choice);
  }

  std::string section_;
  std::vector<Flag> flags_;
};

std::vector<Flag> build_table() {
  const Arity kSwitch = Arity::kSwitch, kValue = Arity::kValue;
  TableBuilder t;

  t.section("Placement");
  t.add({"-np", "--num-proc", "-n", "--np"}, kValue, "N",
        "number of ranks (default: the Slurm/PBS allocation's task count; else required)",
        [](Options& o, const std::string& shown, const Values& v) {
          o.num_proc = parse_int(shown, v[0], 1, INT_MAX);
        });
  t.add({"-H", "--hosts"}, kValue, "H1:S1,H2:S2",
        "hosts and their slots (\"host\" alone = 1 slot); default: the Slurm/PBS allocation, "
        "else localhost:<cores of this machine>",
        [](Options& o, const std::string& shown, const Values& v) {
          if (trim(v[0]).empty()) usage(shown + " expects a host list like h1:4,h2:4, got ''");
          o.hosts = v[0];
        });
  t.add({"-hostfile", "--hostfile"}, kValue, "FILE",
        "one host per line: \"host slots=N\", \"host:N\" or \"host\"; '#' starts a comment",
        [](Options& o, const std::string& shown, const Values& v) {
          if (v[0].empty()) usage(shown + " expects a file name");
          o.hostfile = v[0];
        });

  t.section("Mode");
  t.add({"--mpi"}, kSwitch, "", "launch through mpirun (Open MPI or MPICH)",
        [](Options& o, const std::string&, const Values&) { o.mode = Mode::kMpi; })
      .dest("controller")
      .config("controller", "mpi");
  t.add({"--gloo"}, kSwitch, "",
        "start the ranks directly; they meet through a TCP store hvdrun runs (default: --mpi "
        "if mpirun is on PATH, else --gloo)",
        [](Options& o, const std::string&, const Values&) { o.mode = Mode::kGloo; })
      .dest("controller")
      .config("controller", "gloo");
  t.unsupported({"--jsrun"}, kSwitch, "",
                "hvdrun launches through mpirun (--mpi) or by itself (--gloo); under LSF give "
                "the hosts with -H or --hostfile")
      .dest("controller");
  t.add({"--network-interface"}, kValue, "IF",
        "interface the ranks talk over; repeat it, or give IF1,IF2, for several (Open MPI "
        "btl_tcp_if_include, MPICH -iface, NCCL_SOCKET_IFNAME; Gloo uses the first)",
        [](Options& o, const std::string& shown, const Values& v) {
          add_network_interfaces(o, shown, v[0]);
        });
  t.add({"--network-interfaces"}, kValue, "IF1,IF2", "the same, as one comma-separated list",
        [](Options& o, const std::string& shown, const Values& v) {
          add_network_interfaces(o, shown, v[0]);
        });
  t.add({"--mpi-args"}, kValue, "ARGS",
        "MPI mode: more mpirun arguments, split as a shell would, put before the command "
        "(e.g. --mpi-args=\"--map-by ppr:4:node\"); ignored in Gloo mode",
        [](Options& o, const std::string& shown, const Values& v) {
          o.mpi_args = split_shell_words(shown, v[0]);
        });
  t.add({"--binding-args"}, kValue, "ARGS",
        "MPI mode: these words replace hvdrun's \"--bind-to none --map-by slot\" (MPICH: "
        "\"-bind-to none\"); ignored in Gloo mode",
        [](Options& o, const std::string& shown, const Values& v) {
          o.binding_args = split_shell_words(shown, v[0]);
          if (o.binding_args.empty()) usage(shown + " expects mpirun binding arguments");
        });
  t.add({"--tcp"}, kSwitch, "",
        "NCCL_IB_DISABLE=1 on every rank: NCCL over TCP only (the CPU transports use TCP "
        "already)",
        [](Options& o, const std::string&, const Values&) {
          o.rank_settings["NCCL_IB_DISABLE"] = "1";  // NCCL's own variable
        });

  t.section("Remote hosts");
  t.add({"-p", "--ssh-port"}, kValue, "PORT", "ssh port",
        [](Options& o, const std::string& shown, const Values& v) {
          o.ssh_port = parse_int(shown, v[0], 1, 65535);
        });
  t.add({"-i", "--ssh-identity-file"}, kValue, "KEY", "ssh private key",
        [](Options& o, const std::string& shown, const Values& v) {
          if (v[0].empty()) usage(shown + " expects a key file");
          o.ssh_identity_file = v[0];
        });
  t.add({"--remote-shell"}, kValue, "TEMPLATE",
        "how to run a command on a host; {host} is replaced (default: \"ssh [-p PORT] [-i KEY] "
        "-o BatchMode=yes {host}\"; env HVDRUN_REMOTE_SHELL)",
        [](Options& o, const std::string& shown, const Values& v) {
          if (v[0].find("{host}") == std::string::npos) {
            usage(shown + " must contain {host}, e.g. 'ssh -o BatchMode=yes {host}'; got '" + v[0] +
                  "'");
          }
          o.remote_shell = v[0];
        });
  t.add({"--start-timeout"}, kValue, "S",
        "seconds a remote host has to answer before the job starts (default: "
        "HOROVOD_START_TIMEOUT, else 30)",
        [](Options& o, const std::string& shown, const Values& v) {
          o.start_timeout_seconds = parse_int(shown, v[0], 1, INT_MAX);
        });
  t.add({"--disable-cache"}, kSwitch, "",
        "accepted: hvdrun checks the hosts on every launch and caches nothing", nothing());

  t.section("Output");
  t.add({"--output-filename"}, kValue, "DIR", "write each rank's output to DIR/rank.R/output.log",
        [](Options& o, const std::string& shown, const Values& v) {
          if (v[0].empty()) usage(shown + " expects a directory");
          o.output_filename = v[0];
        });
  t.add({"--verbose"}, kSwitch, "", "print the launch command and the placement",
        [](Options& o, const std::string&, const Values&) { o.verbose = true; });
  t.add({"-prefix-timestamp", "--prefix-output-with-timestamp"}, kSwitch, "",
        "each output line starts with the local time, then the rank",
        [](Options& o, const std::string&, const Values&) { o.prefix_timestamp = true; });

  t.section("Rank settings (each sets a variable on every rank)");
  t.add({"--fusion-threshold-mb"}, kValue, "MB",
        variable(Setting::kFusionThreshold) + " = MB*1024*1024 bytes (0 disables fusion)",
        [](Options& o, const std::string& shown, const Values& v) {
          double bytes = std::llround(parse_number(shown, v[0]) * 1024.0 * 1024.0);
          if (bytes > 1e15) usage(shown + " is too large: " + v[0]);
          o.rank_settings[variable(Setting::kFusionThreshold)] =
              std::to_string(static_cast<long long>(bytes));
        })
      .config("params.fusion_threshold_mb");
  t.add({"--cycle-time-ms"}, kValue, "MS", about(Setting::kCycleTime),
        set_number(Setting::kCycleTime))
      .config("params.cycle_time_ms");
  t.add({"--cache-capacity"}, kValue, "N", about(Setting::kCacheCapacity),
        set_int(Setting::kCacheCapacity, 0))
      .config("params.cache_capacity");
  t.switch_pair(Setting::kHierarchicalAllreduce, "params.hierarchical_allreduce",
                {{"--hierarchical-allreduce"}, "1", ""},
                {{"--no-hierarchical-allreduce"}, "0", ""});
  t.switch_pair(Setting::kHierarchicalAllgather, "params.hierarchical_allgather",
                {{"--hierarchical-allgather"}, "1", no_effect(Setting::kHierarchicalAllgather)},
                {{"--no-hierarchical-allgather"}, "0", ""});
  t.switch_pair(Setting::kTorusAllreduce, "params.torus_allreduce",
                {{"--torus-allreduce"}, "1", no_effect(Setting::kTorusAllreduce)},
                {{"--no-torus-allreduce"}, "0", ""});
  t.switch_pair(
      Setting::kAutotune, "autotune.enabled",
      {{"--autotune"}, "1", "rank 0 tunes the fusion threshold and cycle time (those not set)"},
      {{"--no-autotune"}, "0", ""});
  t.add({"--autotune-log-file"}, kValue, "FILE", about(Setting::kAutotuneLog),
        set_file(Setting::kAutotuneLog))
      .config("autotune.log_file");
  t.add({"--autotune-warmup-samples"}, kValue, "N", about(Setting::kAutotuneWarmupSamples),
        set_int(Setting::kAutotuneWarmupSamples, 0))
      .config("autotune.warmup_samples");
  t.add({"--autotune-steps-per-sample"}, kValue, "N", about(Setting::kAutotuneStepsPerSample),
        set_int(Setting::kAutotuneStepsPerSample, 1))
      .config("autotune.steps_per_sample");
  t.add({"--autotune-bayes-opt-max-samples"}, kValue, "N",
        about(Setting::kAutotuneBayesOptMaxSamples),
        set_int(Setting::kAutotuneBayesOptMaxSamples, 1))
      .config("autotune.bayes_opt_max_samples");
  t.add({"--autotune-gaussian-process-noise"}, kValue, "X",
        no_effect(Setting::kAutotuneGaussianProcessNoise),
        set_number(Setting::kAutotuneGaussianProcessNoise))
      .config("autotune.gaussian_process_noise");
  t.add({"--timeline-filename"}, kValue, "FILE", about(Setting::kTimeline),
        set_file(Setting::kTimeline))
      .config("timeline.filename");
  t.switch_pair(Setting::kTimelineMarkCycles, "timeline.mark_cycles",
                {{"--timeline-mark-cycles"}, "1", ""}, {{"--no-timeline-mark-cycles"}, "0", ""});
  t.switch_pair(Setting::kStallCheckDisable, "stall_check.enabled", {{"--stall-check"}, "0", ""},
                {{"--no-stall-check"}, "1", "no stall warnings and no stall shutdown"});
  t.add({"--stall-check-warning-time-seconds"}, kValue, "S", about(Setting::kStallCheckTimeSeconds),
        set_int(Setting::kStallCheckTimeSeconds, 0))
      .config("stall_check.warning_time_seconds");
  t.add({"--stall-check-shutdown-time-seconds"}, kValue, "S",
        about(Setting::kStallShutdownTimeSeconds), set_int(Setting::kStallShutdownTimeSeconds, 0))
      .config("stall_check.shutdown_time_seconds");
  t.switch_pair(Setting::kMpiThreadsDisable, "library_options.mpi_threads_disable",
                {{"--mpi-threads-disable"}, "1", no_effect(Setting::kMpiThreadsDisable)},
                {{"--no-mpi-threads-disable"}, "0", ""});
  t.add({"--num-nccl-streams"}, kValue, "N", no_effect(Setting::kNumNcclStreams),
        set_int(Setting::kNumNcclStreams, 0))
      .config("library_options.num_nccl_streams");
  t.add({"--thread-affinity"}, kValue, "CPU[,CPU...]", about(Setting::kThreadAffinity),
        [](Options& o, const std::string& shown, const Values& v) {
          const std::string list = trim(v[0]);
          std::size_t begin = 0;
          for (;;) {
            const std::size_t comma = list.find(',', begin);
            parse_int(shown, list.substr(begin, comma - begin), 0, INT_MAX);
            if (comma == std::string::npos) break;
            begin = comma + 1;
          }
          o.rank_settings[variable(Setting::kThreadAffinity)] = list;
        })
      .config("library_options.thread_affinity");
  t.add({"--gloo-timeout-seconds"}, kValue, "S", about(Setting::kGlooTimeoutSeconds),
        set_int(Setting::kGlooTimeoutSeconds, 1))
      .config("library_options.gloo_timeout_seconds");
  t.add({"--peer-timeout"}, kValue, "S",
        about(Setting::kPeerTimeoutSeconds) +
            " (default 30). A rank frozen longer (suspended, in a debugger) or one collective "
            "slower than this fails the job; a rank busy in its own code (a checkpoint) is "
            "bounded by the stall shutdown instead",
        [](Options& o, const std::string& shown, const Values& v) {
          if (parse_number(shown, v[0]) <= 0) usage(shown + " must be positive, got " + trim(v[0]));
          o.rank_settings[variable(Setting::kPeerTimeoutSeconds)] = trim(v[0]);
        });
  t.add({"--log-level"}, kValue, "LEVEL",
        variable(Setting::kLogLevel) + ": trace, debug, info, warning, error or fatal (any case)",
        [](Options& o, const std::string& shown, const Values& v) {
          std::string level = lower(trim(v[0]));
          if (std::find(std::begin(kLogLevels), std::end(kLogLevels), level) ==
              std::end(kLogLevels)) {
            usage(shown + " must be one of trace, debug, info, warning, error, fatal; got '" +
                  v[0] + "'");
          }
          o.rank_settings[variable(Setting::kLogLevel)] = level;
        })
      .config("logging.level");
  t.switch_pair(Setting::kLogHideTime, "logging.with_timestamp",
                {{"--log-with-timestamp", "--no-log-hide-timestamp"},
                 "0",
                 "log lines carry the local time (the default)"},
                {{"--log-without-timestamp", "--log-hide-timestamp"}, "1", "log lines without it"});

  t.section("Elastic training (Gloo mode; on with --min-np or --host-discovery-script)");
  t.add({"--min-np", "--min-num-proc"}, kValue, "N",
        "fewest ranks to train on: with fewer slots, hvdrun waits --elastic-timeout for more, "
        "then fails (default: -np)",
        [](Options& o, const std::string& shown, const Values& v) {
          o.elastic.min_np = parse_int(shown, v[0], 1, INT_MAX);
        });
  t.add({"--max-np", "--max-num-proc"}, kValue, "N", "most ranks (default: -np)",
        [](Options& o, const std::string& shown, const Values& v) {
          o.elastic.max_np = parse_int(shown, v[0], 1, INT_MAX);
        });
  t.add({"--host-discovery-script"}, kValue, "SCRIPT",
        "run every second; prints the hosts available now, one \"host:slots\" per line "
        "(default: the fixed hosts of -H, --hostfile or this machine)",
        [](Options& o, const std::string& shown, const Values& v) {
          if (trim(v[0]).empty()) usage(shown + " expects a command");
          o.elastic.discovery_script = v[0];
        });
  t.add({"--slots-per-host"}, kValue, "N",
        "slots of a host the discovery script prints without \":slots\"",
        [](Options& o, const std::string& shown, const Values& v) {
          o.elastic.slots_per_host = parse_int(shown, v[0], 1, INT_MAX);
        });
  t.add({"--elastic-timeout"}, kValue, "S",
        "seconds to wait for enough slots (default: HOROVOD_ELASTIC_TIMEOUT, else 600)",
        [](Options& o, const std::string& shown, const Values& v) {
          o.elastic.timeout_seconds = parse_int(shown, v[0], 1, INT_MAX);
        });
  t.add({"--reset-limit"}, kValue, "N", "fail when the membership would change more than N times",
        [](Options& o, const std::string& shown, const Values& v) {
          o.elastic.reset_limit = parse_int(shown, v[0], 0, INT_MAX);
        });
  t.add({"--blacklist-cooldown-range"}, Arity::kTwoValues, "MIN MAX",
        "a host blacklisted for failing ranks returns after MIN..MAX seconds, growing with "
        "each failure (1 <= MIN <= MAX <= 3600; default: never)",
        [](Options& o, const std::string& shown, const Values& v) {
          const int low = parse_int(shown + " MIN", v[0], 1, 3600);
          const int high = parse_int(shown + " MAX", v[1], 1, 3600);
          if (low > high) usage(shown + ": MIN " + v[0] + " is more than MAX " + v[1]);
          o.elastic.cooldown_range = std::make_pair(low, high);
        });

  t.section("Other");
  t.add({"--config-file"}, kValue, "FILE",
        "Horovod's YAML file of settings (the keys are shown in brackets above); flags on the "
        "command line win",
        nothing());  // parse_options reads it after the command line
  t.add({"-cb", "--check-build"}, kSwitch, "",
        "print which front ends, transports and tensor operations this build has",
        [](Options& o, const std::string&, const Values&) { o.check_build = true; });
  t.add({"-v", "--version"}, kSwitch, "", "print the version",
        [](Options& o, const std::string&, const Values&) { o.version = true; });
  t.add({"-h", "--help"}, kSwitch, "", "print this help",
        [](Options& o, const std::string&, const Values&) { o.help = true; });
  return t.take();
}

}  // namespace

const std::vector<Flag>& flag_table() {
  static const std::vector<Flag> table = build_table();
  return table;
}

const Flag* find_flag(const std::string& spelling) {
  for (const Flag& flag : flag_table()) {
    for (const std::string& s : flag.spellings) {
      if (s == spelling) return &flag;
    }
  }
  return nullptr;
}

}  // namespace hvdrun
