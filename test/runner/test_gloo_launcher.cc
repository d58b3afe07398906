// gloo_children as a pure function: the exact environment and argv of local
// and remote ranks; shell quoting; is_local_host.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "runner/launch/gloo_launcher.h"

namespace hvdrun {
namespace {

using Env = std::map<std::string, std::string>;
using Argv = std::vector<std::string>;

std::vector<RankPlacement> two_hosts() {
  // -H localhost:2,10.255.255.1:1
  return {
      {0, "localhost", 0, 2, 0, 2}, {1, "localhost", 1, 2, 0, 1}, {2, "10.255.255.1", 0, 1, 1, 2}};
}

Options job() {
  Options options;
  options.num_proc = 3;
  options.command = {"python3", "train.py", "--lr", "0.1"};
  return options;
}

TEST(ShellQuote, PlainWordsStayAsTheyAre) {
  EXPECT_EQ(shell_quote("train.py"), "train.py");
  EXPECT_EQ(shell_quote("HOROVODCPP_RANK=2"), "HOROVODCPP_RANK=2");
  EXPECT_EQ(shell_quote("/usr/bin:/bin"), "/usr/bin:/bin");
}

TEST(ShellQuote, SpecialWordsAreSingleQuoted) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("two words"), "'two words'");
  EXPECT_EQ(shell_quote("$HOME"), "'$HOME'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("a\"b"), "'a\"b'");
  EXPECT_EQ(shell_quote("x;rm -rf /"), "'x;rm -rf /'");
  EXPECT_EQ(shell_quote("`id`"), "'`id`'");
}

TEST(IsLocalHost, LoopbackAndNames) {
  EXPECT_TRUE(is_local_host("localhost"));
  EXPECT_TRUE(is_local_host("127.0.0.1"));
  EXPECT_TRUE(is_local_host("127.0.1.1"));
  EXPECT_FALSE(is_local_host("10.255.255.1"));
  EXPECT_FALSE(is_local_host("no-such-host.invalid"));
  char name[256] = {};
  ASSERT_EQ(gethostname(name, sizeof name - 1), 0);
  EXPECT_TRUE(is_local_host(name));
}

TEST(GlooChildren, LocalRankEnvironmentAndArgv) {
  Options options = job();
  options.rank_settings = {{"HOROVODCPP_FUSION_THRESHOLD", "1048576"}, {"NCCL_IB_DISABLE", "1"}};
  Env forwarded = {{"PATH", "/usr/bin"}, {"HOROVODCPP_RANK", "stale"}};
  auto children =
      gloo_children(options, two_hosts(), {"10.0.0.5", 4242, "s3cret"}, forwarded, "/work");
  ASSERT_EQ(children.size(), 3u);
  const ChildSpec& c = children[1];
  EXPECT_EQ(c.argv, (Argv{"python3", "train.py", "--lr", "0.1"}));
  EXPECT_EQ(c.label, "[1]");
  EXPECT_EQ(c.output_file, "");
  EXPECT_EQ(c.stdin_text, "");  // a local rank's secret is in its environment
  EXPECT_EQ(c.env, (Env{{"PATH", "/usr/bin"},
                        {"HOROVODCPP_RANK", "1"},
                        {"HOROVODCPP_SIZE", "3"},
                        {"HOROVODCPP_LOCAL_RANK", "1"},
                        {"HOROVODCPP_LOCAL_SIZE", "2"},
                        {"HOROVODCPP_CROSS_RANK", "0"},
                        {"HOROVODCPP_CROSS_SIZE", "1"},
                        {"HOROVODCPP_HOSTNAME", "localhost"},
                        {"HOROVOD_RANK", "1"},
                        {"HOROVOD_SIZE", "3"},
                        {"HOROVOD_LOCAL_RANK", "1"},
                        {"HOROVOD_LOCAL_SIZE", "2"},
                        {"HOROVOD_CROSS_RANK", "0"},
                        {"HOROVOD_CROSS_SIZE", "1"},
                        {"HOROVOD_HOSTNAME", "localhost"},
                        {"HOROVODCPP_CPU_OPERATIONS", "gloo"},
                        {"HOROVODCPP_GLOO_RENDEZVOUS_ADDR", "10.0.0.5"},
                        {"HOROVODCPP_GLOO_RENDEZVOUS_PORT", "4242"},
                        {"HOROVODCPP_HVDRUN_STORE", "10.0.0.5:4242"},
                        {"HOROVODCPP_JOB_SECRET", "s3cret"},
                        {"HOROVODCPP_FUSION_THRESHOLD", "1048576"},
                        {"NCCL_IB_DISABLE", "1"}}));
}

TEST(GlooChildren, NetworkInterfaceAndOutputFiles) {
  Options options = job();
  options.network_interfaces = {"eth1", "ib0"};
  options.output_filename = "/tmp/out";
  auto children = gloo_children(options, two_hosts(), {"h", 1}, {}, "/work");
  EXPECT_EQ(children[0].env.at("HOROVODCPP_GLOO_IFACE"), "eth1");  // Gloo takes one
  EXPECT_EQ(children[0].env.at("NCCL_SOCKET_IFNAME"), "eth1,ib0");
  EXPECT_EQ(children[0].output_file, "/tmp/out/rank.0/output.log");
  EXPECT_EQ(children[2].output_file, "/tmp/out/rank.2/output.log");
}

TEST(GlooChildren, RemoteRankRunsThroughSsh) {
  Options options = job();
  options.command = {"python3", "my script.py", "--name", "it's $HOME"};
  options.ssh_port = 2222;
  options.ssh_identity_file = "/keys/id rsa";
  Env forwarded = {{"PATH", "/opt/a b:/usr/bin"}};
  auto children =
      gloo_children(options, two_hosts(), {"10.0.0.5", 4242, "s3cret"}, forwarded, "/my work");
  const ChildSpec& c = children[2];
  EXPECT_EQ(c.label, "[2]");
  // The secret comes on stdin: a command line is visible to every user.
  std::string command =
      "cd '/my work' && IFS= read -r HOROVODCPP_JOB_SECRET && export HOROVODCPP_JOB_SECRET && "
      "exec env HOROVODCPP_CPU_OPERATIONS=gloo HOROVODCPP_CROSS_RANK=1 "
      "HOROVODCPP_CROSS_SIZE=2 HOROVODCPP_GLOO_RENDEZVOUS_ADDR=10.0.0.5 "
      "HOROVODCPP_GLOO_RENDEZVOUS_PORT=4242 HOROVODCPP_HOSTNAME=10.255.255.1 "
      "HOROVODCPP_HVDRUN_STORE=10.0.0.5:4242 "
      "HOROVODCPP_LOCAL_RANK=0 HOROVODCPP_LOCAL_SIZE=1 HOROVODCPP_RANK=2 HOROVODCPP_SIZE=3 "
      "HOROVOD_CROSS_RANK=1 HOROVOD_CROSS_SIZE=2 HOROVOD_HOSTNAME=10.255.255.1 "
      "HOROVOD_LOCAL_RANK=0 HOROVOD_LOCAL_SIZE=1 HOROVOD_RANK=2 HOROVOD_SIZE=3 "
      "'PATH=/opt/a b:/usr/bin' python3 'my script.py' --name 'it'\\''s $HOME'";
  EXPECT_EQ(c.argv, (Argv{"ssh", "-o", "BatchMode=yes", "-p", "2222", "-i", "/keys/id rsa",
                          "10.255.255.1", command}));
  EXPECT_EQ(c.stdin_text, "s3cret\n");
  // The rank's variables stay in env as well (failure messages name the host).
  EXPECT_EQ(c.env.at("HOROVODCPP_RANK"), "2");
  EXPECT_EQ(c.env.at("HOROVODCPP_HOSTNAME"), "10.255.255.1");
}

TEST(GlooChildren, RemoteShellTemplate) {
  Options options = job();
  options.command = {"worker"};
  options.remote_shell = "ip netns exec hvdt-{host}  sh -c";
  auto children = gloo_children(options, two_hosts(), {"10.0.0.5", 1}, {}, "/w");
  Argv argv = children[2].argv;
  ASSERT_EQ(argv.size(), 7u);
  EXPECT_EQ(Argv(argv.begin(), argv.end() - 1),
            (Argv{"ip", "netns", "exec", "hvdt-10.255.255.1", "sh", "-c"}));
  EXPECT_EQ(argv.back().substr(0, 9), "cd /w && ");
  EXPECT_NE(argv.back().find(" && exec env "), std::string::npos);
  EXPECT_EQ(argv.back().substr(argv.back().size() - 7), " worker");
  // Local ranks never go through the remote shell.
  EXPECT_EQ(children[0].argv, (Argv{"worker"}));
}

// Teardown reaches remote ranks by the pids they reported, through the
// remote shell; local ranks and ranks that reported no pid are left to the
// process group.
TEST(GlooChildren, RemoteRanksAreSignalledByPid) {
  Options options = job();
  options.remote_shell = "rsh-to {host}";
  auto pid_of = [](int rank) { return rank == 2 ? 4242L : 0L; };
  std::vector<RemoteCommand> term = remote_signal_commands(options, two_hosts(), pid_of, SIGTERM);
  ASSERT_EQ(term.size(), 1u);
  EXPECT_EQ(term[0].host, "10.255.255.1");
  EXPECT_EQ(term[0].argv, (Argv{"rsh-to", "10.255.255.1", "kill -TERM 4242; kill -CONT 4242"}));
  std::vector<RemoteCommand> kill = remote_signal_commands(options, two_hosts(), pid_of, SIGKILL);
  ASSERT_EQ(kill.size(), 1u);
  EXPECT_EQ(kill[0].argv, (Argv{"rsh-to", "10.255.255.1", "kill -KILL 4242"}));
  EXPECT_TRUE(remote_signal_commands(
                  options, two_hosts(), [](int) { return 0L; }, SIGKILL)
                  .empty());
}

}  // namespace
}  // namespace hvdrun
