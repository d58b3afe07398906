// The MPI transport on its own: MpiContext topology, MpiController and
// MpiBackend collectives for every dtype, with and without chunking. The
// checks every transport shares are in backend_conformance.h.
// Runs under mpirun with any number of ranks; its own main sets MPI up.
#include <gtest/gtest.h>

#include <climits>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "../harness/backend_conformance.h"
#include "backend/mpi/mpi_backend.h"
#include "backend/mpi/mpi_context.h"
#include "backend/mpi/mpi_controller.h"
#include "horovodcpp/errors.h"
#include "horovodcpp/types.h"

namespace hvd {
namespace {

using namespace conformance;

std::shared_ptr<MpiContext> g_context;  // created and released by main()

const Topology& topology() { return g_context->topology(); }

// A small limit forces several MPI calls per collective (and the allgatherv
// fallback); INT_MAX is the production default.
constexpr std::size_t kSplitLimits[] = {7, INT_MAX};

std::string limit_name(std::size_t limit) {
  return limit == INT_MAX ? "unsplit" : "split" + std::to_string(limit);
}

// ---- Topology and transport registry

TEST(MpiContextTest, TopologyMatchesMpi) {
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Topology& t = topology();
  EXPECT_EQ(t.rank, rank);
  EXPECT_EQ(t.size, size);
  EXPECT_GE(t.local_rank, 0);
  EXPECT_LT(t.local_rank, t.local_size);
  EXPECT_GE(t.cross_rank, 0);
  EXPECT_LT(t.cross_rank, t.cross_size);
  check_single_host(t);
}

TEST(MpiContextTest, SecondContextSharesMpi) {
  // A second context (e.g. after shutdown and init) finds MPI initialized.
  std::shared_ptr<MpiContext> other = MpiContext::create(std::vector<int>{});
  EXPECT_EQ(other->topology().rank, topology().rank);
  EXPECT_NE(other->control_comm(), g_context->control_comm());
  EXPECT_NE(other->data_comm(), other->control_comm());
}

TEST(TransportTest, RegistryHasMpi) { check_registry_has("mpi", topology()); }

TEST(TransportTest, UnknownNameListsAvailable) { check_unknown_transport_lists("mpi"); }

// ---- Controller

TEST(MpiControllerTest, GatherToRoot) {
  MpiController controller(g_context);
  check_gather_to_root(controller);
}

TEST(MpiControllerTest, GatherAllEmpty) {
  MpiController controller(g_context);
  check_gather_all_empty(controller);
}

TEST(MpiControllerTest, BroadcastFromRoot) {
  MpiController controller(g_context);
  check_broadcast_from_root(controller);
}

TEST(MpiControllerTest, BitwiseAndEveryLength) {
  MpiController controller(g_context);
  check_bitwise_and_every_length(controller);
}

TEST(MpiControllerTest, CarriesNoPayload) {
  MpiController controller(g_context);
  EXPECT_EQ(controller.payload_capacity(), 0u);
  check_bitwise_and_gathering(controller);
}

// Also where only some ranks' lengths differ from their first partner's,
// or only a rank beyond the largest power of two holds the odd one.
TEST(MpiControllerTest, BitVectorsOfDifferentLengthsRejectedEverywhere) {
  const int rank = topology().rank, size = topology().size;
  if (size < 2) GTEST_SKIP() << "needs two ranks";
  MpiController controller(g_context);
  check_bitwise_and_rejects_different_lengths(controller);
  for (int odd = 0; odd < size; ++odd) {
    std::vector<std::uint64_t> bits(rank == odd ? 2 : 5, ~std::uint64_t{0});
    EXPECT_THROW(controller.bitwise_and(bits), InvalidArgument) << "rank " << odd << "'s shorter";
  }
  std::vector<std::uint64_t> same(3, 6);
  controller.bitwise_and(same);
  EXPECT_EQ(same, std::vector<std::uint64_t>(3, 6));
}

// ---- Backend: allreduce

using AllreduceParam = std::tuple<DataType, ReduceOp, std::size_t>;

class AllreduceTest : public ::testing::TestWithParam<AllreduceParam> {};

TEST_P(AllreduceTest, MatchesScalarReference) {
  const auto [dtype, op, limit] = GetParam();
  MpiBackend backend(g_context, limit);
  check_allreduce_matches_reference(backend, topology(), dtype, op, {1, 7, 50});
}

TEST_P(AllreduceTest, ZeroElements) {
  const auto [dtype, op, limit] = GetParam();
  MpiBackend backend(g_context, limit);
  check_allreduce_zero_elements(backend, topology(), dtype, op);
}

TEST_P(AllreduceTest, ReducescatterShares) {
  const auto [dtype, op, limit] = GetParam();
  MpiBackend backend(g_context, limit);
  check_reducescatter_shares(backend, topology(), dtype, op, 23);
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndOps, AllreduceTest,
                         ::testing::Combine(::testing::ValuesIn(kAllDtypes),
                                            ::testing::ValuesIn(kBackendOps),
                                            ::testing::ValuesIn(kSplitLimits)),
                         [](const ::testing::TestParamInfo<AllreduceParam>& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                  reduce_op_name(std::get<1>(info.param)) + "_" +
                                  limit_name(std::get<2>(info.param));
                         });

// ---- Backend: per-dtype collectives

using DtypeParam = std::tuple<DataType, std::size_t>;

class BackendDtypeTest : public ::testing::TestWithParam<DtypeParam> {};

TEST_P(BackendDtypeTest, AverageRejected) {
  const auto [dtype, limit] = GetParam();
  MpiBackend backend(g_context, limit);
  check_average_rejected(backend, dtype);
}

TEST_P(BackendDtypeTest, BroadcastFromEveryRoot) {
  const auto [dtype, limit] = GetParam();
  MpiBackend backend(g_context, limit);
  check_broadcast_from_every_root(backend, topology(), dtype, {0, 1, 23});
}

TEST_P(BackendDtypeTest, AllgathervUnevenCounts) {
  const auto [dtype, limit] = GetParam();
  MpiBackend backend(g_context, limit);
  check_allgatherv_uneven_counts(backend, topology(), dtype,
                                 allgatherv_count_sets(topology().size));
}

TEST_P(BackendDtypeTest, InvalidArgumentsRejected) {
  const auto [dtype, limit] = GetParam();
  MpiBackend backend(g_context, limit);
  check_invalid_arguments_rejected(backend, topology(), dtype);
  check_alltoall_reducescatter_arguments_rejected(backend, topology(), dtype);
}

TEST_P(BackendDtypeTest, AlltoallvUnevenCounts) {
  const auto [dtype, limit] = GetParam();
  MpiBackend backend(g_context, limit);
  check_alltoallv_count_sets(backend, topology(), dtype);
}

TEST_P(BackendDtypeTest, SendrecvPairs) {
  const auto [dtype, limit] = GetParam();
  MpiBackend backend(g_context, limit);
  check_sendrecv_pairs(backend, topology(), dtype);
  check_sendrecv_arguments_rejected(backend, topology(), dtype);
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, BackendDtypeTest,
                         ::testing::Combine(::testing::ValuesIn(kAllDtypes),
                                            ::testing::ValuesIn(kSplitLimits)),
                         [](const ::testing::TestParamInfo<DtypeParam>& info) {
                           return std::string(dtype_name(std::get<0>(info.param))) + "_" +
                                  limit_name(std::get<1>(info.param));
                         });

TEST(MpiBackendTest, NameAndCapabilities) {
  MpiBackend backend(g_context);
  check_name_and_capabilities(backend, "mpi");
}

TEST(MpiBackendTest, LimitMustFitMpiCounts) {
  EXPECT_THROW({ MpiBackend backend(g_context, 0); }, InvalidArgument);
  EXPECT_THROW({ MpiBackend backend(g_context, std::size_t{INT_MAX} + 1); }, InvalidArgument);
}

}  // namespace
}  // namespace hvd

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  try {
    hvd::g_context = hvd::MpiContext::create(std::vector<int>{});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cannot set up MPI: %s\n", e.what());
    return 1;
  }
  const int rank = hvd::g_context->topology().rank;
  hvd::conformance::print_only_failures_unless_rank0(rank);
  int result = RUN_ALL_TESTS();
  // Every rank exits with the job's outcome, whichever rank failed.
  const int own_result = result;
  MPI_Allreduce(MPI_IN_PLACE, &result, 1, MPI_INT, MPI_MAX, hvd::g_context->control_comm());
  if (rank == 0 && result != own_result) {
    std::fprintf(stderr, "FAILED on another rank (see its [rank N] lines)\n");
  }
  hvd::g_context.reset();  // MPI itself is finalized at exit
  return result;
}
