// The Gloo transport on its own: GlooContext (environment, rendezvous,
// topology), GlooStoreAdapter, GlooController and GlooBackend collectives for
// every dtype and op, and fault handling: a rank that dies or stops makes the
// others' next collective throw an hvd::Error within the timeout.
//
// Runs with any number of ranks, each started with the environment hvdrun
// sets (HOROVODCPP_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE, _CROSS_RANK,
// _CROSS_SIZE and HOROVODCPP_GLOO_FILE_STORE or _GLOO_RENDEZVOUS_ADDR/_PORT),
// or alone without any of it. Its own main sets the Gloo context up. The
// fault tests start sub-jobs of this binary (--gloo-fault-child). The checks
// every transport shares are in backend_conformance.h.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../harness/backend_conformance.h"
#include "../harness/fault_subjob.h"
#include "backend/gloo/gloo_backend.h"
#include "backend/gloo/gloo_context.h"
#include "backend/gloo/gloo_controller.h"
#include "backend/gloo/gloo_store_adapter.h"
#include "horovodcpp/errors.h"
#include "horovodcpp/types.h"
#include "store/file_store.h"

namespace hvd {
namespace {

using namespace conformance;

std::shared_ptr<GlooContext> g_context;  // created and released by main()
std::string g_self;                      // this binary, for the fault sub-jobs

const Topology& topology() { return g_context->topology(); }

// ---- Environment (each rank on its own: no communication)

constexpr const char* kSettingNames[] = {"RANK",
                                         "SIZE",
                                         "LOCAL_RANK",
                                         "LOCAL_SIZE",
                                         "CROSS_RANK",
                                         "CROSS_SIZE",
                                         "GLOO_RENDEZVOUS_ADDR",
                                         "GLOO_RENDEZVOUS_PORT",
                                         "GLOO_FILE_STORE",
                                         "GLOO_IFACE",
                                         "HOSTNAME",
                                         "GLOO_TIMEOUT_SECONDS",
                                         "PEER_TIMEOUT_SECONDS"};

// Clears every Gloo setting (both prefixes) and restores them on exit.
class ScopedCleanEnvironment {
 public:
  ScopedCleanEnvironment() {
    for (const char* name : kSettingNames) {
      for (const char* prefix : {"HOROVODCPP_", "HOROVOD_"}) {
        const std::string key = std::string(prefix) + name;
        if (const char* value = std::getenv(key.c_str())) saved_[key] = value;
        unsetenv(key.c_str());
      }
    }
  }
  ~ScopedCleanEnvironment() {
    for (const char* name : kSettingNames) {
      for (const char* prefix : {"HOROVODCPP_", "HOROVOD_"}) {
        unsetenv((std::string(prefix) + name).c_str());
      }
    }
    for (const auto& [key, value] : saved_) setenv(key.c_str(), value.c_str(), 1);
  }
  void set(const std::string& key, const std::string& value) {
    setenv(key.c_str(), value.c_str(), 1);
  }
  // Sets HOROVODCPP_RANK ... _CROSS_SIZE for one host.
  void set_job(int rank, int size) {
    set("HOROVODCPP_RANK", std::to_string(rank));
    set("HOROVODCPP_SIZE", std::to_string(size));
    set("HOROVODCPP_LOCAL_RANK", std::to_string(rank));
    set("HOROVODCPP_LOCAL_SIZE", std::to_string(size));
    set("HOROVODCPP_CROSS_RANK", "0");
    set("HOROVODCPP_CROSS_SIZE", "1");
  }

 private:
  std::map<std::string, std::string> saved_;
};

std::vector<std::string> g_temp_directories;  // removed by main()

std::string temp_directory() {
  char pattern[] = "/tmp/hvd_gloo_test_XXXXXX";
  const char* dir = mkdtemp(pattern);
  if (dir == nullptr) {
    ADD_FAILURE() << "mkdtemp failed: " << std::strerror(errno);
    return "/tmp/hvd_gloo_test_unavailable";
  }
  g_temp_directories.push_back(dir);
  return dir;
}

template <typename Fn>
std::string invalid_argument_message(Fn&& fn) {
  try {
    fn();
  } catch (const InvalidArgument& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InvalidArgument, got: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected InvalidArgument, nothing was thrown";
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GlooEnvironmentTest, NothingSetIsASingleRankJob) {
  ScopedCleanEnvironment env;
  const GlooOptions options = GlooContext::options_from_environment();
  EXPECT_EQ(options.topology.rank, 0);
  EXPECT_EQ(options.topology.size, 1);
  EXPECT_EQ(options.topology.local_size, 1);
  EXPECT_EQ(options.topology.cross_size, 1);
  EXPECT_EQ(options.store, nullptr);
  EXPECT_EQ(options.network.hostname, "127.0.0.1");
  EXPECT_EQ(options.timeout, std::chrono::seconds(30));
}

TEST(GlooEnvironmentTest, PartialJobNamesWhatIsMissing) {
  ScopedCleanEnvironment env;
  env.set("HOROVODCPP_RANK", "1");
  env.set("HOROVODCPP_SIZE", "2");
  const std::string message =
      invalid_argument_message([] { GlooContext::options_from_environment(); });
  EXPECT_TRUE(contains(message, "HOROVODCPP_LOCAL_RANK")) << message;
  EXPECT_TRUE(contains(message, "HOROVODCPP_CROSS_SIZE")) << message;
  EXPECT_FALSE(contains(message, "HOROVODCPP_SIZE,")) << message;
}

TEST(GlooEnvironmentTest, MultiRankJobNeedsAStore) {
  ScopedCleanEnvironment env;
  env.set_job(1, 2);
  const std::string message =
      invalid_argument_message([] { GlooContext::options_from_environment(); });
  EXPECT_TRUE(contains(message, "HOROVODCPP_GLOO_FILE_STORE")) << message;
  EXPECT_TRUE(contains(message, "HOROVODCPP_GLOO_RENDEZVOUS_ADDR")) << message;
}

TEST(GlooEnvironmentTest, InconsistentValuesRejected) {
  ScopedCleanEnvironment env;
  env.set_job(2, 2);  // rank == size
  env.set("HOROVODCPP_GLOO_FILE_STORE", temp_directory());
  EXPECT_TRUE(contains(invalid_argument_message([] { GlooContext::options_from_environment(); }),
                       "HOROVODCPP_RANK=2"));
  env.set_job(0, 2);
  env.set("HOROVODCPP_GLOO_TIMEOUT_SECONDS", "0");
  invalid_argument_message([] { GlooContext::options_from_environment(); });
  env.set("HOROVODCPP_GLOO_TIMEOUT_SECONDS", "soon");
  invalid_argument_message([] { GlooContext::options_from_environment(); });
  env.set("HOROVODCPP_GLOO_TIMEOUT_SECONDS", "5");
  env.set("HOROVODCPP_GLOO_RENDEZVOUS_ADDR", "127.0.0.1");  // no port
  EXPECT_TRUE(contains(invalid_argument_message([] { GlooContext::options_from_environment(); }),
                       "HOROVODCPP_GLOO_RENDEZVOUS_PORT"));
}

TEST(GlooEnvironmentTest, HorovodAliasesAndNetworkChoice) {
  ScopedCleanEnvironment env;
  env.set("HOROVOD_RANK", "3");
  env.set("HOROVOD_SIZE", "4");
  env.set("HOROVOD_LOCAL_RANK", "1");
  env.set("HOROVOD_LOCAL_SIZE", "2");
  env.set("HOROVOD_CROSS_RANK", "1");
  env.set("HOROVOD_CROSS_SIZE", "2");
  env.set("HOROVOD_GLOO_FILE_STORE", temp_directory());
  env.set("HOROVOD_GLOO_TIMEOUT_SECONDS", "2.5");
  GlooOptions options = GlooContext::options_from_environment();
  EXPECT_EQ(options.topology.rank, 3);
  EXPECT_EQ(options.topology.size, 4);
  EXPECT_EQ(options.topology.local_rank, 1);
  EXPECT_EQ(options.topology.local_size, 2);
  EXPECT_EQ(options.topology.cross_rank, 1);
  EXPECT_EQ(options.topology.cross_size, 2);
  EXPECT_NE(options.store, nullptr);
  EXPECT_EQ(options.timeout, std::chrono::milliseconds(2500));
  // Ranks on several hosts: this machine's hostname, not loopback.
  EXPECT_TRUE(options.network.iface.empty());
  EXPECT_FALSE(options.network.hostname.empty());
  EXPECT_NE(options.network.hostname, "127.0.0.1");

  env.set("HOROVODCPP_HOSTNAME", "node7");
  options = GlooContext::options_from_environment();
  EXPECT_EQ(options.network.hostname, "node7");
  env.set("HOROVODCPP_GLOO_IFACE", "lo");
  options = GlooContext::options_from_environment();
  EXPECT_EQ(options.network.iface, "lo");
}

// ---- Store adapter and rendezvous (each rank on its own)

TEST(GlooStoreAdapterTest, PrefixesKeysAndWaits) {
  auto store = std::make_shared<FileStore>(temp_directory());
  GlooStoreAdapter adapter(store, "job/7/", std::chrono::milliseconds(5000));
  adapter.set("key", std::vector<char>{'a', '\0', 'b'});
  EXPECT_EQ(store->get("job/7/key", std::chrono::milliseconds(0)), std::string("a\0b", 3));
  EXPECT_EQ(adapter.get("key"), (std::vector<char>{'a', '\0', 'b'}));
  adapter.wait({"key"});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(adapter.wait({"key", "missing"}, std::chrono::milliseconds(200)), Timeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(GlooStoreAdapterTest, EveryInitGetsAFreshPrefix) {
  const std::string first = GlooStoreAdapter::next_init_prefix();
  const std::string second = GlooStoreAdapter::next_init_prefix();
  EXPECT_NE(first, second);
  EXPECT_EQ(first.rfind("horovodcpp/", 0), 0u) << first;
}

TEST(GlooContextTest, SingleRankNeedsNoStore) {
  GlooOptions options;  // rank 0 of 1, no store, 127.0.0.1
  options.network.hostname = "127.0.0.1";
  std::shared_ptr<GlooContext> context = GlooContext::create(options);
  EXPECT_EQ(context->topology().size, 1);
  GlooBackend backend(context);
  std::int64_t value = 21;
  backend.allreduce(&value, 1, DataType::kInt64, ReduceOp::kSum);
  EXPECT_EQ(value, 21);
  GlooController controller(context);
  EXPECT_EQ(controller.gather_to_root("x"), std::vector<std::string>{"x"});
  EXPECT_EQ(controller.broadcast_from_root("y"), "y");
}

TEST(GlooContextTest, MissingRankFailsRendezvousInTime) {
  GlooOptions options;
  options.topology.size = 2;  // rank 1 never comes
  options.topology.local_size = 2;
  options.store = std::make_shared<FileStore>(temp_directory());
  options.network.hostname = "127.0.0.1";
  options.timeout = std::chrono::milliseconds(500);
  const auto start = std::chrono::steady_clock::now();
  try {
    GlooContext::create(options);
    ADD_FAILURE() << "expected the rendezvous to fail";
  } catch (const BackendError& e) {
    EXPECT_TRUE(contains(e.what(), "rendezvous")) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// ---- Topology and transport registry

std::optional<int> job_setting(const char* name) {
  for (const char* prefix : {"HOROVODCPP_", "HOROVOD_"}) {
    if (const char* value = std::getenv((std::string(prefix) + name).c_str())) {
      return std::atoi(value);
    }
  }
  return std::nullopt;
}

TEST(GlooContextTest, TopologyMatchesEnvironment) {
  const Topology& t = topology();
  EXPECT_EQ(t.rank, job_setting("RANK").value_or(0));
  EXPECT_EQ(t.size, job_setting("SIZE").value_or(1));
  EXPECT_EQ(t.local_rank, job_setting("LOCAL_RANK").value_or(0));
  EXPECT_EQ(t.local_size, job_setting("LOCAL_SIZE").value_or(1));
  EXPECT_EQ(t.cross_rank, job_setting("CROSS_RANK").value_or(0));
  EXPECT_EQ(t.cross_size, job_setting("CROSS_SIZE").value_or(1));
  check_single_host(t);
}

TEST(GlooContextTest, SecondContextWorks) {
  // As after shutdown and init: fresh keys in the same store.
  std::shared_ptr<GlooContext> other = GlooContext::create();
  EXPECT_EQ(other->topology().rank, topology().rank);
  EXPECT_NE(other->data(), g_context->data());
  EXPECT_NE(other->control(), other->data());
  GlooBackend backend(other);
  std::int32_t value = 1;
  backend.allreduce(&value, 1, DataType::kInt32, ReduceOp::kSum);
  EXPECT_EQ(value, topology().size);
}

TEST(TransportTest, RegistryHasGloo) { check_registry_has("gloo", topology()); }

TEST(TransportTest, UnknownNameListsAvailable) { check_unknown_transport_lists("gloo"); }

// ---- Controller

TEST(GlooControllerTest, GatherToRoot) {
  GlooController controller(g_context);
  check_gather_to_root(controller);
}

TEST(GlooControllerTest, GatherAllEmpty) {
  GlooController controller(g_context);
  check_gather_all_empty(controller);
}

TEST(GlooControllerTest, GatherOneLargeMessage) {
  GlooController controller(g_context);
  // Only the last rank has much to say.
  const bool last = topology().rank == topology().size - 1;
  const std::string big(300000, '\x5a');
  const std::vector<std::string> gathered = controller.gather_to_root(last ? big : "r");
  if (topology().rank != 0) return;
  ASSERT_EQ(gathered.size(), static_cast<std::size_t>(topology().size));
  for (int r = 0; r + 1 < topology().size; ++r) EXPECT_EQ(gathered[r], "r");
  EXPECT_EQ(gathered.back(), big);
}

TEST(GlooControllerTest, BroadcastFromRoot) {
  GlooController controller(g_context);
  check_broadcast_from_root(controller);
}

// ---- Backend: allreduce

using AllreduceParam = DtypeOpParam;

class AllreduceTest : public ::testing::TestWithParam<AllreduceParam> {};

TEST_P(AllreduceTest, MatchesScalarReference) {
  const auto [dtype, op] = GetParam();
  GlooBackend backend(g_context);
  // 70000 elements span several of Gloo's 1 MiB segments for wide dtypes.
  check_allreduce_matches_reference(backend, topology(), dtype, op, {1, 7, 50, 70000});
}

TEST_P(AllreduceTest, ZeroElements) {
  const auto [dtype, op] = GetParam();
  GlooBackend backend(g_context);
  check_allreduce_zero_elements(backend, topology(), dtype, op);
}

TEST_P(AllreduceTest, ReducescatterShares) {
  const auto [dtype, op] = GetParam();
  GlooBackend backend(g_context);
  check_reducescatter_shares(backend, topology(), dtype, op, 70000);
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndOps, AllreduceTest,
                         ::testing::Combine(::testing::ValuesIn(kAllDtypes),
                                            ::testing::ValuesIn(kBackendOps)),
                         dtype_op_param_name);

TEST(GlooBackendTest, IntegersWrapAround) {
  GlooBackend backend(g_context);
  // 100 per rank overflows int8 from 2 ranks on: the sum wraps modulo 256.
  std::int8_t value = 100;
  backend.allreduce(&value, 1, DataType::kInt8, ReduceOp::kSum);
  EXPECT_EQ(value, static_cast<std::int8_t>(static_cast<std::uint8_t>(100 * topology().size)));
}

// ---- Backend: per-dtype collectives

class BackendDtypeTest : public ::testing::TestWithParam<DataType> {};

TEST_P(BackendDtypeTest, AverageRejected) {
  GlooBackend backend(g_context);
  check_average_rejected(backend, GetParam());
}

TEST_P(BackendDtypeTest, BroadcastFromEveryRoot) {
  GlooBackend backend(g_context);
  check_broadcast_from_every_root(backend, topology(), GetParam(), {0, 1, 23, 70000});
}

TEST_P(BackendDtypeTest, AllgathervUnevenCounts) {
  GlooBackend backend(g_context);
  std::vector<std::vector<std::size_t>> count_sets = allgatherv_count_sets(topology().size);
  std::vector<std::size_t>& several_segments = count_sets.emplace_back();  // of 1 MiB
  for (int r = 0; r < topology().size; ++r) several_segments.push_back(40000 + 1000 * r);
  check_allgatherv_uneven_counts(backend, topology(), GetParam(), count_sets);
}

TEST_P(BackendDtypeTest, InvalidArgumentsRejected) {
  GlooBackend backend(g_context);
  check_invalid_arguments_rejected(backend, topology(), GetParam());
  check_alltoall_reducescatter_arguments_rejected(backend, topology(), GetParam());
}

TEST_P(BackendDtypeTest, AlltoallvUnevenCounts) {
  GlooBackend backend(g_context);
  check_alltoallv_count_sets(backend, topology(), GetParam());
}

TEST_P(BackendDtypeTest, SendrecvPairs) {
  GlooBackend backend(g_context);
  check_sendrecv_pairs(backend, topology(), GetParam());
  check_sendrecv_arguments_rejected(backend, topology(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, BackendDtypeTest, ::testing::ValuesIn(kAllDtypes),
                         dtype_param_name);

// Gloo's two allreduce lanes at once (the fusion pipeline's chunks): each
// lane's calls pair up across ranks by their own tags, whichever runs first.
TEST(GlooBackendTest, TwoLanesAllreduceAtOnce) {
  GlooBackend backend(g_context);
  ASSERT_EQ(backend.capabilities().allreduce_lanes, 2);
  const int size = topology().size, rank = topology().rank;
  constexpr std::size_t kCount = 300000;  // several of Gloo's 1 MiB segments
  for (int round = 0; round < 5; ++round) {
    std::vector<float> first(kCount, static_cast<float>(rank + 1));
    std::vector<float> second(kCount + round, static_cast<float>(2 * rank + round));
    std::thread other([&] {
      backend.allreduce_in_lane(second.data(), second.size(), DataType::kFloat32, ReduceOp::kSum,
                                1);
    });
    backend.allreduce_in_lane(first.data(), first.size(), DataType::kFloat32, ReduceOp::kSum, 0);
    other.join();
    const float first_sum = static_cast<float>(size * (size + 1) / 2);
    const float second_sum = static_cast<float>(size * (size - 1) + size * round);
    for (std::size_t i = 0; i < kCount; i += 997) ASSERT_EQ(first[i], first_sum) << i;
    for (std::size_t i = 0; i < second.size(); i += 997) ASSERT_EQ(second[i], second_sum) << i;
  }
  EXPECT_THROW(backend.allreduce_in_lane(nullptr, 0, DataType::kFloat32, ReduceOp::kSum, 2),
               InvalidArgument);
}

TEST(GlooBackendTest, NameAndCapabilities) {
  GlooBackend backend(g_context);
  check_name_and_capabilities(backend, "gloo");
}

// ---- Faults: every rank of this job runs its own 3-rank sub-job of this
// binary (--gloo-fault-child SCENARIO) in which the last rank dies or stops
// after a first collective. The survivors' next collective must throw a
// RankFailure naming it (in RankFailure::ranks() and in the message) within
// the timeout plus the roll call; the exit code says how it went.

constexpr int kFaultRanks = 3;
constexpr int kFaultTimeoutSeconds = 2;
// Exit codes of a survivor.
constexpr int kGotError = 0, kNoError = 3, kTooLate = 4, kWrongError = 5, kSetupFailed = 6,
              kNotNamed = 7;

int fault_child(const std::string& scenario) {
  std::shared_ptr<GlooContext> context;
  try {
    context = GlooContext::create();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[fault child] setup failed: %s\n", e.what());
    return kSetupFailed;
  }
  const int rank = context->topology().rank;
  GlooBackend backend(context);
  GlooController controller(context);
  std::int32_t value = 1;
  backend.allreduce(&value, 1, DataType::kInt32, ReduceOp::kSum);  // everybody is connected
  if (rank == context->topology().size - 1) {
    if (scenario.rfind("hang", 0) == 0) {
      std::this_thread::sleep_for(std::chrono::minutes(10));  // stopped; the parent kills it
    }
    raise(SIGKILL);  // dies without any goodbye
  }
  if (scenario.rfind("kill", 0) == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the victim is gone
  }
  const int victim = context->topology().size - 1;
  // The exit code for what a collective ended with.
  const auto outcome = [&](std::exception_ptr error, double seconds) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const Error& e) {
      const auto* failure = dynamic_cast<const RankFailure*>(&e);
      std::fprintf(stderr, "[fault child rank %d] %s after %.2f s: %s\n", rank,
                   failure ? "RankFailure" : "hvd::Error", seconds, e.what());
      if (failure == nullptr || failure->ranks() != std::vector<int>{victim} ||
          std::string(e.what()).find("rank " + std::to_string(victim) + " stopped answering") ==
              std::string::npos) {
        return kNotNamed;
      }
      return seconds < kFaultTimeoutSeconds + 5 ? kGotError : kTooLate;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[fault child rank %d] not an hvd::Error: %s\n", rank, e.what());
      return kWrongError;
    }
    std::fprintf(stderr, "[fault child rank %d] the collective succeeded\n", rank);
    return kNoError;
  };
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::exception_ptr error;
  if (scenario.find("lanes") != std::string::npos) {
    // Both allreduce lanes wait on the victim at once: each thread ends with
    // the same RankFailure, whichever gave up on the context.
    std::exception_ptr second_error;
    double second_seconds = 0;
    std::thread second([&] {
      std::vector<float> data(1000, 1.0f);
      try {
        backend.allreduce_in_lane(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum, 1);
      } catch (...) {
        second_error = std::current_exception();
      }
      second_seconds = seconds();
    });
    std::vector<float> data(1000, 1.0f);
    try {
      backend.allreduce_in_lane(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum, 0);
    } catch (...) {
      error = std::current_exception();
    }
    const double first_seconds = seconds();
    second.join();
    const int first = outcome(error, first_seconds);
    return first != kGotError ? first : outcome(second_error, second_seconds);
  }
  try {
    if (scenario.find("allreduce") != std::string::npos) {
      std::vector<float> data(1000, 1.0f);
      backend.allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
    } else if (scenario.find("gather") != std::string::npos) {
      controller.gather_to_root("request");
    } else {
      // From the victim: every survivor needs its data. (A broadcast from a
      // survivor may legitimately complete on ranks the victim does not feed.)
      std::vector<std::int64_t> data(10, rank);
      backend.broadcast(data.data(), data.size(), DataType::kInt64, victim);
    }
  } catch (...) {
    error = std::current_exception();
  }
  return outcome(error, seconds());
}

class FaultTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FaultTest, SurvivorsThrowWithinTimeout) {
  // The sub-jobs are the same whatever the job's size.
  if (topology().size != 1) GTEST_SKIP() << "run by the single-rank job";
  const std::string scenario = GetParam();
  const std::string store = temp_directory();
  std::vector<pid_t> pids;
  for (int r = 0; r < kFaultRanks; ++r) {
    pids.push_back(
        fault_subjob::spawn_rank(g_self, {"--gloo-fault-child", scenario}, r, kFaultRanks, store,
                                 {{"GLOO_TIMEOUT_SECONDS", std::to_string(kFaultTimeoutSeconds)}}));
  }
  for (pid_t pid : pids) ASSERT_GT(pid, 0) << "fork failed";
  // The survivors must be done well within the timeout plus set-up time.
  const auto status = fault_subjob::reap(pids, kFaultRanks - 1, std::chrono::seconds(40));
  for (int r = 0; r + 1 < kFaultRanks; ++r) {
    EXPECT_TRUE(fault_subjob::exited_with(
        status[r], kGotError,
        "(3: no error, 4: too late, 5: not an hvd::Error, 6: setup failed, 7: not a "
        "RankFailure naming the victim)"))
        << "survivor rank " << r << " (" << scenario << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, FaultTest,
                         ::testing::Values("kill_allreduce", "kill_gather", "kill_broadcast",
                                           "hang_allreduce", "hang_gather", "kill_lanes",
                                           "hang_lanes"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace hvd

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--gloo-fault-child") {
    return hvd::fault_child(argv[2]);
  }
  ::testing::InitGoogleTest(&argc, argv);
  char self[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  hvd::g_self = length > 0 ? std::string(self, static_cast<std::size_t>(length)) : argv[0];
  try {
    hvd::g_context = hvd::GlooContext::create();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cannot set up Gloo: %s\n", e.what());
    return 1;
  }
  const int rank = hvd::g_context->topology().rank;
  hvd::conformance::print_only_failures_unless_rank0(rank);
  int result = RUN_ALL_TESTS();
  // Every rank exits with the job's outcome, whichever rank failed.
  const int own_result = result;
  try {
    hvd::GlooBackend(hvd::g_context)
        .allreduce(&result, 1, hvd::DataType::kInt32, hvd::ReduceOp::kMax);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] cannot agree on the outcome: %s\n", rank, e.what());
    result = 1;
  }
  if (rank == 0 && result != own_result) {
    std::fprintf(stderr, "FAILED on another rank (see its [rank N] lines)\n");
  }
  hvd::g_context.reset();
  for (const std::string& dir : hvd::g_temp_directories) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  return result;
}
