// main() of the multi-process suites: hvd::init(), every test, hvd::shutdown().
//
// Only rank 0 prints GoogleTest's usual output. The other ranks print one
// line per failed assertion and per failed test, prefixed with their rank,
// so that a failure on any rank is visible and attributable. The exit code is
// non-zero on every rank whose tests failed (mpirun then fails too).
#include <gtest/gtest.h>

#include <cstdio>
#include <exception>

#include "horovodcpp/horovodcpp.h"

namespace {

class RankFailurePrinter : public testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}

  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] FAILED at %s:%d\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "(unknown file)", result.line_number(),
                 result.message());
    std::fflush(stderr);
  }

  void OnTestEnd(const testing::TestInfo& info) override {
    if (!info.result()->Failed()) return;
    std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
    std::fflush(stderr);
  }

  void OnTestProgramEnd(const testing::UnitTest& unit) override {
    if (unit.failed_test_count() == 0) return;
    std::fprintf(stderr, "[rank %d] %d of %d tests FAILED\n", rank_, unit.failed_test_count(),
                 unit.test_to_run_count());
    std::fflush(stderr);
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);

  int rank = -1;
  try {
    hvd::init();
    rank = hvd::rank();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank ?] hvd::init() failed: %s\n", e.what());
    return 1;
  }

  if (rank != 0) {
    testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }

  const int result = RUN_ALL_TESTS();

  int status = result == 0 ? 0 : 1;
  try {
    hvd::shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] hvd::shutdown() failed: %s\n", rank, e.what());
    status = 1;
  }
  return status;
}
