// Gloo mode's control planes on their own, each set up over the transport's
// controller (MPI under --mpi, Gloo mode's own under --gloo): ShmController
// (every rank on this host), TcpController as a star (fan-out 8) and as a
// chain (fan-out 1: 0 <- 1 <- 2 <- 3, every frame forwarded). Messages of 0
// bytes to many slots, many rounds of mixed collectives, bit vectors of
// every length up to several slots, lengths that differ between ranks; which
// control plane Gloo mode picks; and peers that die or hang mid-round.
//
// The fault tests run, on rank 0 of single-rank jobs only, 3-rank sub-jobs
// of this binary (--control-fault-child PLANE VICTIM HOW) over Gloo with a
// file store.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../harness/backend_conformance.h"
#include "../harness/fault_subjob.h"
#include "backend/gloo/gloo_context.h"
#include "backend/gloo/gloo_controller.h"
#include "backend/gloo/tcp_controller.h"
#include "backend/shm/shm_controller.h"
#include "core/negotiation/layered_controller.h"
#include "horovodcpp/errors.h"
#include "settings/settings.h"
#include "store/job_auth.h"
#include "store/tcp_connect.h"

namespace hvd {
namespace {

using namespace conformance;

std::string g_transport_name;
Transport g_transport;  // its controller sets the planes up
std::map<std::string, std::unique_ptr<Controller>> g_planes;
std::string g_self;

const Topology& topology() { return g_transport.controller->topology(); }

std::unique_ptr<Controller> make_tcp(Controller& setup, int fan_out,
                                     std::chrono::milliseconds timeout) {
  TcpControllerOptions options;
  options.address = "127.0.0.1";
  options.timeout = timeout;
  options.fan_out = fan_out;
  return TcpController::connect(setup, options, "nothing");
}

// The setup controller, as TcpController::connect uses it, with strangers:
// once the listeners' addresses are out, a stranger tries rank 0's listener
// with the wrong key, then floods it (idle connections beyond what it keeps,
// garbage) while the children wait a moment before connecting. The plane
// must connect all the same, and refuse the stranger.
class SetupWithStrangers : public Controller {
 public:
  explicit SetupWithStrangers(Controller& inner) : inner_(inner) {}
  ~SetupWithStrangers() override {
    if (stranger_.joinable()) stranger_.join();
    for (int fd : idle_) ::close(fd);
  }
  const Topology& topology() const override { return inner_.topology(); }
  std::vector<std::string> gather_to_root(const std::string& message) override {
    return inner_.gather_to_root(message);
  }
  void bitwise_and(std::vector<std::uint64_t>& words) override { inner_.bitwise_and(words); }
  std::string broadcast_from_root(const std::string& message) override {
    std::string table = inner_.broadcast_from_root(message);
    // The key, then "address port" of each rank.
    std::istringstream lines(table);
    std::string key, line;
    std::getline(lines, key);
    for (int r = 0; std::getline(lines, line); ++r) {
      // Rank 0's listener: the only one that accepts in a star of this size.
      if (r == 0 && topology().rank == 0) stranger_ = std::thread([this, line] { flood(line); });
    }
    if (topology().rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return table;
  }
  // How the stranger's proof with the wrong key ended (-1: it never got an answer).
  int wrong_key_outcome() {
    if (stranger_.joinable()) stranger_.join();
    return wrong_key_outcome_;
  }

 private:
  void flood(const std::string& address) {
    std::istringstream fields(address);
    std::string host;
    int port = 0;
    fields >> host >> port;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::string error;
    const int fd = connect_once(host, port, AF_UNSPEC, deadline, &error);
    if (fd < 0) return;
    try {
      wrong_key_outcome_ = static_cast<int>(
          job_auth::prove_to_listener(fd, "not the job's key", deadline, "the listener"));
    } catch (const std::exception&) {
    }
    ::close(fd);
    for (int i = 0; i < 80; ++i) {  // idle: more than the listener keeps waiting
      const int fd = connect_once(host, port, AF_UNSPEC, deadline, &error);
      if (fd >= 0) idle_.push_back(fd);
    }
    for (int i = 0; i < 20; ++i) {  // garbage of a proof's length and more
      const int fd = connect_once(host, port, AF_UNSPEC, deadline, &error);
      if (fd < 0) continue;
      const std::string garbage(100 + i, static_cast<char>('a' + i));
      (void)!::send(fd, garbage.data(), garbage.size(), MSG_NOSIGNAL);
      ::close(fd);
    }
  }

  Controller& inner_;
  std::thread stranger_;
  std::vector<int> idle_;
  int wrong_key_outcome_ = -1;
};
int g_wrong_key_outcome = -1;

// Rank-dependent bytes, every value of a byte.
std::string pattern(int rank, std::size_t length, int salt) {
  std::string bytes(length, '\0');
  for (std::size_t i = 0; i < length; ++i) {
    bytes[i] = static_cast<char>((rank * 131 + salt * 17 + i * 7) % 256);
  }
  return bytes;
}

// Message lengths around the shared-memory slot (16 KiB: the first chunk
// holds 8 bytes less) and far beyond it.
const std::vector<std::size_t> kLengths = {0,     1,     7,     16375,  16376,  16377,
                                           16384, 16385, 49157, 300001, 1 << 20};

class PlaneTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (g_planes.count(GetParam()) == 0) GTEST_SKIP() << GetParam() << " needs one host";
  }
  Controller& plane() { return *g_planes.at(GetParam()); }
};

TEST_P(PlaneTest, TopologyIsTheJobs) {
  const Topology& mine = plane().topology();
  EXPECT_EQ(mine.rank, topology().rank);
  EXPECT_EQ(mine.size, topology().size);
  EXPECT_EQ(mine.local_rank, topology().local_rank);
  EXPECT_EQ(mine.local_size, topology().local_size);
}

TEST_P(PlaneTest, Conformance) {
  check_gather_to_root(plane());
  check_gather_all_empty(plane());
  check_broadcast_from_root(plane());
}

TEST_P(PlaneTest, GatherEveryLength) {
  const int rank = topology().rank, size = topology().size;
  for (std::size_t length : kLengths) {
    // Each rank a different length: one of them is the longest.
    const std::vector<std::string> gathered =
        plane().gather_to_root(pattern(rank, length + static_cast<std::size_t>(rank) * 3, 1));
    if (rank != 0) {
      EXPECT_TRUE(gathered.empty());
      continue;
    }
    ASSERT_EQ(gathered.size(), static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r) {
      EXPECT_TRUE(gathered[r] == pattern(r, length + static_cast<std::size_t>(r) * 3, 1))
          << "rank " << r << ", length " << length;
    }
  }
}

TEST_P(PlaneTest, BroadcastEveryLength) {
  for (std::size_t length : kLengths) {
    const std::string root = pattern(0, length, 2);
    const std::string mine = topology().rank == 0 ? root : pattern(topology().rank, 5, 3);
    EXPECT_TRUE(plane().broadcast_from_root(mine) == root) << "length " << length;
  }
}

TEST_P(PlaneTest, BitwiseAndEveryLength) { check_bitwise_and_every_length(plane()); }

// Shared memory carries payloads (the inline allreduce), TCP none.
TEST_P(PlaneTest, BitwiseAndGatheringPayloads) {
  EXPECT_EQ(plane().payload_capacity() > 0, std::string(GetParam()) == "shm");
  check_bitwise_and_gathering(plane());
}

// Collectives of every kind one after the other, with lengths that change
// every round: the shared-memory chunk numbers run on and every stage is
// reused; the TCP frames stay in step.
TEST_P(PlaneTest, ManyMixedRounds) {
  const int rank = topology().rank, size = topology().size;
  for (int round = 0; round < 600; ++round) {
    const std::size_t length = static_cast<std::size_t>(round * 97 % 40000);
    const std::vector<std::string> gathered = plane().gather_to_root(pattern(rank, length, round));
    if (rank == 0) {
      ASSERT_EQ(gathered.size(), static_cast<std::size_t>(size));
      for (int r = 0; r < size; ++r) {
        ASSERT_TRUE(gathered[r] == pattern(r, length, round)) << "round " << round << " rank " << r;
      }
    }
    const std::string root = pattern(0, length / 3, round);
    ASSERT_TRUE(plane().broadcast_from_root(rank == 0 ? root : "") == root) << "round " << round;
    std::vector<std::uint64_t> bits(1 + round % 40, ~std::uint64_t{0});
    bits[round % bits.size()] = ~(std::uint64_t{1} << (rank % 64));
    plane().bitwise_and(bits);
    for (std::size_t i = 0; i < bits.size(); ++i) {
      std::uint64_t expected = ~std::uint64_t{0};
      if (i == round % bits.size()) {
        for (int r = 0; r < size; ++r) expected &= ~(std::uint64_t{1} << (r % 64));
      }
      ASSERT_EQ(bits[i], expected) << "round " << round << " word " << i;
    }
  }
}

TEST_P(PlaneTest, BitVectorsOfDifferentLengthsRejectedEverywhere) {
  if (topology().size < 2) GTEST_SKIP() << "needs two ranks";
  check_bitwise_and_rejects_different_lengths(plane());
}

// The star of "tcp_strangers" was connected while strangers crowded its
// root's listener: the one with the wrong key was refused.
TEST(TcpPlaneTest, StrangersAreRefusedAndTheRanksConnect) {
  if (topology().size < 2) GTEST_SKIP() << "needs a child of rank 0";
  if (topology().rank != 0) return;
  EXPECT_EQ(g_wrong_key_outcome, static_cast<int>(job_auth::Outcome::kRefused));
}

INSTANTIATE_TEST_SUITE_P(Planes, PlaneTest,
                         ::testing::Values("shm", "tcp", "tcp_chain", "tcp_strangers"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

// ---- Which control plane Gloo mode picks (registry/transports.cc)

class ScopedSetting {
 public:
  ScopedSetting(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedSetting() {
    if (old_.empty()) {
      unsetenv(name_);
    } else {
      setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

// The plane Gloo mode negotiates through (under the LayeredController that
// gives up through Gloo's roll call).
Controller* plane_of(Controller* controller) {
  auto* layered = dynamic_cast<LayeredController*>(controller);
  EXPECT_NE(layered, nullptr) << "Gloo mode's plane gives up through the setup's roll call";
  return layered ? &layered->plane() : controller;
}

TEST(GlooModeTest, NegotiatesThroughSharedMemoryOnOneHost) {
  if (g_transport_name != "gloo") GTEST_SKIP() << "Gloo mode only";
  Transport transport = create_transport("gloo");
  Controller* controller = transport.controller.get();
  if (topology().size > 1 && topology().local_size == topology().size) {
    EXPECT_NE(dynamic_cast<ShmController*>(plane_of(controller)), nullptr);
    EXPECT_EQ(std::string(transport.backend->name()), "shm");  // the data too, as in MPI mode
  } else {
    EXPECT_NE(dynamic_cast<TcpController*>(plane_of(controller)), nullptr);
  }
  EXPECT_EQ(controller->broadcast_from_root(std::to_string(topology().rank)), "0");
}

TEST(GlooModeTest, NegotiatesOverTcpWithoutSharedMemory) {
  if (g_transport_name != "gloo") GTEST_SKIP() << "Gloo mode only";
  ScopedSetting no_shm("HOROVODCPP_SHM", "0");
  Transport transport = create_transport("gloo");
  EXPECT_NE(dynamic_cast<TcpController*>(plane_of(transport.controller.get())), nullptr);
  EXPECT_EQ(std::string(transport.backend->name()), "gloo");
  check_gather_to_root(*transport.controller);
}

// Process sets get the same control plane as the job.
TEST(GlooModeTest, ProcessSetsNegotiateOverTheSamePlanes) {
  if (g_transport_name != "gloo") GTEST_SKIP() << "Gloo mode only";
  const int size = topology().size;
  std::vector<int> evens;
  for (int r = 0; r < size; r += 2) evens.push_back(r);
  Transport set = g_transport.process_sets->create_transport(7, evens);
  if (topology().rank % 2 == 1) {
    EXPECT_EQ(set.controller, nullptr);
    return;
  }
  ASSERT_NE(set.controller, nullptr);
  if (evens.size() > 1 && topology().local_size == size) {
    EXPECT_NE(dynamic_cast<ShmController*>(plane_of(set.controller.get())), nullptr);
  } else {
    EXPECT_NE(dynamic_cast<TcpController*>(plane_of(set.controller.get())), nullptr);
  }
  check_gather_to_root(*set.controller);
}

// ---- Faults: a 3-rank sub-job in which rank VICTIM dies or hangs mid-round.
// Every survivor must throw RankFailure naming it within 10 s. Run by
// single-rank jobs only: the ranks of a larger job would wait for rank 0
// meanwhile, against their own timeouts.

constexpr int kFaultRanks = 3;
constexpr int kFaultTimeoutSeconds = 2;

// One round of every collective.
void mixed_round(Controller& controller, int rank) {
  controller.gather_to_root(pattern(rank, 100, 0));
  controller.broadcast_from_root(pattern(rank, 300, 1));
  std::vector<std::uint64_t> bits(20, ~std::uint64_t{0});
  controller.bitwise_and(bits);
}

int fault_child(const std::string& plane, int victim, const std::string& how) {
  std::unique_ptr<Controller> controller;
  int rank = -1;
  try {
    std::shared_ptr<GlooContext> context = GlooContext::create();
    rank = context->topology().rank;
    auto setup = std::make_unique<GlooController>(context);
    std::unique_ptr<Controller> negotiation;
    if (plane == "shm") {
      negotiation = maybe_shm_controller(*setup, "nothing");
    } else {
      negotiation = make_tcp(*setup, plane == "tcp_chain" ? 1 : 8, context->timeout());
    }
    if (!negotiation) throw std::runtime_error("no " + plane + " control plane");
    // As Gloo mode composes them: the roll call over the setup names the rank.
    controller = std::make_unique<LayeredController>(std::move(negotiation), std::move(setup));
    mixed_round(*controller, rank);  // everybody is there
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[control fault child] setup failed: %s\n", e.what());
    return fault_subjob::kSetupFailed;
  }
  auto round = [&] { mixed_round(*controller, rank); };
  if (rank == victim) fault_subjob::play_victim(how, round);
  fault_subjob::play_survivor("control fault child", rank, victim, how, round);
}

struct FaultCase {
  const char* plane;
  int victim;
  const char* how;
};

class FaultTest : public ::testing::TestWithParam<FaultCase> {};

TEST_P(FaultTest, SurvivorsThrowNamingTheRank) {
  if (topology().size != 1) GTEST_SKIP() << "run by the single-rank jobs";
  const FaultCase c = GetParam();
  const std::string store = fault_subjob::temp_directory("hvd_control_test");
  std::vector<pid_t> pids;  // the survivors in rank order, then the victim (as reap() wants)
  pid_t victim = -1;
  for (int r = 0; r < kFaultRanks; ++r) {
    const pid_t pid = fault_subjob::spawn_rank(
        g_self, {"--control-fault-child", c.plane, std::to_string(c.victim), c.how}, r, kFaultRanks,
        store,
        {{"GLOO_TIMEOUT_SECONDS", std::to_string(kFaultTimeoutSeconds)},
         {"SHM_TIMEOUT_SECONDS", std::to_string(kFaultTimeoutSeconds)}});
    ASSERT_GT(pid, 0) << "fork failed";
    if (r == c.victim) {
      victim = pid;
    } else {
      pids.push_back(pid);
    }
  }
  pids.push_back(victim);
  const auto status = fault_subjob::reap(pids, kFaultRanks - 1, std::chrono::seconds(60));
  for (int i = 0; i + 1 < kFaultRanks; ++i) {
    EXPECT_TRUE(
        fault_subjob::exited_with(status[i], fault_subjob::kGotError, fault_subjob::kExitCodes))
        << "survivor " << i << " (" << c.plane << ", victim " << c.victim << ", " << c.how << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Scenarios, FaultTest,
    ::testing::Values(FaultCase{"shm", 2, "kill_before"}, FaultCase{"shm", 2, "kill_mid"},
                      FaultCase{"shm", 2, "hang"}, FaultCase{"shm", 0, "kill_mid"},
                      FaultCase{"tcp", 2, "kill_before"}, FaultCase{"tcp", 2, "kill_mid"},
                      FaultCase{"tcp", 2, "hang"}, FaultCase{"tcp", 0, "hang"},
                      // The chain 0 <- 1 <- 2: the middle rank, and the leaf
                      // whose failure reaches rank 0 through rank 1.
                      FaultCase{"tcp_chain", 1, "kill_mid"}, FaultCase{"tcp_chain", 1, "hang"},
                      FaultCase{"tcp_chain", 2, "kill_mid"}, FaultCase{"tcp_chain", 2, "hang"}),
    [](const ::testing::TestParamInfo<FaultCase>& info) {
      return std::string(info.param.plane) + "_rank" + std::to_string(info.param.victim) + "_" +
             info.param.how;
    });

}  // namespace
}  // namespace hvd

int main(int argc, char** argv) {
  if (argc >= 5 && std::string(argv[1]) == "--control-fault-child") {
    return hvd::fault_child(argv[2], std::atoi(argv[3]), argv[4]);
  }
  ::testing::InitGoogleTest(&argc, argv);
  hvd::g_self = hvd::fault_subjob::self_path(argv[0]);
  int rank = -1;
  try {
    std::string name = hvd::settings::read_string(hvd::settings::Setting::kCpuOperations);
    if (name.empty()) name = hvd::available_transports().front();
    hvd::g_transport_name = name;
    hvd::g_transport = hvd::create_transport(name);
    hvd::Controller& setup = *hvd::g_transport.controller;
    rank = setup.topology().rank;
    const std::chrono::milliseconds timeout(60000);
    // Shared memory: several ranks, all on this host (and HOROVODCPP_SHM not 0).
    if (auto shm = hvd::maybe_shm_controller(setup, "nothing"))
      hvd::g_planes["shm"] = std::move(shm);
    // TCP on 127.0.0.1: this suite runs on one machine, also where its
    // ranks play several hosts (hvdrun -H 127.0.0.1:2,127.0.0.2:2).
    hvd::g_planes["tcp"] = hvd::make_tcp(setup, 8, timeout);
    hvd::g_planes["tcp_chain"] = hvd::make_tcp(setup, 1, timeout);
    hvd::SetupWithStrangers crowded(setup);
    hvd::g_planes["tcp_strangers"] = hvd::make_tcp(crowded, 8, timeout);
    hvd::g_wrong_key_outcome = crowded.wrong_key_outcome();
    if (!hvd::g_planes["tcp"] || !hvd::g_planes["tcp_chain"] || !hvd::g_planes["tcp_strangers"]) {
      throw std::runtime_error("the TCP control plane could not be connected");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cannot set up the control planes: %s\n", e.what());
    return 1;
  }
  hvd::conformance::print_only_failures_unless_rank0(rank);
  const int result = hvd::conformance::job_outcome(*hvd::g_transport.controller, RUN_ALL_TESTS());
  hvd::g_planes.clear();
  hvd::g_transport = hvd::Transport();
  hvd::fault_subjob::remove_temp_directories();
  return result;
}
