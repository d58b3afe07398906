// parse_options: flags, long forms, the command boundary, every horovodrun
// 0.28.1 flag (acting, or failing with the reason), Horovod's YAML
// --config-file, the environment's defaults, and one clear UsageError for
// every bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "runner/cli/flags.h"
#include "runner/cli/options.h"
#include "settings/settings.h"

namespace hvdrun {
// The argument lists read as command lines, as written.
// clang-format off
namespace {

using Args = std::vector<std::string>;

std::string usage_message(const Args& args, const std::map<std::string, std::string>& env = {}) {
  try {
    parse_options(args, env);
  } catch (const UsageError& e) {
    return e.message;
  }
  return "<no UsageError>";
}

std::string write_temp(const std::string& text) {
  char name[] = "/tmp/hvdrun_test_config_XXXXXX";
  int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  std::FILE* f = fdopen(fd, "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return name;
}

TEST(Options, MinimalCommand) {
  Options o = parse_options({"-np", "4", "./train", "--epochs", "1"});
  ASSERT_TRUE(o.num_proc.has_value());
  EXPECT_EQ(*o.num_proc, 4);
  EXPECT_EQ(o.command, (Args{"./train", "--epochs", "1"}));
  EXPECT_EQ(o.mode, Mode::kAuto);
  EXPECT_TRUE(o.hosts.empty());
  EXPECT_FALSE(o.verbose);
  EXPECT_EQ(o.start_timeout_seconds, 30);
  EXPECT_TRUE(o.rank_settings.empty());
  EXPECT_TRUE(o.remote_shell.empty());
}

TEST(Options, EveryFlag) {
  Options o = parse_options({"-np", "8", "-H", "h1:4,h2:4", "--gloo", "--network-interface",
                             "eth1", "-p", "2222", "-i", "/k/id", "--output-filename", "/tmp/out",
                             "--verbose", "--start-timeout", "5", "--fusion-threshold-mb", "32",
                             "--cycle-time-ms", "2.5", "--cache-capacity", "512",
                             "--timeline-filename", "/tmp/t.json", "--log-level", "DEBUG",
                             "--autotune", "--autotune-log-file", "/tmp/tune.csv",
                             "--remote-shell", "ip netns exec ns-{host}", "python", "train.py"});
  EXPECT_EQ(*o.num_proc, 8);
  EXPECT_EQ(o.hosts, "h1:4,h2:4");
  EXPECT_EQ(o.mode, Mode::kGloo);
  EXPECT_EQ(o.network_interfaces, Args{"eth1"});
  EXPECT_EQ(*o.ssh_port, 2222);
  EXPECT_EQ(o.ssh_identity_file, "/k/id");
  EXPECT_EQ(o.output_filename, "/tmp/out");
  EXPECT_TRUE(o.verbose);
  EXPECT_EQ(o.start_timeout_seconds, 5);
  EXPECT_EQ(o.remote_shell, "ip netns exec ns-{host}");
  EXPECT_EQ(o.command, (Args{"python", "train.py"}));
  std::map<std::string, std::string> expected = {
      {"HOROVODCPP_FUSION_THRESHOLD", "33554432"},
      {"HOROVODCPP_CYCLE_TIME", "2.5"},
      {"HOROVODCPP_CACHE_CAPACITY", "512"},
      {"HOROVODCPP_TIMELINE", "/tmp/t.json"},
      {"HOROVODCPP_LOG_LEVEL", "debug"},
      {"HOROVODCPP_AUTOTUNE", "1"},
      {"HOROVODCPP_AUTOTUNE_LOG", "/tmp/tune.csv"},
  };
  EXPECT_EQ(o.rank_settings, expected);
}

TEST(Options, LongFormsAndEqualsSyntax) {
  Options o = parse_options({"--num-proc=3", "--hosts", "a:2,b", "--mpi", "--ssh-port=22", "cmd"});
  EXPECT_EQ(*o.num_proc, 3);
  EXPECT_EQ(o.hosts, "a:2,b");
  EXPECT_EQ(o.mode, Mode::kMpi);
  EXPECT_EQ(*o.ssh_port, 22);
  EXPECT_EQ(o.command, Args{"cmd"});
}

TEST(Options, FractionalFusionThreshold) {
  Options o = parse_options({"-np", "1", "--fusion-threshold-mb", "0.5", "x"});
  EXPECT_EQ(o.rank_settings.at("HOROVODCPP_FUSION_THRESHOLD"), "524288");
  o = parse_options({"-np", "1", "--fusion-threshold-mb", "0", "x"});
  EXPECT_EQ(o.rank_settings.at("HOROVODCPP_FUSION_THRESHOLD"), "0");
}

TEST(Options, ParsingStopsAtTheCommand) {
  Options o = parse_options({"-np", "2", "./prog", "-np", "7", "--verbose", "--gloo"});
  EXPECT_EQ(*o.num_proc, 2);
  EXPECT_FALSE(o.verbose);
  EXPECT_EQ(o.mode, Mode::kAuto);
  EXPECT_EQ(o.command, (Args{"./prog", "-np", "7", "--verbose", "--gloo"}));
}

TEST(Options, DoubleDashEndsOptions) {
  Options o = parse_options({"-np", "2", "--", "--weird-program", "-x"});
  EXPECT_EQ(o.command, (Args{"--weird-program", "-x"}));
}

TEST(Options, HelpVersionAndCheckBuildNeedNoCommand) {
  EXPECT_TRUE(parse_options({"--help"}).help);
  EXPECT_TRUE(parse_options({"-h"}).help);
  EXPECT_TRUE(parse_options({"--check-build"}).check_build);
  EXPECT_TRUE(parse_options({"-cb"}).check_build);
  EXPECT_TRUE(parse_options({"-v"}).version);
  EXPECT_TRUE(parse_options({"--version"}).version);
}

// Every spelling in horovod/runner/launch.py of Horovod 0.28.1 (argparse's
// -h/--help included): a job script with horovodrun replaced by hvdrun must
// never meet "unknown option".
TEST(Options, EveryHorovodrunFlagIsKnown) {
  for (const char* spelling :
       {"-v", "--version", "-np", "--num-proc", "-cb", "--check-build", "--disable-cache",
        "--start-timeout", "--network-interfaces", "--network-interface", "--output-filename",
        "--verbose", "--config-file", "-p", "--ssh-port", "-i", "--ssh-identity-file",
        "--fusion-threshold-mb", "--cycle-time-ms", "--cache-capacity", "--hierarchical-allreduce",
        "--no-hierarchical-allreduce", "--hierarchical-allgather", "--no-hierarchical-allgather",
        "--torus-allreduce", "--no-torus-allreduce", "--autotune", "--no-autotune", "--autotune-log-file", "--autotune-warmup-samples",
        "--autotune-steps-per-sample", "--autotune-bayes-opt-max-samples",
        "--autotune-gaussian-process-noise", "--min-np", "--min-num-proc", "--max-np",
        "--max-num-proc", "--slots-per-host", "--elastic-timeout", "--reset-limit",
        "--blacklist-cooldown-range", "--timeline-filename", "--timeline-mark-cycles",
        "--no-timeline-mark-cycles", "--no-stall-check", "--stall-check",
        "--stall-check-warning-time-seconds", "--stall-check-shutdown-time-seconds",
        "--mpi-threads-disable", "--no-mpi-threads-disable", "--mpi-args", "--tcp",
        "--binding-args", "--num-nccl-streams", "--thread-affinity", "--gloo-timeout-seconds",
        "--log-level", "--log-with-timestamp", "--log-without-timestamp", "-prefix-timestamp",
        "--prefix-output-with-timestamp", "--log-hide-timestamp", "--no-log-hide-timestamp", "-H",
        "--hosts", "-hostfile", "--hostfile", "--host-discovery-script", "--gloo", "--mpi",
        "--jsrun", "-h", "--help"}) {
    EXPECT_NE(find_flag(spelling), nullptr) << spelling;
  }
}

TEST(Options, HorovodrunSettingFlagsSetTheRanksVariables) {
  Options o = parse_options(
      {"-np", "2", "--hierarchical-allreduce", "--no-hierarchical-allgather", "--autotune",
       "--autotune-warmup-samples", "0", "--autotune-steps-per-sample", "5",
       "--autotune-bayes-opt-max-samples", "7", "--timeline-filename", "DYNAMIC",
       "--timeline-mark-cycles", "--no-stall-check", "--stall-check-warning-time-seconds", "4",
       "--stall-check-shutdown-time-seconds", "9", "--no-mpi-threads-disable",
       "--num-nccl-streams", "1", "--gloo-timeout-seconds", "45", "--log-level", "TRACE",
       "--log-with-timestamp", "--tcp", "--disable-cache", "--thread-affinity", "2,3", "cmd"});
  std::map<std::string, std::string> expected = {
      {"HOROVODCPP_HIERARCHICAL_ALLREDUCE", "1"},
      {"HOROVODCPP_AUTOTUNE", "1"},
      {"HOROVODCPP_AUTOTUNE_WARMUP_SAMPLES", "0"},
      {"HOROVODCPP_AUTOTUNE_STEPS_PER_SAMPLE", "5"},
      {"HOROVODCPP_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "7"},
      {"HOROVODCPP_TIMELINE", "DYNAMIC"},
      {"HOROVODCPP_TIMELINE_MARK_CYCLES", "1"},
      {"HOROVODCPP_STALL_CHECK_DISABLE", "1"},
      {"HOROVODCPP_STALL_CHECK_TIME_SECONDS", "4"},
      {"HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS", "9"},
      {"HOROVODCPP_GLOO_TIMEOUT_SECONDS", "45"},
      {"HOROVODCPP_LOG_LEVEL", "trace"},
      {"HOROVODCPP_LOG_HIDE_TIME", "0"},
      {"HOROVODCPP_HIERARCHICAL_ALLGATHER", "0"},
      {"HOROVODCPP_MPI_THREADS_DISABLE", "0"},
      {"HOROVODCPP_NUM_NCCL_STREAMS", "1"},
      {"HOROVODCPP_THREAD_AFFINITY", "2,3"},
      {"NCCL_IB_DISABLE", "1"},
  };
  EXPECT_EQ(o.rank_settings, expected);

  o = parse_options({"-np", "2", "--no-hierarchical-allreduce", "--no-autotune",
                     "--no-timeline-mark-cycles", "--stall-check", "--log-hide-timestamp", "cmd"});
  expected = {{"HOROVODCPP_HIERARCHICAL_ALLREDUCE", "0"},
              {"HOROVODCPP_AUTOTUNE", "0"},
              {"HOROVODCPP_TIMELINE_MARK_CYCLES", "0"},
              {"HOROVODCPP_STALL_CHECK_DISABLE", "0"},
              {"HOROVODCPP_LOG_HIDE_TIME", "1"}};
  EXPECT_EQ(o.rank_settings, expected);
}

TEST(Options, NetworkInterfacesInOrderWithoutRepeats) {
  Options o = parse_options({"-np", "1", "--network-interface", "eth0", "--network-interfaces",
                             "ib0,eth0", "--network-interface", "eth1,eth2", "cmd"});
  EXPECT_EQ(o.network_interfaces, (Args{"eth0", "ib0", "eth1", "eth2"}));
  EXPECT_EQ(usage_message({"-np", "1", "--network-interfaces", "eth0,", "cmd"}),
            "--network-interfaces expects interface names like eth0 or eth0,eth1, got 'eth0,'");
}

TEST(Options, MpiAndBindingArgsAreSplitLikeAShell) {
  Options o = parse_options({"-np", "1", "--mpi-args=--map-by ppr:2:node -x 'A=b c' -x B=\"d e\"",
                             "--binding-args", "--bind-to core", "cmd"});
  EXPECT_EQ(o.mpi_args, (Args{"--map-by", "ppr:2:node", "-x", "A=b c", "-x", "B=d e"}));
  EXPECT_EQ(o.binding_args, (Args{"--bind-to", "core"}));
  EXPECT_EQ(usage_message({"-np", "1", "--mpi-args", "-x 'A=b", "cmd"}),
            "--mpi-args has an unterminated ' quote: -x 'A=b");
}

TEST(Options, FlagsWithoutTheFeatureFailWithTheReason) {
  EXPECT_EQ(usage_message({"-np", "2", "--jsrun", "cmd"}),
            "--jsrun is not supported: hvdrun launches through mpirun (--mpi) or by itself "
            "(--gloo); under LSF give the hosts with -H or --hostfile");
}

// Horovod's tuning flags horovodcpp does not act on set their variable, as
// horovodrun does; rank 0 then says once what horovodcpp does instead
// (settings::no_effect_warnings). The job runs.
TEST(Options, TuningFlagsWithoutEffectAreAcceptedAndForwarded) {
  Options o = parse_options({"-np", "2", "--hierarchical-allgather", "--torus-allreduce",
                             "--mpi-threads-disable", "--num-nccl-streams", "2",
                             "--autotune-gaussian-process-noise", "0.8", "cmd"});
  const std::map<std::string, std::string> expected = {
      {"HOROVODCPP_HIERARCHICAL_ALLGATHER", "1"},
      {"HOROVODCPP_TORUS_ALLREDUCE", "1"},
      {"HOROVODCPP_MPI_THREADS_DISABLE", "1"},
      {"HOROVODCPP_NUM_NCCL_STREAMS", "2"},
      {"HOROVODCPP_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "0.8"},
  };
  EXPECT_EQ(o.rank_settings, expected);
  EXPECT_EQ(parse_options({"-np", "2", "--no-torus-allreduce", "cmd"})
                .rank_settings.at("HOROVODCPP_TORUS_ALLREDUCE"),
            "0");
  EXPECT_EQ(usage_message({"-np", "2", "--torus-allreduce", "--no-torus-allreduce", "cmd"}),
            "choose one of --torus-allreduce and --no-torus-allreduce, not both");
  EXPECT_EQ(usage_message({"-np", "2", "--thread-affinity", "1,x", "cmd"}),
            "--thread-affinity expects an integer, got 'x'");
}

TEST(Options, OutputTimestamps) {
  EXPECT_FALSE(parse_options({"-np", "2", "cmd"}).prefix_timestamp);
  EXPECT_TRUE(parse_options({"-np", "2", "-prefix-timestamp", "cmd"}).prefix_timestamp);
  EXPECT_TRUE(parse_options({"-np", "2", "--prefix-output-with-timestamp", "cmd"}).prefix_timestamp);
}

TEST(Options, ElasticFlags) {
  Options o =
      parse_options({"-np", "3", "--min-np", "2", "--max-num-proc", "4", "--host-discovery-script",
                     "./discover.sh", "--slots-per-host", "2", "--elastic-timeout", "30",
                     "--reset-limit", "5", "--blacklist-cooldown-range", "10", "100", "cmd"});
  EXPECT_TRUE(o.elastic.enabled());
  EXPECT_EQ(*o.elastic.min_np, 2);
  EXPECT_EQ(*o.elastic.max_np, 4);
  EXPECT_EQ(o.elastic.discovery_script, "./discover.sh");
  EXPECT_EQ(*o.elastic.slots_per_host, 2);
  EXPECT_EQ(o.elastic.timeout_seconds, 30);
  EXPECT_EQ(*o.elastic.reset_limit, 5);
  EXPECT_EQ(*o.elastic.cooldown_range, std::make_pair(10, 100));
  // As horovodrun: elastic with --min-np or a discovery script, not otherwise.
  EXPECT_TRUE(parse_options({"--min-num-proc", "2", "cmd"}).elastic.enabled());
  EXPECT_TRUE(parse_options({"--host-discovery-script", "d", "cmd"}).elastic.enabled());
  EXPECT_FALSE(parse_options({"-np", "2", "cmd"}).elastic.enabled());
  EXPECT_EQ(parse_options({"--min-np", "2", "cmd"}).elastic.timeout_seconds, 600);
}

TEST(Options, ElasticTimeoutFromTheEnvironment) {
  const std::map<std::string, std::string> env = {{"HOROVOD_ELASTIC_TIMEOUT", "42"}};
  EXPECT_EQ(parse_options({"--min-np", "2", "cmd"}, env).elastic.timeout_seconds, 42);
  EXPECT_EQ(parse_options({"--min-np", "2", "--elastic-timeout", "7", "cmd"}, env)
                .elastic.timeout_seconds,
            7);
}

TEST(Options, ElasticMistakes) {
  for (const char* flag : {"--max-np", "--slots-per-host", "--elastic-timeout", "--reset-limit"}) {
    EXPECT_EQ(usage_message({"-np", "2", flag, "4", "cmd"}),
              std::string(flag) +
                  " applies to elastic jobs: add --min-np N or --host-discovery-script SCRIPT");
  }
  EXPECT_EQ(usage_message({"-np", "2", "--blacklist-cooldown-range", "10", "100", "cmd"}),
            "--blacklist-cooldown-range applies to elastic jobs: add --min-np N or "
            "--host-discovery-script SCRIPT");
  EXPECT_EQ(usage_message({"-np", "2", "--blacklist-cooldown-range", "10"}),
            "option '--blacklist-cooldown-range' expects two values");
  EXPECT_EQ(usage_message({"--min-np", "2", "--blacklist-cooldown-range", "100", "10", "cmd"}),
            "--blacklist-cooldown-range: MIN 100 is more than MAX 10");
  EXPECT_EQ(usage_message({"--min-np", "2", "--blacklist-cooldown-range", "0", "10", "cmd"}),
            "--blacklist-cooldown-range MIN must be between 1 and 3600, got 0");
  EXPECT_EQ(usage_message({"--min-np", "2", "--mpi", "cmd"}),
            "elastic training (--min-np, --host-discovery-script) runs in Gloo mode, as "
            "horovodrun's: drop --mpi");
  EXPECT_EQ(usage_message({"--min-np", "3", "--max-np", "2", "cmd"}),
            "--min-np 3 is more than --max-np 2");
  EXPECT_EQ(usage_message({"-np", "5", "--min-np", "2", "--max-np", "4", "cmd"}),
            "-np 5 must lie between --min-np and --max-np");
  EXPECT_EQ(usage_message({"-H", "a:2", "--host-discovery-script", "d", "cmd"}),
            "give the hosts either with --host-discovery-script or with -H/--hostfile, not both");
  EXPECT_EQ(usage_message({"--min-np", "0", "cmd"}), "--min-np must be at least 1, got 0");
}

TEST(Options, AlternativesExcludeEachOther) {
  EXPECT_EQ(usage_message({"-np", "2", "--autotune", "--no-autotune", "cmd"}),
            "choose one of --autotune and --no-autotune, not both");
  EXPECT_EQ(usage_message({"-np", "2", "--gloo", "--jsrun", "cmd"}),
            "choose one of --gloo and --jsrun, not both");
  // The same flag twice is no conflict; the last value counts.
  EXPECT_EQ(*parse_options({"-np", "2", "--num-proc", "3", "cmd"}).num_proc, 3);
}

TEST(Options, EnvironmentGivesDefaultsTheFlagsOverride) {
  std::map<std::string, std::string> env = {{"HOROVOD_START_TIMEOUT", "90"},
                                            {"HVDRUN_REMOTE_SHELL", "rsh {host}"}};
  Options o = parse_options({"-np", "1", "cmd"}, env);
  EXPECT_EQ(o.start_timeout_seconds, 90);
  EXPECT_EQ(o.remote_shell, "rsh {host}");
  o = parse_options({"-np", "1", "--start-timeout", "5", "--remote-shell", "ssh {host}", "cmd"},
                    env);
  EXPECT_EQ(o.start_timeout_seconds, 5);
  EXPECT_EQ(o.remote_shell, "ssh {host}");
  EXPECT_EQ(usage_message({"-np", "1", "cmd"}, {{"HOROVOD_START_TIMEOUT", "x"}}),
            "HOROVOD_START_TIMEOUT expects an integer, got 'x'");
  EXPECT_EQ(usage_message({"-np", "1", "cmd"}, {{"HVDRUN_REMOTE_SHELL", "ssh"}}),
            "HVDRUN_REMOTE_SHELL='ssh' must contain {host}");
}

TEST(Options, HelpListsEveryFlagWithItsConfigKey) {
  std::string help = help_text();
  for (const Flag& flag : flag_table()) {
    for (const std::string& spelling : flag.spellings) {
      EXPECT_NE(help.find(" " + spelling), std::string::npos) << spelling;
    }
    if (!flag.config_key.empty()) {
      EXPECT_NE(help.find("[" + flag.config_key), std::string::npos) << flag.config_key;
    }
  }
  for (const char* word :
       {"HOROVODCPP_AUTOTUNE", "HOROVODCPP_CACHE_CAPACITY", "HOROVODCPP_CYCLE_TIME",
        "HOROVODCPP_LOG_LEVEL", "HOROVODCPP_LOG_HIDE_TIME", "HOROVODCPP_CPU_OPERATIONS",
        "HOROVODCPP_CONTROLLER", "HOROVODCPP_GLOO_TIMEOUT_SECONDS", "HOROVODCPP_GLOO_IFACE",
        "HOROVODCPP_PROCESS_SET_TIMEOUT_SECONDS", "HOROVODCPP_SHM",
        "HOROVODCPP_SHM_TIMEOUT_SECONDS", "HOROVODCPP_SHM_SLOT_BYTES", "HOROVODCPP_GPU_OPERATIONS",
        "HOROVODCPP_NCCL_TIMEOUT_SECONDS", "HOROVODCPP_HIERARCHICAL_ALLREDUCE",
        "HOROVODCPP_STALL_CHECK_DISABLE", "DYNAMIC", "HOROVOD_RANK", "HOROVOD_START_TIMEOUT",
        "HVDRUN_REMOTE_SHELL", "SLURM_JOB_NODELIST", "PBS_NODEFILE"}) {
    EXPECT_NE(help.find(word), std::string::npos) << word;
  }
}

// A flag that sets a rank's variable sets a setting of the table
// (horovodcpp/settings), so the ranks read it and the docs list it.
TEST(Options, FlagsSetOnlySettingsOfTheTable) {
  std::set<std::string> known;
  for (const hvd::settings::Entry& e : hvd::settings::table()) {
    known.insert(hvd::settings::variable(e.id));
  }
  std::size_t setting_flags = 0;
  for (const Flag& flag : flag_table()) {
    for (const char* value : {"1", "info", "/tmp/file"}) {
      Options options;
      try {
        flag.apply(options, flag.spellings.front(), {value, value});
      } catch (const UsageError&) {
        continue;  // unsupported, or not a value this flag takes
      }
      for (const auto& [name, unused] : options.rank_settings) {
        if (name.rfind("NCCL_", 0) == 0) continue;  // NCCL's own (--tcp)
        EXPECT_TRUE(known.count(name)) << flag.spellings.front() << " sets " << name;
        ++setting_flags;
      }
      break;
    }
  }
  EXPECT_GE(setting_flags, 20u);
}

TEST(Options, HorovodConfigFile) {
  std::string path = write_temp(
      "controller: gloo\n"
      "params:\n"
      "  fusion_threshold_mb: 16\n"
      "  cycle_time_ms: 3\n"
      "  cache_capacity: 512\n"
      "  hierarchical_allreduce: false\n"
      "  hierarchical_allgather: false\n"
      "  torus_allreduce: true\n"
      "autotune:\n"
      "  enabled: true\n"
      "  log_file: /tmp/tune.csv\n"
      "  warmup_samples: 2\n"
      "  steps_per_sample: 4\n"
      "  bayes_opt_max_samples: 8\n"
      "timeline:\n"
      "  filename: /tmp/t.json\n"
      "  mark_cycles: yes\n"
      "stall_check:\n"
      "  enabled: false\n"
      "  warning_time_seconds: 30\n"
      "  shutdown_time_seconds: 120\n"
      "library_options:\n"
      "  mpi_threads_disable: false\n"
      "  num_nccl_streams: 1\n"
      "  thread_affinity: 0\n"
      "  gloo_timeout_seconds: 50\n"
      "logging:\n"
      "  level: INFO\n"
      "  with_timestamp: false\n");
  Options o = parse_options({"--config-file", path, "-np", "2", "cmd"});
  std::remove(path.c_str());
  EXPECT_EQ(o.mode, Mode::kGloo);
  std::map<std::string, std::string> expected = {
      {"HOROVODCPP_FUSION_THRESHOLD", "16777216"},
      {"HOROVODCPP_CYCLE_TIME", "3"},
      {"HOROVODCPP_CACHE_CAPACITY", "512"},
      {"HOROVODCPP_HIERARCHICAL_ALLREDUCE", "0"},
      {"HOROVODCPP_HIERARCHICAL_ALLGATHER", "0"},
      {"HOROVODCPP_TORUS_ALLREDUCE", "1"},
      {"HOROVODCPP_MPI_THREADS_DISABLE", "0"},
      {"HOROVODCPP_NUM_NCCL_STREAMS", "1"},
      {"HOROVODCPP_THREAD_AFFINITY", "0"},
      {"HOROVODCPP_AUTOTUNE", "1"},
      {"HOROVODCPP_AUTOTUNE_LOG", "/tmp/tune.csv"},
      {"HOROVODCPP_AUTOTUNE_WARMUP_SAMPLES", "2"},
      {"HOROVODCPP_AUTOTUNE_STEPS_PER_SAMPLE", "4"},
      {"HOROVODCPP_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "8"},
      {"HOROVODCPP_TIMELINE", "/tmp/t.json"},
      {"HOROVODCPP_TIMELINE_MARK_CYCLES", "1"},
      {"HOROVODCPP_STALL_CHECK_DISABLE", "1"},
      {"HOROVODCPP_STALL_CHECK_TIME_SECONDS", "30"},
      {"HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS", "120"},
      {"HOROVODCPP_GLOO_TIMEOUT_SECONDS", "50"},
      {"HOROVODCPP_LOG_LEVEL", "info"},
      {"HOROVODCPP_LOG_HIDE_TIME", "1"},
  };
  EXPECT_EQ(o.rank_settings, expected);
}

TEST(Options, CommandLineWinsOverConfigFileWhereverItStands) {
  std::string path = write_temp(
      "controller: mpi\nparams:\n  cycle_time_ms: 3\n  fusion_threshold_mb: 8\n"
      "autotune:\n  enabled: true\n");
  Options o = parse_options({"--cycle-time-ms", "7", "--gloo", "--config-file", path,
                             "--no-autotune", "-np", "1", "cmd"});
  std::remove(path.c_str());
  EXPECT_EQ(o.mode, Mode::kGloo);
  EXPECT_EQ(o.rank_settings.at("HOROVODCPP_CYCLE_TIME"), "7");
  EXPECT_EQ(o.rank_settings.at("HOROVODCPP_FUSION_THRESHOLD"), "8388608");
  EXPECT_EQ(o.rank_settings.at("HOROVODCPP_AUTOTUNE"), "0");
}

TEST(Options, ConfigFileErrors) {
  auto error_of = [](const std::string& text) {
    std::string path = write_temp(text);
    std::string message = usage_message({"--config-file", path, "-np", "1", "cmd"});
    std::remove(path.c_str());
    return message.substr(message.find(':') + 1);  // without the path
  };
  EXPECT_EQ(error_of("params:\n  cycle_time_ms: 3\n  bogus_key: 1\n"),
            "3: unknown key 'params.bogus_key' (hvdrun --help shows every key, in brackets)");
  EXPECT_EQ(error_of("cycle-time-ms: 3\n"),
            "1: unknown key 'cycle-time-ms' (hvdrun --help shows every key, in brackets)");
  EXPECT_EQ(error_of("params: 3\n"),
            "1: 'params' holds indented keys (e.g. 'params:' then '  key: value'), not a value");
  EXPECT_EQ(error_of("params:\n  cache_capacity: many\n"),
            "2: params.cache_capacity expects an integer, got 'many'");
  EXPECT_EQ(error_of("controller: jsrun\n"), "1: controller must be one of mpi, gloo; got 'jsrun'");
  EXPECT_EQ(error_of("stall_check:\n  enabled: maybe\n"),
            "2: stall_check.enabled must be one of true, false; got 'maybe'");
  EXPECT_EQ(error_of("library_options:\n  thread_affinity: 0,-1\n"),
            "2: library_options.thread_affinity must be at least 0, got -1");
  EXPECT_EQ(error_of("a:\n\tb: 1\n"), "2: tabs are not allowed for indentation in YAML");
  // Empty sections and null values leave everything alone, as in Horovod.
  EXPECT_EQ(error_of("params:\nlogging:\n  level: ~\n"), "<no UsageError>");
  EXPECT_EQ(usage_message({"--config-file", "/nonexistent/hvd.yaml", "-np", "1", "cmd"}),
            "--config-file: cannot read '/nonexistent/hvd.yaml'");
}

TEST(Options, BadInputs) {
  EXPECT_EQ(usage_message({"--bogus", "-np", "2", "cmd"}), "unknown option '--bogus'");
  EXPECT_EQ(usage_message({"-x", "cmd"}), "unknown option '-x'");
  EXPECT_EQ(usage_message({"-np"}), "option '-np' expects a value");
  EXPECT_EQ(usage_message({"-np", "2", "-H"}), "option '-H' expects a value");
  EXPECT_EQ(usage_message({"-np", "two", "cmd"}), "-np expects an integer, got 'two'");
  EXPECT_EQ(usage_message({"-np", "2x", "cmd"}), "-np expects an integer, got '2x'");
  EXPECT_EQ(usage_message({"-np", "0", "cmd"}), "-np must be at least 1, got 0");
  EXPECT_EQ(usage_message({"-np", "-3", "cmd"}), "-np must be at least 1, got -3");
  EXPECT_EQ(usage_message({"-np", "99999999999999", "cmd"}),
            "-np is too large: 99999999999999");
  EXPECT_EQ(usage_message({"-np", "2"}), "missing the command to run (e.g. hvdrun -np 4 ./train)");
  EXPECT_EQ(usage_message({}), "missing the command to run (e.g. hvdrun -np 4 ./train)");
  EXPECT_EQ(usage_message({"-np", "2", "-H", "", "cmd"}),
            "-H expects a host list like h1:4,h2:4, got ''");
  EXPECT_EQ(usage_message({"-np", "2", "-p", "0", "cmd"}), "-p must be between 1 and 65535, got 0");
  EXPECT_EQ(usage_message({"-np", "2", "--start-timeout", "soon", "cmd"}),
            "--start-timeout expects an integer, got 'soon'");
  EXPECT_EQ(usage_message({"-np", "2", "--cycle-time-ms", "-1", "cmd"}),
            "--cycle-time-ms must not be negative, got -1");
  EXPECT_EQ(usage_message({"-np", "2", "--fusion-threshold-mb", "big", "cmd"}),
            "--fusion-threshold-mb expects a number, got 'big'");
  EXPECT_EQ(usage_message({"-np", "2", "--log-level", "loud", "cmd"}),
            "--log-level must be one of trace, debug, info, warning, error, fatal; got 'loud'");
  EXPECT_EQ(usage_message({"-np", "2", "--mpi", "--gloo", "cmd"}),
            "choose one of --mpi and --gloo, not both");
  EXPECT_EQ(usage_message({"-np", "2", "--verbose=yes", "cmd"}),
            "option '--verbose' takes no value");
  EXPECT_EQ(usage_message({"-np", "2", "-H", "a:1", "--hostfile", "f", "cmd"}),
            "give either -H/--hosts or --hostfile, not both");
  EXPECT_EQ(usage_message({"-np", "2", "--remote-shell", "ssh", "cmd"}),
            "--remote-shell must contain {host}, e.g. 'ssh -o BatchMode=yes {host}'; got 'ssh'");
}

TEST(Options, PeerTimeoutIsForwardedToTheRanks) {
  Options o = parse_options({"-np", "2", "--peer-timeout", "2.5", "cmd"});
  EXPECT_EQ(o.rank_settings.at("HOROVODCPP_PEER_TIMEOUT_SECONDS"), "2.5");
  EXPECT_EQ(usage_message({"-np", "2", "--peer-timeout", "0", "cmd"}),
            "--peer-timeout must be positive, got 0");
  EXPECT_EQ(usage_message({"-np", "2", "--peer-timeout", "soon", "cmd"}),
            "--peer-timeout expects a number, got 'soon'");
  EXPECT_NE(help_text().find("--peer-timeout"), std::string::npos);
  EXPECT_NE(help_text().find("HOROVODCPP_PEER_TIMEOUT_SECONDS"), std::string::npos);
}

}  // namespace
// clang-format on
}  // namespace hvdrun
