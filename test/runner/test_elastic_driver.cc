// The elastic driver's decisions with a simulated clock and simulated
// exits: the rounds it publishes in a FileStore, the workers it starts and
// stops, blacklisting and cooldown, and when it gives up. Also the pieces:
// discovery output, host health, run_command.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runner/elastic/elastic_driver.h"
#include "store/elastic_round.h"
#include "store/file_store.h"
#include "usage_message.h"

namespace hvdrun {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

const int kKilled = SIGKILL;  // waitpid status: killed by SIGKILL
const int kExit1 = 1 << 8;    // waitpid status: exited with code 1
const int kExit0 = 0;

class ElasticDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/hvdrun_elastic_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    store_ = std::make_unique<hvd::FileStore>(dir_ + "/store");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A driver whose hosts come from a file the test rewrites (the script
  // runs at most once a simulated second).
  void start(ElasticConfig config, const std::string& hosts) {
    write_hosts(hosts);
    config.timeout = seconds(10);
    driver_ = std::make_unique<ElasticDriver>(
        config, *store_, HostDiscovery::script("cat " + dir_ + "/hosts", 1),
        [this](long long id, const std::vector<RankPlacement>& places, std::size_t rank) {
          ChildSpec spec;
          spec.argv = {"worker", std::to_string(id)};
          spec.env["RANK"] = std::to_string(places[rank].rank);
          spec.env["HOST"] = places[rank].host;
          return spec;
        },
        log_);
  }
  void write_hosts(const std::string& hosts) { std::ofstream(dir_ + "/hosts") << hosts; }
  // What the workers' init() records in the store.
  void join(long long round, std::initializer_list<long long> workers) {
    for (long long w : workers) hvd::elastic::record_joined(*store_, w, round);
  }
  // Polls at `t` seconds of the simulated clock.
  GroupOrders poll(double t) { return driver_->poll(at(t)); }
  bool ended(std::size_t worker, int status, double t) {
    return driver_->on_exit(worker, status, at(t));
  }
  Clock::time_point at(double t) const {
    return t0_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(t));
  }
  // Round `n` as "worker@host ..." in rank order.
  std::string round(long long n) {
    std::string text;
    for (const auto& m :
         hvd::elastic::read_round(*store_, n, std::chrono::milliseconds(1)).members) {
      text += (text.empty() ? "" : " ") + std::to_string(m.worker) + "@" + m.host;
    }
    return text;
  }
  static std::string started(const GroupOrders& orders) {
    std::string text;
    for (const ChildSpec& s : orders.start) {
      text +=
          (text.empty() ? "" : " ") + s.argv[1] + "@" + s.env.at("HOST") + "#" + s.env.at("RANK");
    }
    return text;
  }

  std::string dir_;
  std::unique_ptr<hvd::FileStore> store_;
  std::ostringstream log_;
  std::unique_ptr<ElasticDriver> driver_;
  Clock::time_point t0_ = Clock::now();
};

ElasticConfig config(int np, int min_np, int max_np) {
  ElasticConfig c;
  c.num_proc = np;
  c.min_np = min_np;
  c.max_np = max_np;
  return c;
}

TEST_F(ElasticDriverTest, FirstRoundFillsHostByHostUpToMaxNp) {
  start(config(3, 2, 3), "a:2\nb:2\n");
  GroupOrders orders = poll(0);
  EXPECT_EQ(started(orders), "0@a#0 1@a#1 2@b#2");
  EXPECT_TRUE(orders.more_to_come);
  EXPECT_EQ(driver_->round(), 1);
  EXPECT_EQ(round(1), "0@a 1@a 2@b");
  EXPECT_EQ(hvd::elastic::latest_round(*store_), 1);
  EXPECT_TRUE(poll(0.5).start.empty()) << "nothing changed";
  EXPECT_EQ(driver_->round(), 1);
}

TEST_F(ElasticDriverTest, WaitsForNpSlotsThenFails) {
  start(config(3, 1, 3), "a:2\n");
  GroupOrders orders = poll(0);
  EXPECT_TRUE(orders.start.empty());
  EXPECT_TRUE(orders.more_to_come);
  EXPECT_EQ(orders.failure, "");
  write_hosts("a:2\nb:1\n");
  EXPECT_EQ(started(poll(1)), "0@a#0 1@a#1 2@b#2") << log_.str();

  start(config(3, 1, 3), "a:2\n");
  EXPECT_EQ(poll(0).failure, "");
  EXPECT_EQ(poll(10).failure,
            "elastic: only 2 slot(s) available, fewer than -np 3, for 10 s (--elastic-timeout)");
}

TEST_F(ElasticDriverTest, AFailedRankLeavesTheJobAndItsSlot) {
  start(config(3, 2, 3), "a:3\n");
  poll(0);
  EXPECT_TRUE(ended(1, kKilled, 1));
  GroupOrders orders = poll(1.1);
  EXPECT_EQ(started(orders), "") << "the failed slot is not refilled";
  EXPECT_EQ(driver_->round(), 2);
  EXPECT_EQ(round(2), "0@a 2@a");
  EXPECT_NE(log_.str().find("rank 1 (worker 1) on a was killed by signal 9"), std::string::npos)
      << log_.str();
}

TEST_F(ElasticDriverTest, SurvivorsComeFirstSoRankZeroHasTheState) {
  ElasticConfig c = config(2, 1, 2);
  c.cooldown_range = std::make_pair(1, 1);
  start(c, "a:1\nb:1\n");
  poll(0);
  EXPECT_EQ(round(1), "0@a 1@b");
  ended(0, kExit1, 1);
  poll(1);
  EXPECT_EQ(round(2), "1@b");
  // a is forgiven after its cooldown (1 s): a new rank there, after the survivor.
  GroupOrders orders = poll(2.5);
  EXPECT_EQ(started(orders), "2@a#1");
  EXPECT_EQ(round(3), "1@b 2@a");
}

TEST_F(ElasticDriverTest, ASecondFailureBlacklistsTheHost) {
  start(config(4, 1, 4), "a:3\nb:1\n");
  poll(0);
  ended(0, kKilled, 1);
  poll(1);
  EXPECT_EQ(round(2), "1@a 2@a 3@b");
  ended(1, kExit1, 2);
  GroupOrders orders = poll(2);
  EXPECT_EQ(orders.stop, std::vector<std::size_t>{2}) << "a's last rank is stopped";
  EXPECT_EQ(round(3), "3@b");
  EXPECT_TRUE(ended(2, SIGTERM, 3)) << "a stopped rank's exit is expected";
  EXPECT_TRUE(poll(100).start.empty()) << "without a cooldown range, a stays out";
  EXPECT_NE(log_.str().find("host a is blacklisted"), std::string::npos) << log_.str();
}

TEST_F(ElasticDriverTest, OnlyRanksThatJoinedHoldTheState) {
  start(config(2, 1, 2), "a:2\nb:1\n");
  poll(0);
  join(1, {0, 1});
  ended(0, kKilled, 0);
  poll(0);
  EXPECT_EQ(round(2), "1@a 2@b");
  ended(1, kKilled, 0);
  // Worker 2 never joined a round: it has nothing to hand on.
  EXPECT_EQ(poll(0).failure, "elastic: no rank of the job is left to hand its state to new ranks");
}

TEST_F(ElasticDriverTest, RanksJoiningAtDifferentTimesKeepTheirRound) {
  start(config(3, 2, 3), "a:3\n");
  poll(0);
  join(1, {0, 2});  // worker 1 has not joined yet: only 0 and 2 hold the state
  EXPECT_TRUE(poll(0.5).start.empty());
  EXPECT_EQ(driver_->round(), 1) << "the same members, nothing to change: " << log_.str();
  ended(1, kKilled, 1);
  poll(1);
  EXPECT_EQ(round(2), "0@a 2@a");
}

TEST_F(ElasticDriverTest, CooldownBringsTheHostBack) {
  ElasticConfig c = config(3, 1, 3);
  c.cooldown_range = std::make_pair(2, 5);
  start(c, "a:2\nb:1\n");
  poll(0);
  ended(0, kKilled, 0);
  poll(0);
  ended(1, kKilled, 0);
  GroupOrders orders = poll(0);
  EXPECT_EQ(round(2), "1@a 2@b");
  EXPECT_EQ(round(3), "2@b");
  // Between MIN and MAX seconds after the last failure, a is whole again.
  EXPECT_TRUE(poll(1.9).start.empty());
  orders = poll(5.1);
  EXPECT_EQ(started(orders), "3@a#1 4@a#2");
  EXPECT_EQ(round(4), "2@b 3@a 4@a");
}

TEST_F(ElasticDriverTest, ARankAsksForANewRound) {
  start(config(2, 1, 2), "a:2\n");
  poll(0);
  hvd::elastic::request_new_round(*store_, 1);
  GroupOrders orders = poll(0.2);
  EXPECT_TRUE(orders.start.empty());
  EXPECT_EQ(round(2), "0@a 1@a");
  hvd::elastic::request_new_round(*store_, 1);  // late, for an old round: ignored
  poll(0.4);
  EXPECT_EQ(driver_->round(), 2);
}

TEST_F(ElasticDriverTest, ResetLimit) {
  ElasticConfig c = config(3, 1, 3);
  c.reset_limit = 1;
  start(c, "a:2\nb:1\n");
  poll(0);
  ended(2, kKilled, 0);
  EXPECT_EQ(poll(0).failure, "");
  EXPECT_EQ(driver_->round(), 2);
  ended(1, kKilled, 0);
  EXPECT_EQ(poll(0).failure,
            "elastic: the membership changed 1 times, the most --reset-limit allows, and must "
            "change again (rank 1 (worker 1) on a was killed by signal 9 (Killed))");
}

TEST_F(ElasticDriverTest, DiscoveredHostsGrowAndShrinkTheJob) {
  start(config(2, 1, 3), "a:2\n");
  poll(0);
  write_hosts("a:2\nb:4\n");
  EXPECT_EQ(started(poll(0.5)), "") << "the script runs once a second";
  EXPECT_EQ(started(poll(1)), "2@b#2") << "up to --max-np";
  EXPECT_EQ(round(2), "0@a 1@a 2@b");
  write_hosts("a:2\n");
  GroupOrders orders = poll(2);
  EXPECT_EQ(orders.stop, std::vector<std::size_t>{2});
  EXPECT_EQ(round(3), "0@a 1@a");
}

TEST_F(ElasticDriverTest, BelowMinNpWaitsThenFails) {
  start(config(2, 2, 2), "a:2\n");
  poll(0);
  ended(1, kKilled, 1);
  GroupOrders orders = poll(1);
  EXPECT_EQ(orders.failure, "");
  EXPECT_TRUE(orders.more_to_come);
  EXPECT_EQ(driver_->round(), 1);
  EXPECT_EQ(poll(10.9).failure, "");
  EXPECT_EQ(poll(11).failure,
            "elastic: only 1 slot(s) available, fewer than --min-np 2, for 10 s "
            "(--elastic-timeout)");
  EXPECT_EQ(poll(12).failure, poll(11).failure) << "it stays failed";
}

TEST_F(ElasticDriverTest, BelowMinNpRecoversWhenAHostComes) {
  start(config(2, 2, 2), "a:2\n");
  poll(0);
  ended(1, kKilled, 1);
  poll(1);
  write_hosts("a:2\nb:1\n");
  EXPECT_EQ(started(poll(5)), "2@b#1");
  EXPECT_EQ(round(2), "0@a 2@b");
}

TEST_F(ElasticDriverTest, TheFirstSuccessFinishesTheJob) {
  start(config(3, 1, 3), "a:3\n");
  poll(0);
  join(1, {0, 1});
  EXPECT_TRUE(ended(0, kExit0, 1));
  GroupOrders orders = poll(1);
  EXPECT_FALSE(orders.more_to_come);
  EXPECT_EQ(orders.stop, std::vector<std::size_t>{2}) << "worker 2 never joined round 1";
  EXPECT_TRUE(ended(1, kExit0, 2));
  EXPECT_TRUE(ended(2, kExit1, 2)) << "stopped: expected";
  EXPECT_EQ(driver_->round(), 1);
}

TEST_F(ElasticDriverTest, AFailureAfterTheJobFinishedCounts) {
  start(config(2, 1, 2), "a:2\n");
  poll(0);
  join(1, {0, 1});
  EXPECT_TRUE(ended(0, kExit0, 1));
  EXPECT_FALSE(ended(1, kExit1, 1));
}

TEST_F(ElasticDriverTest, ABrokenDiscoveryScriptFailsAtOnce) {
  driver_ = std::make_unique<ElasticDriver>(
      config(2, 1, 2), *store_, HostDiscovery::script("exit 3", 1),
      [](long long, const std::vector<RankPlacement>&, std::size_t) { return ChildSpec{}; }, log_);
  EXPECT_EQ(poll(0).failure, "elastic: --host-discovery-script 'exit 3' exited with code 3");
}

TEST(ElasticDiscovery, ParsesHostsAndSlots) {
  std::vector<Host> hosts = parse_discovered_hosts("h1:4\n\n  h2  \nh3:1\n", 2);
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].name, "h1");
  EXPECT_EQ(hosts[0].slots, 4);
  EXPECT_EQ(hosts[1].name, "h2");
  EXPECT_EQ(hosts[1].slots, 2) << "--slots-per-host";
  EXPECT_EQ(hosts[2].slots, 1);
  EXPECT_TRUE(parse_discovered_hosts("\n", std::nullopt).empty());
  EXPECT_EQ(usage_message([] { parse_discovered_hosts("h1\n", std::nullopt); }),
            "the discovery script printed 'h1' without ':slots'; print host:slots or give "
            "--slots-per-host");
  EXPECT_EQ(usage_message([] { parse_discovered_hosts("h1:2\nh1:3\n", 1); }),
            "the discovery script printed host h1 twice");
  EXPECT_NE(usage_message([] { parse_discovered_hosts("h1:x\n", 1); }).find("'h1:x'"),
            std::string::npos);
}

TEST(ElasticDiscovery, ALaterFailureKeepsTheLastHosts) {
  char pattern[] = "/tmp/hvdrun_discovery_XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string file = std::string(pattern) + "/hosts";
  std::ofstream(file) << "a:2\n";
  HostDiscovery discovery = HostDiscovery::script("cat " + file, std::nullopt);
  const Clock::time_point t0 = Clock::now();
  std::string warning;
  EXPECT_EQ(discovery.hosts(t0, &warning).size(), 1u);
  fs::remove(file);
  EXPECT_EQ(discovery.hosts(t0 + seconds(1), &warning).size(), 1u);
  EXPECT_NE(warning.find("exited with code 1; keeping the hosts it printed last"),
            std::string::npos)
      << warning;
  fs::remove_all(pattern);
}

TEST(ElasticDiscovery, RunCommandKillsWhatTakesTooLong) {
  const auto start = Clock::now();
  auto [status, output] = run_command("echo started; sleep 30", std::chrono::milliseconds(300));
  EXPECT_EQ(status, -1);
  EXPECT_EQ(output, "started\n");
  EXPECT_LT(Clock::now() - start, seconds(10));
  auto [ok, text] = run_command("printf 'h:1'", seconds(10));
  EXPECT_TRUE(WIFEXITED(ok) && WEXITSTATUS(ok) == 0);
  EXPECT_EQ(text, "h:1");
}

TEST(HostHealth, OneFailureCostsASlotTwoBlacklist) {
  HostHealth health(std::nullopt);
  const Clock::time_point t = Clock::now();
  EXPECT_EQ(health.usable_slots("a", 4, t), 4);
  EXPECT_FALSE(health.record_failure("a", t));
  EXPECT_EQ(health.usable_slots("a", 4, t), 3);
  EXPECT_FALSE(health.blacklisted("a", t));
  EXPECT_TRUE(health.record_failure("a", t));
  EXPECT_TRUE(health.blacklisted("a", t));
  EXPECT_EQ(health.usable_slots("a", 4, t + std::chrono::hours(1000)), 0) << "for good";
  EXPECT_EQ(health.usable_slots("b", 4, t), 4);
}

TEST(HostHealth, CooldownGrowsWithinTheRange) {
  HostHealth health(std::make_pair(10, 100), 42);
  const Clock::time_point t = Clock::now();
  health.record_failure("a", t);
  // k = 1: 10 * 2 + U(0, 1) * 10 seconds, within [10, 100].
  const auto first = health.forgiven_at("a") - t;
  EXPECT_GE(first, seconds(20));
  EXPECT_LE(first, seconds(30));
  health.record_failure("a", t);
  const auto second = health.forgiven_at("a") - t;  // k = 2: 40..50 s
  EXPECT_GE(second, seconds(40));
  EXPECT_LE(second, seconds(50));
  EXPECT_EQ(health.usable_slots("a", 4, t + seconds(39)), 0);
  EXPECT_EQ(health.usable_slots("a", 4, t + seconds(51)), 4) << "forgiven";
  for (int i = 0; i < 5; ++i) health.record_failure("a", t + seconds(60));
  EXPECT_LE(health.forgiven_at("a") - (t + seconds(60)), seconds(100)) << "capped at MAX";
}

}  // namespace
}  // namespace hvdrun
