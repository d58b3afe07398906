// ShmBackend around the transport's own backend (MPI under --mpi, Gloo
// under --gloo): the conformance checks of every transport, results equal
// to the inner backend's (bitwise for integers, bool and Min/Max; the same
// bits on every rank for every dtype and op), several slot sizes so that
// tensors span many chunks and every pipeline stage is reused, nothing left
// in /dev/shm, and peers that die or hang mid-collective.
//
// The fault tests run, on rank 0 only, 3-rank sub-jobs of this binary
// (--shm-fault-child SCENARIO) over Gloo with a file store.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "../harness/backend_conformance.h"
#include "../harness/fault_subjob.h"
#include "backend/shm/shm_backend.h"
#include "horovodcpp/errors.h"
#include "horovodcpp/types.h"
#include "settings/settings.h"

namespace hvd {
namespace {

using namespace conformance;

// The transport without the shm hook; its backend lives inside g_small.
std::string g_transport_name;
Transport g_transport;
// Slots of 4 KiB: 70000 elements span up to 137 chunks, each stage reused
// many times. g_default has the production geometry.
std::unique_ptr<ShmBackend> g_small;
std::unique_ptr<ShmBackend> g_default;
std::string g_self;

const Topology& topology() { return g_transport.controller->topology(); }
Backend& inner() { return g_small->inner(); }

ShmOptions small_slots() {
  ShmOptions options = ShmOptions::from_environment();
  options.slot_bytes = 4096;
  options.stages = 3;
  return options;
}

bool in_dev_shm(const std::string& name) { return std::filesystem::exists("/dev/shm" + name); }

// ---- Setup

TEST(ShmSetupTest, ActiveNamedAndUnlinked) {
  for (ShmBackend* backend : {g_small.get(), g_default.get()}) {
    EXPECT_TRUE(backend->active());
    check_name_and_capabilities(*backend, "shm");
    EXPECT_EQ(backend->segment_name().rfind("/hvdcpp-", 0), 0u) << backend->segment_name();
    EXPECT_FALSE(in_dev_shm(backend->segment_name())) << backend->segment_name();
  }
  // Every rank maps the segment rank 0 named.
  EXPECT_EQ(g_transport.controller->broadcast_from_root(g_small->segment_name()),
            g_small->segment_name());
}

TEST(ShmSetupTest, EveryBackendGetsItsOwnSegment) {
  ShmBackend other(create_transport(g_transport_name).backend, *g_transport.controller,
                   small_slots());
  EXPECT_TRUE(other.active());
  EXPECT_NE(other.segment_name(), g_small->segment_name());
  EXPECT_FALSE(in_dev_shm(other.segment_name())) << other.segment_name();
  std::int64_t value = topology().rank;
  other.allreduce(&value, 1, DataType::kInt64, ReduceOp::kMax);
  EXPECT_EQ(value, topology().size - 1);
}

// ---- The segment and the liveness check on their own (this process only)

std::string private_name(const char* what) {
  return "/hvdcpp-test-" + std::to_string(getpid()) + "-" + what;
}

TEST(ShmSegmentTest, CreateOpenUnlink) {
  const std::string name = private_name("segment");
  const shm::Geometry geometry{3, 4096, 2};
  shm::ShmSegment created = shm::ShmSegment::create(name, geometry);
  EXPECT_THROW(shm::ShmSegment::create(name, geometry), BackendError);  // exclusive
  shm::ShmSegment opened = shm::ShmSegment::open(name, geometry);
  EXPECT_THROW(shm::ShmSegment::open(name, {3, 4096, 3}), BackendError);  // other geometry
  shm::ShmSegment::unlink(name);
  shm::ShmSegment::unlink(name);  // already gone: fine
  EXPECT_FALSE(in_dev_shm(name));
  EXPECT_THROW(shm::ShmSegment::open(name, geometry), BackendError);
  // Both mappings still share the memory.
  created.slot(1, 2)[4095] = 42;
  EXPECT_EQ(opened.slot(1, 2)[4095], 42);
  opened.record(2).counters[shm::kDrained].value.store(7);
  EXPECT_EQ(created.record(2).counters[shm::kDrained].value.load(), 7u);
  EXPECT_EQ(created.header().failed_rank.load(), -1);
  EXPECT_EQ(opened.slot(1, 0) + 4096, opened.slot(1, 1));  // a stage is contiguous
  EXPECT_LE(
      created.slot(1, 2) + 4096,
      static_cast<unsigned char*>(static_cast<void*>(&created.header())) + geometry.total_bytes());
}

TEST(ShmSegmentTest, BadGeometryRejected) {
  EXPECT_THROW(shm::ShmSegment::create(private_name("bad"), {2, 100, 2}), InvalidArgument);
  EXPECT_FALSE(in_dev_shm(private_name("bad")));
}

TEST(ProcessAliveTest, SelfExitedZombieAndReusedPid) {
  const shm::ProcessId self = shm::this_process();
  EXPECT_EQ(self.pid, getpid());
  EXPECT_TRUE(shm::process_alive(self));
  shm::ProcessId reused = self;
  reused.start_time += 1;  // same pid, another process
  EXPECT_FALSE(shm::process_alive(reused));
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  shm::ProcessId zombie{child, 0};
  for (int i = 0; i < 500 && shm::process_alive(zombie); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(shm::process_alive(zombie)) << "an exited, unreaped child";
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(shm::process_alive(zombie)) << "a reaped child";
}

// ---- Allreduce and reducescatter against the scalar reference

using AllreduceParam = DtypeOpParam;

class AllreduceTest : public ::testing::TestWithParam<AllreduceParam> {};

TEST_P(AllreduceTest, MatchesScalarReference) {
  const auto [dtype, op] = GetParam();
  check_allreduce_matches_reference(*g_small, topology(), dtype, op, {1, 7, 50, 70000});
  check_allreduce_matches_reference(*g_default, topology(), dtype, op, {1, 1000003});
}

TEST_P(AllreduceTest, ZeroElements) {
  const auto [dtype, op] = GetParam();
  check_allreduce_zero_elements(*g_small, topology(), dtype, op);
}

TEST_P(AllreduceTest, ReducescatterShares) {
  const auto [dtype, op] = GetParam();
  check_reducescatter_shares(*g_small, topology(), dtype, op, 7001);
  // Small enough for every rank to reduce every copy itself.
  check_reducescatter_shares(*g_default, topology(), dtype, op, 37);
}

// Random values of the dtype: integers over their whole range (sums and
// products wrap), floats in [-2, 2], bool 0/1.
std::vector<unsigned char> random_bytes(DataType dtype, std::size_t count, unsigned seed) {
  std::mt19937_64 rng(seed);
  Buffer buffer(dtype, count);
  std::vector<unsigned char> bytes(count * dtype_size(dtype));
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(rng());
  if (dtype == DataType::kBool) {
    for (unsigned char& b : bytes) b &= 1;
  } else if (is_floating(dtype)) {
    std::uniform_real_distribution<double> uniform(-2.0, 2.0);
    for (std::size_t i = 0; i < count; ++i) buffer.set(i, uniform(rng));
    if (count > 0) std::memcpy(bytes.data(), buffer.data(), bytes.size());
  }
  return bytes;
}

// Integers, bool, and Min/Max of any dtype are exact: the same bits as the
// inner backend. Everything else: the same bits on every rank.
TEST_P(AllreduceTest, SameBitsAsInnerBackendAndOnEveryRank) {
  const auto [dtype, op] = GetParam();
  const bool exact = !is_floating(dtype) || op == ReduceOp::kMin || op == ReduceOp::kMax;
  for (std::size_t count : {std::size_t{1}, std::size_t{3}, std::size_t{10007}}) {
    const std::vector<unsigned char> input = random_bytes(dtype, count, 1234 + topology().rank);
    std::vector<unsigned char> mine = input, theirs = input;
    g_small->allreduce(mine.data(), count, dtype, op);
    inner().allreduce(theirs.data(), count, dtype, op);
    if (exact) EXPECT_EQ(mine, theirs) << "count " << count;
    std::vector<unsigned char> root = mine;
    inner().broadcast(root.data(), root.size(), DataType::kUInt8, 0);
    EXPECT_EQ(mine, root) << "count " << count << ": rank " << topology().rank
                          << " differs from rank 0";
  }
}

// Scaling folded into the reduce step gives the bits of a separate
// scale_in_place pass after the allreduce (what the executor did before).
TEST_P(AllreduceTest, ScaledEqualsAllreduceThenScale) {
  const auto [dtype, op] = GetParam();
  for (std::size_t count : {std::size_t{1}, std::size_t{10007}, std::size_t{300001}}) {
    for (auto [divisor, factor] : {std::pair{1.0, 1.0}, std::pair{3.0, 1.0}, std::pair{2.0, 0.5}}) {
      const std::vector<unsigned char> input = random_bytes(dtype, count, 99 + topology().rank);
      std::vector<unsigned char> folded = input, separate = input;
      g_default->allreduce_scaled(folded.data(), count, dtype, op, divisor, factor);
      g_default->allreduce(separate.data(), count, dtype, op);
      scale_in_place(dtype, separate.data(), count, divisor, factor);
      EXPECT_EQ(folded, separate) << "count " << count << ", divisor " << divisor << ", factor "
                                  << factor;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndOps, AllreduceTest,
                         ::testing::Combine(::testing::ValuesIn(kAllDtypes),
                                            ::testing::ValuesIn(kBackendOps)),
                         dtype_op_param_name);

TEST(ShmBackendTest, IntegersWrapAround) {
  std::int8_t value = 100;
  g_small->allreduce(&value, 1, DataType::kInt8, ReduceOp::kSum);
  EXPECT_EQ(value, static_cast<std::int8_t>(static_cast<std::uint8_t>(100 * topology().size)));
}

// float16 Sum rounds once, from float32: 1 + n * 2^-11 (each 2^-11 alone
// is half an ulp of 1 and would round away one step at a time, to even).
TEST(ShmBackendTest, HalfSumRoundsOnce) {
  std::vector<float16_t> values(100, float16_t(topology().rank == 0 ? 1.0f : 0.00048828125f));
  g_small->allreduce(values.data(), values.size(), DataType::kFloat16, ReduceOp::kSum);
  const float exact = 1.0f + 0.00048828125f * static_cast<float>(topology().size - 1);
  for (const float16_t& v : values)
    EXPECT_EQ(static_cast<float>(v), static_cast<float>(float16_t(exact)));
}

// ---- Data movement

class BackendDtypeTest : public ::testing::TestWithParam<DataType> {};

TEST_P(BackendDtypeTest, AverageRejected) { check_average_rejected(*g_small, GetParam()); }

TEST_P(BackendDtypeTest, BroadcastFromEveryRoot) {
  check_broadcast_from_every_root(*g_small, topology(), GetParam(), {0, 1, 23, 70000});
  check_broadcast_from_every_root(*g_default, topology(), GetParam(), {0, 1, 1000003});
}

TEST_P(BackendDtypeTest, AllgathervUnevenCounts) {
  std::vector<std::vector<std::size_t>> count_sets = allgatherv_count_sets(topology().size);
  std::vector<std::size_t>& several_chunks = count_sets.emplace_back();
  for (int r = 0; r < topology().size; ++r) several_chunks.push_back(4000 + 1000 * r);
  check_allgatherv_uneven_counts(*g_small, topology(), GetParam(), count_sets);
}

TEST_P(BackendDtypeTest, InvalidArgumentsRejected) {
  check_invalid_arguments_rejected(*g_small, topology(), GetParam());
  check_alltoall_reducescatter_arguments_rejected(*g_small, topology(), GetParam());
}

TEST_P(BackendDtypeTest, AlltoallvUnevenCounts) {
  check_alltoallv_count_sets(*g_small, topology(), GetParam());
}

// Delegated to the inner backend.
TEST_P(BackendDtypeTest, SendrecvPairs) {
  check_sendrecv_pairs(*g_small, topology(), GetParam());
  check_sendrecv_arguments_rejected(*g_small, topology(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, BackendDtypeTest, ::testing::ValuesIn(kAllDtypes),
                         dtype_param_name);

// Collectives of every kind and size one after the other on one segment:
// the chunk numbers run on and every slot is reused by another kind.
TEST(ShmBackendTest, MixedSequence) {
  const int rank = topology().rank, size = topology().size;
  for (int round = 0; round < 20; ++round) {
    const std::size_t count = 1 + static_cast<std::size_t>(round) * 997;
    std::vector<std::int32_t> sum(count, rank + 1);
    g_small->allreduce(sum.data(), count, DataType::kInt32, ReduceOp::kSum);
    EXPECT_EQ(sum.front(), size * (size + 1) / 2);
    EXPECT_EQ(sum.back(), size * (size + 1) / 2);
    std::vector<std::int32_t> cast(count, rank == round % size ? round : -1);
    g_small->broadcast(cast.data(), count, DataType::kInt32, round % size);
    EXPECT_EQ(cast.back(), round);
    std::vector<std::int32_t> gathered(count * size);
    std::vector<std::int32_t> part(count, rank);
    g_small->allgatherv(part.data(), gathered.data(), std::vector<std::size_t>(size, count),
                        DataType::kInt32);
    for (int r = 0; r < size; ++r) EXPECT_EQ(gathered[r * count + count - 1], r);
  }
}

// ---- Faults: a 3-rank sub-job in which the last rank dies or hangs. The
// survivors must throw RankFailure naming it within 10 s, and the segment
// must be gone from /dev/shm. Run by single-rank jobs only: the ranks of a
// larger job would wait for rank 0 meanwhile, against their own timeouts.
// "kill_mid_named": the ranks are named 10, 11, 12 (ShmBackend::name_ranks,
// as the two-level backend names the job's ranks): a death names 12.

constexpr int kFaultRanks = 3;
constexpr int kVictim = kFaultRanks - 1;
constexpr int kFaultTimeoutSeconds = 2;

int fault_child(const std::string& scenario, const std::string& name_file) {
  Transport transport;
  std::unique_ptr<ShmBackend> backend;
  int rank = -1;
  try {
    transport = create_transport("gloo");  // HOROVODCPP_SHM=0: the hook leaves it alone
    rank = transport.controller->topology().rank;
    backend = std::make_unique<ShmBackend>(std::move(transport.backend), *transport.controller);
    std::int32_t one = 1;
    backend->allreduce(&one, 1, DataType::kInt32, ReduceOp::kSum);  // everybody is there
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[shm fault child] setup failed: %s\n", e.what());
    return fault_subjob::kSetupFailed;
  }
  if (rank == 0) std::ofstream(name_file) << backend->segment_name() << "\n";
  std::vector<float> data(4 << 20, 1.0f);  // 16 MiB: many chunks per call
  auto allreduce = [&] {
    backend->allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kMax);
  };
  const std::string named_suffix = "_named";
  std::string how = scenario;
  int victim_name = kVictim;
  if (how.size() > named_suffix.size() &&
      how.compare(how.size() - named_suffix.size(), named_suffix.size(), named_suffix) == 0) {
    how.resize(how.size() - named_suffix.size());
    backend->name_ranks({10, 11, 12});
    victim_name = 10 + kVictim;
  }
  if (rank == kVictim) fault_subjob::play_victim(how, allreduce);
  fault_subjob::play_survivor("shm fault child", rank, victim_name, how, allreduce);
}

class FaultTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FaultTest, SurvivorsThrowNamingTheRank) {
  if (topology().size != 1) GTEST_SKIP() << "run by the single-rank jobs";
  const std::vector<std::string> names = available_transports();
  if (std::find(names.begin(), names.end(), "gloo") == names.end()) {
    GTEST_SKIP() << "the fault sub-jobs need the Gloo transport";
  }
  const std::string scenario = GetParam();
  const std::string store = fault_subjob::temp_directory("hvd_shm_test");
  const std::string name_file = store + "/segment_name";
  std::filesystem::create_directories(store + "/store");
  std::vector<pid_t> pids;
  for (int r = 0; r < kFaultRanks; ++r) {
    pids.push_back(fault_subjob::spawn_rank(
        g_self, {"--shm-fault-child", scenario, name_file}, r, kFaultRanks, store + "/store",
        {{"GLOO_TIMEOUT_SECONDS", "20"},
         {"SHM", "0"},
         {"SHM_TIMEOUT_SECONDS", std::to_string(kFaultTimeoutSeconds)}}));
  }
  for (pid_t pid : pids) ASSERT_GT(pid, 0) << "fork failed";
  const auto status = fault_subjob::reap(pids, kVictim, std::chrono::seconds(60));
  for (int r = 0; r < kVictim; ++r) {
    EXPECT_TRUE(
        fault_subjob::exited_with(status[r], fault_subjob::kGotError, fault_subjob::kExitCodes))
        << "survivor rank " << r << " (" << scenario << ")";
  }
  std::string segment;
  std::ifstream(name_file) >> segment;
  ASSERT_FALSE(segment.empty()) << "the sub-job did not get as far as its segment";
  EXPECT_FALSE(in_dev_shm(segment)) << segment << " left in /dev/shm";
}

INSTANTIATE_TEST_SUITE_P(Scenarios, FaultTest,
                         ::testing::Values("kill_before", "kill_mid", "hang", "kill_mid_named"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace hvd

int main(int argc, char** argv) {
  if (argc >= 4 && std::string(argv[1]) == "--shm-fault-child") {
    return hvd::fault_child(argv[2], argv[3]);
  }
  ::testing::InitGoogleTest(&argc, argv);
  hvd::g_self = hvd::fault_subjob::self_path(argv[0]);
  int rank = -1;
  try {
    // The plain transport: this suite wraps its backend itself.
    setenv("HOROVODCPP_SHM", "0", 1);
    std::string name = hvd::settings::read_string(hvd::settings::Setting::kCpuOperations);
    if (name.empty()) name = hvd::available_transports().front();
    hvd::g_transport_name = name;
    hvd::g_transport = hvd::create_transport(name);
    rank = hvd::g_transport.controller->topology().rank;
    hvd::g_small = std::make_unique<hvd::ShmBackend>(
        std::move(hvd::g_transport.backend), *hvd::g_transport.controller, hvd::small_slots());
    hvd::g_default = std::make_unique<hvd::ShmBackend>(hvd::create_transport(name).backend,
                                                       *hvd::g_transport.controller);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cannot set up the shm backend: %s\n", e.what());
    return 1;
  }
  hvd::conformance::print_only_failures_unless_rank0(rank);
  const int result = hvd::conformance::job_outcome(*hvd::g_transport.controller, RUN_ALL_TESTS());
  hvd::g_default.reset();
  hvd::g_small.reset();
  hvd::g_transport = hvd::Transport();
  hvd::fault_subjob::remove_temp_directories();
  return result;
}
