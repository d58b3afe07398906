// Result plans: the result shape and per-rank counts of allgather,
// alltoall and reducescatter, and Average's divisor.
#include <gtest/gtest.h>

#include "base/check.h"
#include "core/execution/result_plan.h"

namespace hvd {
namespace {

Request shaped(std::vector<std::int64_t> shape) {
  Request request;
  request.name = "t";
  request.shape = std::move(shape);
  return request;
}

TEST(ResultPlanTest, GatherStacksEveryRanksRows) {
  Response response;
  response.first_dims = {2, 0, 3};
  const ResultPlan plan = gather_plan(shaped({2, 4, 5}), response);
  EXPECT_EQ(plan.shape, (std::vector<std::int64_t>{5, 4, 5}));
  EXPECT_EQ(plan.counts, (std::vector<std::size_t>{40, 0, 60}));
}

TEST(ResultPlanTest, ExchangeSendsItsRowAndReceivesItsColumn) {
  Response response;
  // Rows: senders; columns: receivers.
  response.splits = {1, 2, 3,  //
                     4, 5, 6,  //
                     7, 8, 9};
  const ResultPlan plan = exchange_plan(shaped({6, 2}), response, /*rank=*/1, /*size=*/3);
  EXPECT_EQ(plan.send_counts, (std::vector<std::size_t>{8, 10, 12}));
  EXPECT_EQ(plan.received_splits, (std::vector<std::int64_t>{2, 5, 8}));
  EXPECT_EQ(plan.counts, (std::vector<std::size_t>{4, 10, 16}));
  EXPECT_EQ(plan.shape, (std::vector<std::int64_t>{15, 2}));
}

TEST(ResultPlanTest, ExchangeRefusesAMalformedMatrix) {
  Response response;
  response.name = "t";
  response.splits = {1, 2, 3};
  EXPECT_THROW(exchange_plan(shaped({3}), response, 0, 2), Error);
}

TEST(ResultPlanTest, ScatterGivesTheFirstRanksOneRowMore) {
  const Request request = shaped({7, 3});
  const ResultPlan first = scatter_plan(request, /*rank=*/0, /*size=*/3);
  EXPECT_EQ(first.counts, (std::vector<std::size_t>{9, 6, 6}));
  EXPECT_EQ(first.shape, (std::vector<std::int64_t>{3, 3}));
  EXPECT_EQ(scatter_plan(request, 2, 3).shape, (std::vector<std::int64_t>{2, 3}));
}

TEST(ResultPlanTest, OnlyAverageDividesByTheSetsSize) {
  EXPECT_EQ(average_divisor(ReduceOp::kAverage, 4), 4.0);
  EXPECT_EQ(average_divisor(ReduceOp::kSum, 4), 1.0);
  EXPECT_EQ(average_divisor(ReduceOp::kAdasum, 4), 1.0);
}

}  // namespace
}  // namespace hvd
