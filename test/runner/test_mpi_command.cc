// Golden argv for mpirun (Open MPI) and mpiexec (MPICH/Hydra), flavor
// detection, forwarded environment and the -np default.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runner/cli/options.h"
#include "runner/launch/mpi_command.h"
#include "runner/placement/environment.h"
#include "usage_message.h"

namespace hvdrun {
// The argument lists read as command lines, as written.
// clang-format off
namespace {

using Argv = std::vector<std::string>;

Options command_options(const Argv& args) { return parse_options(args); }

MpiLaunch open_mpi(std::vector<Host> hosts, int np, bool root = false) {
  MpiLaunch launch;
  launch.flavor = MpiFlavor::kOpenMpi;
  launch.is_root = root;
  launch.hosts = std::move(hosts);
  launch.num_proc = np;
  return launch;
}

TEST(MpiFlavor, Detects) {
  EXPECT_EQ(detect_mpi_flavor("mpirun (Open MPI) 4.1.4\n\nReport bugs to "
                              "http://www.open-mpi.org/community/help/\n"),
            MpiFlavor::kOpenMpi);
  EXPECT_EQ(detect_mpi_flavor("mpirun (OpenRTE) 3.1.6\n"), MpiFlavor::kOpenMpi);
  EXPECT_EQ(detect_mpi_flavor("HYDRA build details:\n    Version:  4.0.2\n"), MpiFlavor::kMpich);
  EXPECT_EQ(detect_mpi_flavor("Intel(R) MPI Library for Linux* OS, Version 2021.6\n"),
            MpiFlavor::kMpich);
  EXPECT_EQ(detect_mpi_flavor("bash: mpirun: command not found"), MpiFlavor::kUnknown);
  EXPECT_EQ(detect_mpi_flavor(""), MpiFlavor::kUnknown);
}

TEST(OpenMpi, OneLocalHostAsRoot) {
  Options o = command_options({"-np", "2", "./train", "--epochs", "1"});
  MpiLaunch launch = open_mpi({{"localhost", 2}}, 2, /*root=*/true);
  launch.local_host_cores = {{"localhost", 2}};
  EXPECT_EQ(mpi_command(o, launch),
            (Argv{"mpirun", "--allow-run-as-root", "--tag-output", "-np", "2", "-H", "localhost:2",
                  "--bind-to", "none", "--map-by", "slot", "-mca", "pml", "ob1", "-mca", "btl",
                  "^openib", "-mca", "coll_libnbc_iallreduce_algorithm", "3", "./train",
                  "--epochs", "1"}));
}

TEST(OpenMpi, OneHostNotRoot) {
  Options o = command_options({"-np", "2", "./train"});
  MpiLaunch launch = open_mpi({{"localhost", 2}}, 2);
  launch.local_host_cores = {{"localhost", 8}};
  EXPECT_EQ(mpi_command(o, launch),
            (Argv{"mpirun", "--tag-output", "-np", "2", "-H", "localhost:2", "--bind-to", "none",
                  "--map-by", "slot", "-mca", "pml", "ob1", "-mca", "btl", "^openib", "-mca",
                  "coll_libnbc_iallreduce_algorithm", "3", "./train"}));
}

TEST(OpenMpi, TwoHosts) {
  Options o = command_options({"-np", "8", "-H", "h1:4,h2:4", "python", "train.py"});
  EXPECT_EQ(mpi_command(o, open_mpi({{"h1", 4}, {"h2", 4}}, 8)),
            (Argv{"mpirun", "--tag-output", "-np", "8", "-H", "h1:4,h2:4", "--bind-to", "none",
                  "--map-by", "slot", "-mca", "pml", "ob1", "-mca", "btl", "^openib", "-mca",
                  "coll_libnbc_iallreduce_algorithm", "3", "python",
                  "train.py"}));
}

// Inside a Slurm allocation mpirun starts its daemons with srun, not ssh.
TEST(OpenMpi, SlurmAllocationLaunchesThroughSlurm) {
  Options o = command_options({"python", "train.py"});
  MpiLaunch launch = open_mpi({{"n1", 2}, {"n2", 2}}, 4);
  launch.slurm = true;
  const Argv argv = mpi_command(o, launch);
  const auto plm = std::find(argv.begin(), argv.end(), "plm");
  ASSERT_NE(plm, argv.end());
  EXPECT_EQ(*(plm - 1), "-mca");
  EXPECT_EQ(*(plm + 1), "slurm");
  EXPECT_EQ(std::find(argv.begin(), argv.end(), "plm_rsh_agent"), argv.end());

  launch.flavor = MpiFlavor::kMpich;
  const Argv hydra = mpi_command(o, launch);
  const auto launcher = std::find(hydra.begin(), hydra.end(), "-launcher");
  ASSERT_NE(launcher, hydra.end());
  EXPECT_EQ(*(launcher + 1), "slurm");
}

TEST(OpenMpi, OversubscribesWhenSlotsExceedLocalCores) {
  Options o = command_options({"-np", "4", "./t"});
  MpiLaunch launch = open_mpi({{"localhost", 4}}, 4, true);
  launch.local_host_cores = {{"localhost", 2}};
  EXPECT_EQ(mpi_command(o, launch),
            (Argv{"mpirun", "--allow-run-as-root", "--tag-output", "-np", "4", "-H", "localhost:4",
                  "--bind-to", "none", "--map-by", "slot", "--oversubscribe", "-mca",
                  "mpi_yield_when_idle", "1", "-mca", "pml", "ob1",
                  "-mca", "btl", "^openib", "-mca",
                  "coll_libnbc_iallreduce_algorithm", "3", "./t"}));
  // Remote hosts' cores are unknown: no --oversubscribe for them.
  EXPECT_EQ(mpi_command(o, open_mpi({{"h1", 64}}, 4)),
            (Argv{"mpirun", "--tag-output", "-np", "4", "-H", "h1:64", "--bind-to", "none",
                  "--map-by", "slot", "-mca", "pml", "ob1", "-mca", "btl", "^openib", "-mca",
                  "coll_libnbc_iallreduce_algorithm", "3", "./t"}));
}

TEST(OpenMpi, InterfaceOutputSshAndForwardedEnvironment) {
  Options o = command_options({"-np", "4", "-H", "h1:2,h2:2", "--network-interface", "eth1",
                               "--output-filename", "/tmp/logs", "-p", "2222", "-i", "/k/id",
                               "--cycle-time-ms", "5", "--log-level", "debug", "./t", "x"});
  MpiLaunch launch = open_mpi({{"h1", 2}, {"h2", 2}}, 4, true);
  launch.forwarded = {{"PATH", "/usr/bin"},
                      {"HOROVODCPP_CYCLE_TIME", "9"},  // the flag wins
                      {"NCCL_DEBUG", "INFO"}};
  EXPECT_EQ(mpi_command(o, launch),
            (Argv{"mpirun", "--allow-run-as-root", "--tag-output", "-np", "4", "-H", "h1:2,h2:2",
                  "--bind-to", "none", "--map-by", "slot", "-mca", "pml", "ob1", "-mca", "btl",
                  "^openib", "-mca", "coll_libnbc_iallreduce_algorithm", "3", "-mca",
                  "btl_tcp_if_include", "eth1", "-mca", "plm_rsh_args", "-p 2222 -i /k/id", "--output-filename", "/tmp/logs", "-x", "NCCL_DEBUG", "-x",
                  "PATH", "-x", "HOROVODCPP_CYCLE_TIME=5", "-x", "HOROVODCPP_LOG_LEVEL=debug", "-x",
                  "NCCL_SOCKET_IFNAME=eth1", "./t", "x"}));
}

// Horovod's -mca btl ^openib would replace the site's btl setting (Debian's
// excludes uct, openib and ofi; with ofi back every MPI call polls
// libfabric): openib joins the site's exclusions instead.
TEST(OpenMpi, OpenibIsTakenOutOfTheSitesBtlSetting) {
  const std::string ompi_info =
      "mca:btl:base:param:btl_base_include:value:\n"
      "mca:btl:base:param:btl:value:^uct,openib,ofi\n"
      "mca:btl:base:param:btl:source:file (/etc/openmpi/openmpi-mca-params.conf:68)\n";
  EXPECT_EQ(open_mpi_btl_setting(ompi_info), "^uct,openib,ofi");
  EXPECT_EQ(open_mpi_btl_setting("mca:btl:base:param:btl:value:\n"), "");
  EXPECT_EQ(open_mpi_btl_setting("ompi_info: command not found\n"), "");

  EXPECT_EQ(btl_without_openib(""), "^openib");
  EXPECT_EQ(btl_without_openib("^uct,openib,ofi"), std::nullopt);
  EXPECT_EQ(btl_without_openib("^uct, ofi"), "^uct,ofi,openib");
  EXPECT_EQ(btl_without_openib("^"), "^openib");
  EXPECT_EQ(btl_without_openib("self,vader,openib,tcp"), std::nullopt);
  EXPECT_EQ(btl_without_openib("self,vader,tcp"), std::nullopt);

  const auto btl_value = [](const Argv& argv) -> std::optional<std::string> {
    const auto at = std::find(argv.begin(), argv.end(), "btl");
    if (at == argv.end()) return std::nullopt;
    return *(at + 1);
  };
  MpiLaunch launch = open_mpi({{"h1", 2}}, 2);
  const Options o = command_options({"-np", "2", "./t"});
  launch.site_btl = "^uct,openib,ofi";
  EXPECT_EQ(btl_value(mpi_command(o, launch)), std::nullopt);
  launch.site_btl = "^uct,ofi";
  EXPECT_EQ(btl_value(mpi_command(o, launch)), "^uct,ofi,openib");
  launch.user_mca = {"btl"};
  EXPECT_EQ(btl_value(mpi_command(o, launch)), std::nullopt);
}

// The non-blocking allreduce algorithm is hvdrun's choice only while the
// user makes none (OMPI_MCA_... in the environment, or --mpi-args).
TEST(OpenMpi, UsersNonblockingAllreduceAlgorithmWins) {
  const auto has_ours = [](const Argv& argv) {
    return std::find(argv.begin(), argv.end(), "coll_libnbc_iallreduce_algorithm") != argv.end();
  };
  MpiLaunch launch = open_mpi({{"h1", 2}}, 2);
  EXPECT_TRUE(has_ours(mpi_command(command_options({"-np", "2", "./t"}), launch)));
  launch.user_mca = {"coll_libnbc_iallreduce_algorithm"};
  EXPECT_FALSE(has_ours(mpi_command(command_options({"-np", "2", "./t"}), launch)));
  const Options o = command_options({"-np", "2", "--mpi-args=-mca coll_libnbc_iallreduce_algorithm 1",
                                     "./t"});
  const Argv argv = mpi_command(o, open_mpi({{"h1", 2}}, 2));
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "coll_libnbc_iallreduce_algorithm"), 1);
}

// mpirun refuses an MCA parameter given twice ("listed multiple times"),
// and its command line would override the user's OMPI_MCA_btl.
TEST(OpenMpi, UsersTransportParametersWin) {
  const auto count = [](const Argv& argv, const char* word) {
    return std::count(argv.begin(), argv.end(), word);
  };
  MpiLaunch launch = open_mpi({{"h1", 2}}, 2);
  Argv argv = mpi_command(command_options({"-np", "2", "./t"}), launch);
  EXPECT_EQ(count(argv, "btl"), 1);
  EXPECT_EQ(count(argv, "pml"), 1);
  argv = mpi_command(command_options({"-np", "2", "--mpi-args=-mca btl self,vader", "./t"}),
                     launch);
  EXPECT_EQ(count(argv, "btl"), 1);
  EXPECT_EQ(count(argv, "self,vader"), 1);
  EXPECT_EQ(count(argv, "^openib"), 0);
  EXPECT_EQ(count(argv, "pml"), 1);
  launch.user_mca = {"pml"};
  argv = mpi_command(command_options({"-np", "2", "./t"}), launch);
  EXPECT_EQ(count(argv, "pml"), 0);
  EXPECT_EQ(count(argv, "btl"), 1);
}

TEST(OpenMpi, RemoteShellBecomesTheAgent) {
  Options o = command_options({"-np", "2", "-H", "h1,h2", "--remote-shell",
                               "ssh -o StrictHostKeyChecking=no {host}", "./t"});
  Argv argv = mpi_command(o, open_mpi({{"h1", 1}, {"h2", 1}}, 2));
  Argv tail(argv.end() - 4, argv.end());
  EXPECT_EQ(tail, (Argv{"-mca", "plm_rsh_agent", "ssh -o StrictHostKeyChecking=no", "./t"}));

  o = command_options({"-np", "2", "-H", "h1,h2", "--remote-shell", "ip netns exec ns-{host}",
                       "./t"});
  EXPECT_EQ(usage_message([&] { mpi_command(o, open_mpi({{"h1", 1}, {"h2", 1}}, 2)); }),
            "--remote-shell 'ip netns exec ns-{host}' cannot be used with --mpi: mpirun needs the "
            "host as the last word (e.g. 'ssh -o BatchMode=yes {host}'); use --gloo for other "
            "templates");
  // Only local hosts: the remote shell is never used, so never an error.
  MpiLaunch local = open_mpi({{"localhost", 2}}, 2);
  local.local_host_cores = {{"localhost", 2}};
  EXPECT_EQ(mpi_command(o, local).back(), "./t");
}

TEST(Mpich, Command) {
  Options o = command_options({"-np", "8", "-H", "h1:4,h2:4", "--network-interface", "ib0",
                               "--output-filename", "/tmp/o", "--fusion-threshold-mb", "64",
                               "python", "train.py"});
  MpiLaunch launch = open_mpi({{"h1", 4}, {"h2", 4}}, 8, true);
  launch.flavor = MpiFlavor::kMpich;
  launch.forwarded = {{"PATH", "/usr/bin"}, {"LD_LIBRARY_PATH", "/opt/lib"}};
  EXPECT_EQ(mpi_command(o, launch),
            (Argv{"mpiexec", "-prepend-rank", "-n", "8", "-hosts", "h1:4,h2:4", "-bind-to", "none",
                  "-iface", "ib0", "-outfile-pattern", "/tmp/o/rank.%r.stdout", "-errfile-pattern",
                  "/tmp/o/rank.%r.stderr", "-genvlist", "LD_LIBRARY_PATH,PATH", "-genv",
                  "HOROVODCPP_FUSION_THRESHOLD", "67108864", "-genv", "NCCL_SOCKET_IFNAME", "ib0",
                  "python", "train.py"}));
}

TEST(Mpich, MinimalAndUnsupportedSsh) {
  Options o = command_options({"-np", "2", "./t"});
  MpiLaunch launch = open_mpi({{"localhost", 2}}, 2);
  launch.flavor = MpiFlavor::kMpich;
  launch.local_host_cores = {{"localhost", 2}};
  EXPECT_EQ(mpi_command(o, launch), (Argv{"mpiexec", "-prepend-rank", "-n", "2", "-hosts",
                                         "localhost:2", "-bind-to", "none", "./t"}));
  o = command_options({"-np", "2", "-H", "a,b", "-p", "2200", "./t"});
  launch.hosts = {{"a", 1}, {"b", 1}};
  EXPECT_EQ(usage_message([&] { mpi_command(o, launch); }),
            "-p/-i are not supported with MPICH (Hydra): put the port and key in ~/.ssh/config, "
            "or use --gloo");
}

TEST(OpenMpi, HorovodrunsMpiArgsBindingArgsTcpAndInterfaces) {
  Options o = command_options({"-np", "2", "--mpi-args=--map-by ppr:2:node -x 'A=b c'",
                               "--binding-args", "--bind-to core", "--tcp",
                               "--network-interfaces", "eth0,eth1", "./t"});
  MpiLaunch launch = open_mpi({{"localhost", 2}}, 2);
  launch.local_host_cores = {{"localhost", 8}};
  EXPECT_EQ(mpi_command(o, launch),
            (Argv{"mpirun", "--tag-output", "-np", "2", "-H", "localhost:2", "--bind-to", "core",
                  "-mca", "pml", "ob1", "-mca", "btl", "^openib", "-mca",
                  "coll_libnbc_iallreduce_algorithm", "3", "-mca", "btl_tcp_if_include",
                  "eth0,eth1", "-x", "NCCL_IB_DISABLE=1", "-x", "NCCL_SOCKET_IFNAME=eth0,eth1",
                  "--map-by", "ppr:2:node", "-x", "A=b c", "./t"}));
}

TEST(Mpich, BindingArgsMpiArgsAndOneInterface) {
  Options o = command_options({"-np", "2", "--binding-args=-bind-to core", "--mpi-args",
                               "-ppn 2", "--network-interface", "ib0", "./t"});
  MpiLaunch launch = open_mpi({{"localhost", 2}}, 2);
  launch.flavor = MpiFlavor::kMpich;
  launch.local_host_cores = {{"localhost", 2}};
  EXPECT_EQ(mpi_command(o, launch),
            (Argv{"mpiexec", "-prepend-rank", "-n", "2", "-hosts", "localhost:2", "-bind-to",
                  "core", "-iface", "ib0", "-genv", "NCCL_SOCKET_IFNAME", "ib0", "-ppn", "2",
                  "./t"}));
  o = command_options({"-np", "2", "--network-interface", "ib0,eth0", "./t"});
  EXPECT_EQ(usage_message([&] { mpi_command(o, launch); }),
            "MPICH (Hydra) takes one network interface (-iface), got ib0,eth0; use --gloo or "
            "Open MPI for several");
}

TEST(MpiCommand, UnknownFlavor) {
  Options o = command_options({"-np", "1", "./t"});
  MpiLaunch launch = open_mpi({{"localhost", 1}}, 1);
  launch.flavor = MpiFlavor::kUnknown;
  EXPECT_EQ(usage_message([&] { mpi_command(o, launch); }),
            "unrecognized mpirun (neither Open MPI nor MPICH/Hydra); use --gloo");
}

TEST(DefaultNumProc, FromSlurmOrAllocation) {
  std::vector<Host> alloc = {{"n1", 2}, {"n2", 3}};
  EXPECT_EQ(default_num_proc({{"SLURM_NTASKS", "4"}}, alloc), 4);
  EXPECT_EQ(default_num_proc({}, alloc), 5);
  EXPECT_EQ(default_num_proc({}, {}), std::nullopt);
  EXPECT_EQ(usage_message([&] { default_num_proc({{"SLURM_NTASKS", "x"}}, alloc); }),
            "SLURM_NTASKS='x' is not a positive number");
}

TEST(Environment, ForwardsOnlyWhatRanksNeed) {
  std::map<std::string, std::string> env = {
      {"PATH", "/bin"},          {"LD_LIBRARY_PATH", "/l"},     {"PYTHONPATH", "/p"},
      {"HOROVODCPP_CYCLE_TIME", "2"}, {"HOROVOD_FUSION_THRESHOLD", "1"}, {"NCCL_DEBUG", "INFO"},
      {"CUDA_VISIBLE_DEVICES", "0"},  {"HOME", "/root"},          {"OMPI_COMM_WORLD_RANK", "0"},
      {"PMIX_RANK", "0"},        {"HOROVODCPP_RANK", "3"},      {"HOROVOD_LOCAL_RANK", "1"},
      {"HVDRUN_REMOTE_SHELL", "x {host}"}};
  std::map<std::string, std::string> expected = {
      {"PATH", "/bin"},          {"LD_LIBRARY_PATH", "/l"},     {"PYTHONPATH", "/p"},
      {"HOROVODCPP_CYCLE_TIME", "2"}, {"HOROVOD_FUSION_THRESHOLD", "1"}, {"NCCL_DEBUG", "INFO"},
      {"CUDA_VISIBLE_DEVICES", "0"}};
  EXPECT_EQ(forwarded_environment(env), expected);
  EXPECT_FALSE(current_environment().empty());
}

TEST(HostListText, Joins) {
  EXPECT_EQ(host_list_text({{"a", 1}, {"b", 12}}), "a:1,b:12");
}

}  // namespace
// clang-format on
}  // namespace hvdrun
