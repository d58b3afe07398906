// Host lists, hostfiles, Slurm and PBS allocations, and rank placement.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "runner/cli/options.h"
#include "runner/placement/hosts.h"
#include "usage_message.h"

namespace hvdrun {
namespace {

using Names = std::vector<std::string>;
using Env = std::map<std::string, std::string>;

// "h1:4,h2:1" form of a host vector, for compact assertions.
std::string text(const std::vector<Host>& hosts) {
  std::string out;
  for (const Host& h : hosts)
    out += (out.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
  return out;
}

TEST(HostList, Parses) {
  EXPECT_EQ(text(parse_host_list("h1:4,h2:4")), "h1:4,h2:4");
  EXPECT_EQ(text(parse_host_list("localhost")), "localhost:1");
  EXPECT_EQ(text(parse_host_list("a:2, b ,10.0.0.3:16")), "a:2,b:1,10.0.0.3:16");
}

TEST(HostList, BadInputs) {
  EXPECT_EQ(usage_message([] { parse_host_list("h1:x"); }),
            "bad slot count 'x' in 'h1:x' of host list 'h1:x' (expected a whole number >= 1)");
  EXPECT_EQ(usage_message([] { parse_host_list("h1:0"); }),
            "slot count must be at least 1, got 0 in 'h1:0' of host list 'h1:0'");
  EXPECT_EQ(usage_message([] { parse_host_list("h1:-2"); }),
            "bad slot count '-2' in 'h1:-2' of host list 'h1:-2' (expected a whole number >= 1)");
  EXPECT_EQ(usage_message([] { parse_host_list(":4"); }),
            "missing host name in ':4' of host list ':4'");
  EXPECT_EQ(usage_message([] { parse_host_list(""); }),
            "empty host list (expected e.g. -H h1:4,h2:4)");
  EXPECT_EQ(usage_message([] { parse_host_list("  "); }),
            "empty host list (expected e.g. -H h1:4,h2:4)");
  EXPECT_EQ(usage_message([] { parse_host_list("a:1,,b:1"); }),
            "empty entry in host list 'a:1,,b:1'");
  EXPECT_EQ(usage_message([] { parse_host_list("a:1,"); }), "empty entry in host list 'a:1,'");
  EXPECT_EQ(usage_message([] { parse_host_list("h1:"); }),
            "bad slot count '' in 'h1:' of host list 'h1:' (expected a whole number >= 1)");
  EXPECT_EQ(usage_message([] { parse_host_list("a:1,a:2"); }),
            "host 'a' is listed twice (host list 'a:1,a:2'); give it once with the total slots");
}

TEST(Hostfile, Parses) {
  EXPECT_EQ(text(parse_hostfile_text("# cluster\n"
                                     "node1 slots=4\n"
                                     "node2:2\n"
                                     "\n"
                                     "  node3   # one slot\n"
                                     "node4 slots=8 max_slots=8\n")),
            "node1:4,node2:2,node3:1,node4:8");
}

TEST(Hostfile, BadInputs) {
  EXPECT_EQ(
      usage_message([] { parse_hostfile_text("node1 slots=x\n"); }),
      "bad slot count 'x' in hostfile line 1 ('node1 slots=x') (expected a whole number >= 1)");
  EXPECT_EQ(usage_message([] { parse_hostfile_text("a\nnode1 cpus=4\n"); }),
            "unexpected 'cpus=4' on hostfile line 2 ('node1 cpus=4'); expected 'host slots=N', "
            "'host:N' or 'host'");
  EXPECT_EQ(usage_message([] { parse_hostfile_text("# nothing\n\n"); }),
            "the hostfile lists no hosts");
  EXPECT_EQ(usage_message([] { parse_hostfile_text("n1:0\n"); }),
            "slot count must be at least 1, got 0 in hostfile line 1 ('n1:0')");
}

TEST(SlurmNodelist, Expands) {
  EXPECT_EQ(expand_slurm_nodelist("node[01-03,07],gpu5"),
            (Names{"node01", "node02", "node03", "node07", "gpu5"}));
  EXPECT_EQ(expand_slurm_nodelist("single"), (Names{"single"}));
  EXPECT_EQ(expand_slurm_nodelist("a,b,c"), (Names{"a", "b", "c"}));
  EXPECT_EQ(expand_slurm_nodelist("n[8-11]"), (Names{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(expand_slurm_nodelist("n[098-101]"), (Names{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand_slurm_nodelist("rack[1-2]-n[01-02]"),
            (Names{"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}));
  EXPECT_EQ(expand_slurm_nodelist("cn[5],gpu[1-2].cluster"),
            (Names{"cn5", "gpu1.cluster", "gpu2.cluster"}));
}

TEST(SlurmNodelist, BadInputs) {
  EXPECT_EQ(usage_message([] { expand_slurm_nodelist("node[01-03"); }),
            "unbalanced '[' in Slurm node list 'node[01-03'");
  EXPECT_EQ(usage_message([] { expand_slurm_nodelist("node[3-1]"); }),
            "descending range '3-1' in Slurm node list 'node[3-1]'");
  EXPECT_EQ(usage_message([] { expand_slurm_nodelist("node[a-b]"); }),
            "bad range 'a-b' in Slurm node list 'node[a-b]'");
  EXPECT_EQ(usage_message([] { expand_slurm_nodelist(""); }), "empty Slurm node list");
}

TEST(HostsFromEnvironment, SlurmTasksPerNode) {
  Env env = {{"SLURM_JOB_NODELIST", "node[01-03,07],gpu5"}, {"SLURM_TASKS_PER_NODE", "2(x3),1,4"}};
  EXPECT_EQ(text(hosts_from_environment(env, "")), "node01:2,node02:2,node03:2,node07:1,gpu5:4");
}

TEST(HostsFromEnvironment, SlurmNodelistFallbackAndDefaultTasks) {
  Env env = {{"SLURM_NODELIST", "c[1-2]"}};
  EXPECT_EQ(text(hosts_from_environment(env, "")), "c1:1,c2:1");
  env["SLURM_NTASKS_PER_NODE"] = "3";
  EXPECT_EQ(text(hosts_from_environment(env, "")), "c1:3,c2:3");
  env["SLURM_TASKS_PER_NODE"] = "4(x2)";
  EXPECT_EQ(text(hosts_from_environment(env, "")), "c1:4,c2:4");
}

TEST(HostsFromEnvironment, SlurmMismatchAndMalformed) {
  Env env = {{"SLURM_JOB_NODELIST", "c[1-3]"}, {"SLURM_TASKS_PER_NODE", "2(x2)"}};
  EXPECT_EQ(usage_message([&] { hosts_from_environment(env, ""); }),
            "SLURM_TASKS_PER_NODE='2(x2)' describes 2 nodes but SLURM_JOB_NODELIST='c[1-3]' has 3");
  env["SLURM_TASKS_PER_NODE"] = "2(3)";
  EXPECT_EQ(usage_message([&] { hosts_from_environment(env, ""); }),
            "bad entry '2(3)' in SLURM_TASKS_PER_NODE='2(3)' (expected N or N(xM))");
}

TEST(HostsFromEnvironment, PbsNodefileCountsRepeats) {
  Env env = {{"PBS_NODEFILE", "/var/spool/pbs/aux/123"}};
  EXPECT_EQ(text(hosts_from_environment(env, "n1\nn1\nn2\nn1\n\nn3\n")), "n1:3,n2:1,n3:1");
  EXPECT_EQ(usage_message([&] { hosts_from_environment(env, "\n"); }),
            "PBS_NODEFILE '/var/spool/pbs/aux/123' lists no hosts");
}

TEST(HostsFromEnvironment, SlurmBeatsPbsAndNothingOutsideAnAllocation) {
  Env env = {{"PBS_NODEFILE", "/f"}, {"SLURM_JOB_NODELIST", "s1"}};
  EXPECT_EQ(text(hosts_from_environment(env, "p1\n")), "s1:1");
  EXPECT_TRUE(hosts_from_environment({{"HOME", "/root"}}, "").empty());
  EXPECT_TRUE(hosts_from_environment({}, "n1\n").empty());  // text without PBS_NODEFILE
}

TEST(PlaceRanks, FillsHostByHost) {
  // h1:4,h2:4 with 6 ranks: 4 on h1, 2 on h2.
  std::vector<RankPlacement> p = place_ranks({{"h1", 4}, {"h2", 4}}, 6);
  ASSERT_EQ(p.size(), 6u);
  const int local_rank[] = {0, 1, 2, 3, 0, 1};
  const int local_size[] = {4, 4, 4, 4, 2, 2};
  const int cross_rank[] = {0, 0, 0, 0, 1, 1};
  const int cross_size[] = {2, 2, 1, 1, 2, 2};
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(p[r].rank, r);
    EXPECT_EQ(p[r].host, r < 4 ? "h1" : "h2") << r;
    EXPECT_EQ(p[r].local_rank, local_rank[r]) << r;
    EXPECT_EQ(p[r].local_size, local_size[r]) << r;
    EXPECT_EQ(p[r].cross_rank, cross_rank[r]) << r;
    EXPECT_EQ(p[r].cross_size, cross_size[r]) << r;
  }
}

TEST(PlaceRanks, UnusedHostsAreLeftOut) {
  std::vector<RankPlacement> p = place_ranks({{"a", 2}, {"b", 2}, {"c", 2}}, 3);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[2].host, "b");
  EXPECT_EQ(p[2].local_size, 1);
  EXPECT_EQ(p[0].cross_size, 2);  // local rank 0 exists on a and b, not c
  EXPECT_EQ(p[1].cross_size, 1);
  EXPECT_EQ(p[2].cross_rank, 1);
}

TEST(PlaceRanks, OneHost) {
  std::vector<RankPlacement> p = place_ranks({{"localhost", 2}}, 2);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].local_rank, 1);
  EXPECT_EQ(p[1].local_size, 2);
  EXPECT_EQ(p[1].cross_rank, 0);
  EXPECT_EQ(p[1].cross_size, 1);
}

TEST(PlaceRanks, Errors) {
  EXPECT_EQ(usage_message([] {
              place_ranks({{"h1", 2}, {"h2", 2}}, 5);
            }),
            "-np 5 is more than the 4 slots of the hosts (h1:2,h2:2)");
  EXPECT_EQ(usage_message([] { place_ranks({{"h1", 2}}, 0); }), "-np must be at least 1, got 0");
  EXPECT_EQ(usage_message([] { place_ranks({}, 1); }), "no hosts to place ranks on");
}

}  // namespace
}  // namespace hvdrun
