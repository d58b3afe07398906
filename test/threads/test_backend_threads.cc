// The backend conformance suite (backend_conformance.h) with every rank a
// thread of this process: Gloo over a MemoryStore, and ShmBackend around
// it, for 1 to 4 ranks. gloo/test_gloo_backend.cc and
// shm/test_shm_backend.cc run the same checks under hvdrun, one process per
// rank; this driver needs no launcher. Each job is connected once and kept
// for the following tests; a test that fails drops its job, whose ranks may
// be out of step.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../harness/backend_conformance.h"
#include "threads/thread_job.h"

namespace hvd {
namespace threads {
namespace {

using namespace conformance;

struct JobParam {
  JobBackend backend;
  int size;
};

constexpr JobParam kJobs[] = {
    {JobBackend::kGloo, 1}, {JobBackend::kGloo, 2}, {JobBackend::kGloo, 3}, {JobBackend::kGloo, 4},
    {JobBackend::kShm, 1},  {JobBackend::kShm, 2},  {JobBackend::kShm, 3},  {JobBackend::kShm, 4}};
constexpr int kSizes[] = {1, 2, 3, 4};

std::string job_name(const JobParam& job) {
  return std::string(job_backend_name(job.backend)) + "_np" + std::to_string(job.size);
}

void PrintTo(const JobParam& job, std::ostream* os) { *os << job_name(job); }

std::map<std::pair<JobBackend, int>, std::unique_ptr<ThreadJob>> g_jobs;  // cleared by main()

// Runs body as every rank of `param`'s job, connecting it on first use
// (a rank that cannot connect is a failure of this test).
void run_job(const JobParam& param, const std::function<void(ThreadRank&)>& body) {
  std::unique_ptr<ThreadJob>& job = g_jobs[{param.backend, param.size}];
  if (!job) job = std::make_unique<ThreadJob>(param.backend, param.size);
  if (job->usable()) job->run(body);
  if (::testing::Test::HasFailure()) job.reset();
}

// ---- Controller (the same GlooController in both kinds of job)

class ControllerTest : public ::testing::TestWithParam<int> {};

TEST_P(ControllerTest, TopologyIsOneHost) {
  const int size = GetParam();
  run_job({JobBackend::kGloo, size}, [size](ThreadRank& r) {
    EXPECT_EQ(r.controller->topology().rank, r.topology.rank);
    EXPECT_EQ(r.controller->topology().size, size);
    check_single_host(r.controller->topology());
  });
}

TEST_P(ControllerTest, GatherToRoot) {
  run_job({JobBackend::kGloo, GetParam()},
          [](ThreadRank& r) { check_gather_to_root(*r.controller); });
}

TEST_P(ControllerTest, GatherAllEmpty) {
  run_job({JobBackend::kGloo, GetParam()},
          [](ThreadRank& r) { check_gather_all_empty(*r.controller); });
}

TEST_P(ControllerTest, BroadcastFromRoot) {
  run_job({JobBackend::kGloo, GetParam()},
          [](ThreadRank& r) { check_broadcast_from_root(*r.controller); });
}

INSTANTIATE_TEST_SUITE_P(Gloo, ControllerTest, ::testing::ValuesIn(kSizes),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "np" + std::to_string(info.param);
                         });

// ---- Backend: allreduce and reducescatter

using JobDtypeOpParam = std::tuple<JobParam, DataType, ReduceOp>;

std::string job_dtype_op_name(const ::testing::TestParamInfo<JobDtypeOpParam>& info) {
  const auto& [job, dtype, op] = info.param;
  return job_name(job) + "_" + dtype_name(dtype) + "_" + reduce_op_name(op);
}

class AllreduceTest : public ::testing::TestWithParam<JobDtypeOpParam> {};

TEST_P(AllreduceTest, MatchesScalarReference) {
  const auto [job, dtype, op] = GetParam();
  // 70000 elements: several of Gloo's 1 MiB segments, many 4 KiB shm chunks.
  run_job(job, [&](ThreadRank& r) {
    check_allreduce_matches_reference(*r.backend, r.topology, dtype, op, {1, 7, 50, 70000});
  });
}

TEST_P(AllreduceTest, ZeroElements) {
  const auto [job, dtype, op] = GetParam();
  run_job(job,
          [&](ThreadRank& r) { check_allreduce_zero_elements(*r.backend, r.topology, dtype, op); });
}

TEST_P(AllreduceTest, ReducescatterShares) {
  const auto [job, dtype, op] = GetParam();
  run_job(job, [&](ThreadRank& r) {
    // Reducescatter is Gloo's allreduce (70000 elements above) plus a copy;
    // 7001 per rank already spans many shm chunks.
    check_reducescatter_shares(*r.backend, r.topology, dtype, op, 7001);
  });
}

INSTANTIATE_TEST_SUITE_P(AllJobsDtypesAndOps, AllreduceTest,
                         ::testing::Combine(::testing::ValuesIn(kJobs),
                                            ::testing::ValuesIn(kAllDtypes),
                                            ::testing::ValuesIn(kBackendOps)),
                         job_dtype_op_name);

// ---- Backend: per-dtype collectives

using JobDtypeParam = std::tuple<JobParam, DataType>;

std::string job_dtype_name(const ::testing::TestParamInfo<JobDtypeParam>& info) {
  const auto& [job, dtype] = info.param;
  return job_name(job) + "_" + dtype_name(dtype);
}

class BackendDtypeTest : public ::testing::TestWithParam<JobDtypeParam> {};

TEST_P(BackendDtypeTest, AverageRejected) {
  const auto [job, dtype] = GetParam();
  run_job(job, [&](ThreadRank& r) { check_average_rejected(*r.backend, dtype); });
}

TEST_P(BackendDtypeTest, BroadcastFromEveryRoot) {
  const auto [job, dtype] = GetParam();
  run_job(job, [&](ThreadRank& r) {
    check_broadcast_from_every_root(*r.backend, r.topology, dtype, {0, 1, 23, 70000});
  });
}

TEST_P(BackendDtypeTest, AllgathervUnevenCounts) {
  const auto [job, dtype] = GetParam();
  run_job(job, [&](ThreadRank& r) {
    std::vector<std::vector<std::size_t>> count_sets = allgatherv_count_sets(r.topology.size);
    std::vector<std::size_t>& several_segments = count_sets.emplace_back();
    for (int k = 0; k < r.topology.size; ++k) several_segments.push_back(40000 + 1000 * k);
    check_allgatherv_uneven_counts(*r.backend, r.topology, dtype, count_sets);
  });
}

TEST_P(BackendDtypeTest, InvalidArgumentsRejected) {
  const auto [job, dtype] = GetParam();
  run_job(job, [&](ThreadRank& r) {
    check_invalid_arguments_rejected(*r.backend, r.topology, dtype);
    check_alltoall_reducescatter_arguments_rejected(*r.backend, r.topology, dtype);
  });
}

TEST_P(BackendDtypeTest, AlltoallvUnevenCounts) {
  const auto [job, dtype] = GetParam();
  run_job(job, [&](ThreadRank& r) { check_alltoallv_count_sets(*r.backend, r.topology, dtype); });
}

TEST_P(BackendDtypeTest, SendrecvPairs) {
  const auto [job, dtype] = GetParam();
  run_job(job, [&](ThreadRank& r) {
    check_sendrecv_pairs(*r.backend, r.topology, dtype);
    check_sendrecv_arguments_rejected(*r.backend, r.topology, dtype);
  });
}

INSTANTIATE_TEST_SUITE_P(AllJobsAndDtypes, BackendDtypeTest,
                         ::testing::Combine(::testing::ValuesIn(kJobs),
                                            ::testing::ValuesIn(kAllDtypes)),
                         job_dtype_name);

class BackendTest : public ::testing::TestWithParam<JobParam> {};

TEST_P(BackendTest, NameAndCapabilities) {
  const JobParam job = GetParam();
  run_job(job, [&](ThreadRank& r) {
    check_name_and_capabilities(*r.backend, job_backend_name(job.backend));
  });
}

INSTANTIATE_TEST_SUITE_P(AllJobs, BackendTest, ::testing::ValuesIn(kJobs),
                         [](const ::testing::TestParamInfo<JobParam>& info) {
                           return job_name(info.param);
                         });

}  // namespace
}  // namespace threads
}  // namespace hvd

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  hvd::threads::g_jobs.clear();
  return result;
}
