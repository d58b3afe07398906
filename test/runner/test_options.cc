// parse_options: flags, long forms, the command boundary, --config-file, and
// one clear UsageError for every bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "runner/options.h"

namespace hvdrun {
namespace {

using Args = std::vector<std::string>;

std::string usage_message(const Args& args) {
  try {
    parse_options(args);
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
  EXPECT_EQ(o.network_interface, "eth1");
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

TEST(Options, HelpAndCheckBuildNeedNoCommand) {
  EXPECT_TRUE(parse_options({"--help"}).help);
  EXPECT_TRUE(parse_options({"-h"}).help);
  EXPECT_TRUE(parse_options({"--check-build"}).check_build);
}

TEST(Options, HelpListsEveryFlagAndSetting) {
  std::string help = help_text();
  for (const char* word : {"-np",
                           "--num-proc",
                           "-H",
                           "--hosts",
                           "--hostfile",
                           "--mpi",
                           "--gloo",
                           "--network-interface",
                           "-p",
                           "-i",
                           "--output-filename",
                           "--verbose",
                           "--start-timeout",
                           "--check-build",
                           "--fusion-threshold-mb",
                           "--cycle-time-ms",
                           "--cache-capacity",
                           "--timeline-filename",
                           "--log-level",
                           "--config-file",
                           "--remote-shell",
                           "--help",
                           "--autotune",
                           "--autotune-log-file",
                           "--peer-timeout",
                           "HOROVODCPP_PEER_TIMEOUT_SECONDS",
                           "HOROVODCPP_AUTOTUNE",
                           "HOROVODCPP_CACHE_CAPACITY",
                           "HOROVODCPP_CYCLE_TIME",
                           "HOROVODCPP_LOG_LEVEL",
                           "HOROVODCPP_CPU_OPERATIONS",
                           "HOROVODCPP_CONTROLLER",
                           "HOROVODCPP_GLOO_TIMEOUT_SECONDS",
                           "HOROVODCPP_GLOO_IFACE",
                           "HOROVODCPP_PROCESS_SET_TIMEOUT_SECONDS",
                           "HOROVODCPP_SHM",
                           "HOROVODCPP_SHM_TIMEOUT_SECONDS",
                           "HOROVODCPP_SHM_SLOT_BYTES",
                           "HOROVODCPP_GPU_OPERATIONS",
                           "HOROVODCPP_NCCL_TIMEOUT_SECONDS",
                           "HOROVODCPP_HIERARCHICAL_ALLREDUCE",
                           "HVDRUN_REMOTE_SHELL",
                           "HOROVOD_",
                           "SLURM_JOB_NODELIST",
                           "PBS_NODEFILE"}) {
    EXPECT_NE(help.find(word), std::string::npos) << word;
  }
}

TEST(Options, ConfigFileFillsWhatTheCommandLineLeavesOut) {
  std::string path = write_temp(
      "# a comment\n"
      "cycle-time-ms: 3\n"
      "fusion-threshold-mb=16   # trailing comment\n"
      "log-level: \"info\"\n"
      "num-proc: 6\n"
      "verbose: true\n"
      "network_interface = eth2\n"
      "\n");
  Options o = parse_options({"--config-file", path, "-np", "2", "cmd"});
  std::remove(path.c_str());
  EXPECT_EQ(*o.num_proc, 2);  // the command line wins
  EXPECT_TRUE(o.verbose);
  EXPECT_EQ(o.network_interface, "eth2");
  EXPECT_EQ(o.rank_settings.at("HOROVODCPP_CYCLE_TIME"), "3");
  EXPECT_EQ(o.rank_settings.at("HOROVODCPP_FUSION_THRESHOLD"), "16777216");
  EXPECT_EQ(o.rank_settings.at("HOROVODCPP_LOG_LEVEL"), "info");
}

TEST(Options, CommandLineSettingWinsOverConfigFile) {
  std::string path = write_temp("cycle-time-ms: 3\nmpi: true\n");
  Options o = parse_options({"--cycle-time-ms", "7", "--gloo", "--config-file", path, "-np", "1",
                             "cmd"});
  std::remove(path.c_str());
  EXPECT_EQ(o.rank_settings.at("HOROVODCPP_CYCLE_TIME"), "7");
  EXPECT_EQ(o.mode, Mode::kGloo);
}

TEST(Options, ConfigFileErrors) {
  std::string path = write_temp("cycle-time-ms: 3\nbogus-key: 1\n");
  EXPECT_EQ(usage_message({"--config-file", path, "-np", "1", "cmd"}),
            path + ":2: unknown option 'bogus-key'");
  std::remove(path.c_str());
  path = write_temp("just words\n");
  EXPECT_EQ(usage_message({"--config-file", path, "-np", "1", "cmd"}),
            path + ":1: expected 'key: value' or 'key=value', got 'just words'");
  std::remove(path.c_str());
  path = write_temp("cache-capacity: many\n");
  EXPECT_EQ(usage_message({"--config-file", path, "-np", "1", "cmd"}),
            path + ":1: cache-capacity expects an integer, got 'many'");
  std::remove(path.c_str());
  EXPECT_EQ(usage_message({"--config-file", "/nonexistent/hvd.conf", "-np", "1", "cmd"}),
            "--config-file: cannot read '/nonexistent/hvd.conf'");
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
}

}  // namespace
}  // namespace hvdrun
