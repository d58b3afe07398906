// Rank 0's negotiation: readiness, agreed order and mismatch messages.
#include <gtest/gtest.h>

#include "core/negotiation/message_table.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

Request allreduce_request(int rank, const std::string& name) {
  Request r;
  r.rank = rank;
  r.op_type = OpType::kAllreduce;
  r.name = name;
  r.dtype = DataType::kFloat32;
  r.shape = {4, 2};
  r.reduce_op = ReduceOp::kAverage;
  return r;
}

std::vector<Request> agreeing(int size, const std::string& name) {
  std::vector<Request> requests;
  for (int rank = 0; rank < size; ++rank) requests.push_back(allreduce_request(rank, name));
  return requests;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(MessageTableTest, ReadyOnlyWhenEveryRankSubmitted) {
  MessageTable table(3);
  table.add(allreduce_request(0, "a"));
  table.add(allreduce_request(2, "a"));
  EXPECT_TRUE(table.take_ready().empty());
  table.add(allreduce_request(1, "a"));
  auto ready = table.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].name, "a");
  EXPECT_EQ(ready[0].error_kind, ErrorKind::kNone);
  EXPECT_EQ(table.pending(), 0u);
  EXPECT_TRUE(table.take_ready().empty());
}

TEST(MessageTableTest, OrderIsTheOrderOfCompletion) {
  MessageTable table(2);
  // Rank 0 submits a, b, c; rank 1 submits c, a, b.
  for (const char* name : {"a", "b", "c"}) table.add(allreduce_request(0, name));
  for (const char* name : {"c", "a", "b"}) table.add(allreduce_request(1, name));
  auto ready = table.take_ready();
  ASSERT_EQ(ready.size(), 3u);
  EXPECT_EQ(ready[0].name, "c");
  EXPECT_EQ(ready[1].name, "a");
  EXPECT_EQ(ready[2].name, "b");
}

TEST(MessageTableTest, SameRankTwiceIsAnInternalError) {
  MessageTable table(2);
  table.add(allreduce_request(1, "a"));
  EXPECT_THROW(table.add(allreduce_request(1, "a")), Error);
  EXPECT_THROW(table.add(allreduce_request(2, "b")), Error);
}

TEST(BuildResponseTest, DtypeMismatchNamesTensorFieldValuesAndRanks) {
  auto requests = agreeing(3, "grad/w");
  requests[1].dtype = DataType::kFloat64;
  Response r = build_response(requests);
  EXPECT_EQ(r.error_kind, ErrorKind::kMismatch);
  EXPECT_TRUE(contains(r.error_message, "'grad/w'")) << r.error_message;
  EXPECT_TRUE(contains(r.error_message, "dtype")) << r.error_message;
  EXPECT_TRUE(contains(r.error_message, "float32 on ranks 0, 2")) << r.error_message;
  EXPECT_TRUE(contains(r.error_message, "float64 on rank 1")) << r.error_message;
}

TEST(BuildResponseTest, EachAllreduceFieldIsChecked) {
  struct Case {
    const char* field;
    void (*change)(Request&);
    const char* value;
  };
  const Case cases[] = {
      {"shape", [](Request& r) { r.shape = {8}; }, "[8] on rank 1"},
      {"reduce op", [](Request& r) { r.reduce_op = ReduceOp::kMax; }, "Max on rank 1"},
      {"prescale factor", [](Request& r) { r.prescale_factor = 0.5; }, "0.5 on rank 1"},
      {"postscale factor", [](Request& r) { r.postscale_factor = 2; }, "2 on rank 1"},
      {"device", [](Request& r) { r.device = Device::cuda(0); }, "cuda:0 on rank 1"},
      {"operation", [](Request& r) { r.op_type = OpType::kAllgather; }, "allgather on rank 1"},
  };
  for (const Case& c : cases) {
    auto requests = agreeing(2, "t");
    c.change(requests[1]);
    Response r = build_response(requests);
    EXPECT_EQ(r.error_kind, ErrorKind::kMismatch) << c.field;
    EXPECT_TRUE(contains(r.error_message, std::string(c.field) + " differs")) << r.error_message;
    EXPECT_TRUE(contains(r.error_message, c.value)) << r.error_message;
  }
}

TEST(BuildResponseTest, AllgatherAllowsDifferentFirstDimensionOnly) {
  auto requests = agreeing(3, "rows");
  for (auto& r : requests) r.op_type = OpType::kAllgather;
  requests[0].shape = {5, 2};
  requests[1].shape = {0, 2};
  requests[2].shape = {1, 2};
  Response ok = build_response(requests);
  EXPECT_EQ(ok.error_kind, ErrorKind::kNone) << ok.error_message;
  EXPECT_EQ(ok.first_dims, (std::vector<std::int64_t>{5, 0, 1}));

  requests[2].shape = {1, 3};
  Response bad = build_response(requests);
  EXPECT_EQ(bad.error_kind, ErrorKind::kMismatch);
  EXPECT_TRUE(contains(bad.error_message, "[1, 3] on rank 2")) << bad.error_message;

  requests[2].shape = {2};
  EXPECT_EQ(build_response(requests).error_kind, ErrorKind::kMismatch);
}

TEST(BuildResponseTest, BroadcastRootMustAgreeAndBeInRange) {
  auto requests = agreeing(2, "params");
  for (auto& r : requests) r.op_type = OpType::kBroadcast;
  requests[1].root_rank = 1;
  Response mismatch = build_response(requests);
  EXPECT_EQ(mismatch.error_kind, ErrorKind::kMismatch);
  EXPECT_TRUE(contains(mismatch.error_message, "root rank differs")) << mismatch.error_message;

  for (auto& r : requests) r.root_rank = 2;
  Response out_of_range = build_response(requests);
  EXPECT_EQ(out_of_range.error_kind, ErrorKind::kInvalidArgument);
  EXPECT_TRUE(contains(out_of_range.error_message, "root rank 2")) << out_of_range.error_message;
}

TEST(BuildResponseTest, LocalErrorsWinAndNameTheRank) {
  auto requests = agreeing(2, "t");
  requests[1].error = "output has 3 elements but input has 8";
  requests[1].dtype = DataType::kInt8;  // would also be a mismatch
  Response r = build_response(requests);
  EXPECT_EQ(r.error_kind, ErrorKind::kInvalidArgument);
  EXPECT_TRUE(contains(r.error_message, "rank 1: output has 3 elements")) << r.error_message;
}

TEST(BuildResponseTest, BoolAverageIsRejected) {
  auto requests = agreeing(2, "mask");
  for (auto& r : requests) r.dtype = DataType::kBool;
  EXPECT_EQ(build_response(requests).error_kind, ErrorKind::kInvalidArgument);
  for (auto& r : requests) r.reduce_op = ReduceOp::kMax;
  EXPECT_EQ(build_response(requests).error_kind, ErrorKind::kNone);
}

TEST(BuildResponseTest, AdasumNeedsFloatsAndPowerOfTwoRanks) {
  for (int size : {1, 2, 4, 8}) {
    auto requests = agreeing(size, "g");
    for (auto& r : requests) r.reduce_op = ReduceOp::kAdasum;
    for (DataType dtype :
         {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
      for (auto& r : requests) r.dtype = dtype;
      EXPECT_EQ(build_response(requests).error_kind, ErrorKind::kNone)
          << size << " ranks, " << dtype_name(dtype);
    }
    for (DataType dtype : {DataType::kInt32, DataType::kUInt8, DataType::kBool}) {
      for (auto& r : requests) r.dtype = dtype;
      const Response response = build_response(requests);
      EXPECT_EQ(response.error_kind, ErrorKind::kInvalidArgument) << dtype_name(dtype);
      EXPECT_TRUE(contains(response.error_message, "Adasum needs a floating-point tensor"))
          << response.error_message;
      EXPECT_TRUE(contains(response.error_message, dtype_name(dtype))) << response.error_message;
    }
  }
  for (int size : {3, 5, 6, 12}) {
    auto requests = agreeing(size, "g");
    for (auto& r : requests) r.reduce_op = ReduceOp::kAdasum;
    const Response response = build_response(requests);
    EXPECT_EQ(response.error_kind, ErrorKind::kInvalidArgument) << size;
    EXPECT_TRUE(contains(response.error_message, "power-of-two number of ranks"))
        << response.error_message;
    EXPECT_TRUE(contains(response.error_message, "has " + std::to_string(size)))
        << response.error_message;
  }
  // With joined ranks the set's size counts: 3 submitting of 4 runs, 3 of 6 not.
  auto three = agreeing(3, "g");
  for (auto& r : three) r.reduce_op = ReduceOp::kAdasum;
  EXPECT_EQ(build_response(three, 4).error_kind, ErrorKind::kNone);
  EXPECT_EQ(build_response(three, 6).error_kind, ErrorKind::kInvalidArgument);
}

// ---- Alltoall

std::vector<Request> alltoall_requests(const std::vector<std::vector<std::int64_t>>& splits,
                                       const std::vector<std::int64_t>& first_dims) {
  std::vector<Request> requests = agreeing(static_cast<int>(first_dims.size()), "tokens");
  for (std::size_t r = 0; r < requests.size(); ++r) {
    requests[r].op_type = OpType::kAlltoall;
    requests[r].shape = {first_dims[r], 2};
    requests[r].splits = splits[r];
  }
  return requests;
}

TEST(BuildResponseTest, AlltoallCarriesTheSplitsMatrix) {
  auto requests = alltoall_requests({{1, 0, 2}, {0, 0, 0}, {3, 1, 1}}, {3, 0, 5});
  Response r = build_response(requests);
  EXPECT_EQ(r.error_kind, ErrorKind::kNone) << r.error_message;
  EXPECT_EQ(r.splits, (std::vector<std::int64_t>{1, 0, 2, 0, 0, 0, 3, 1, 1}));
}

TEST(BuildResponseTest, AlltoallEmptySplitsAreEqualParts) {
  auto requests = alltoall_requests({{}, {}}, {4, 6});
  Response r = build_response(requests);
  EXPECT_EQ(r.error_kind, ErrorKind::kNone) << r.error_message;
  EXPECT_EQ(r.splits, (std::vector<std::int64_t>{2, 2, 3, 3}));

  requests[1].shape = {5, 2};
  Response bad = build_response(requests);
  EXPECT_EQ(bad.error_kind, ErrorKind::kInvalidArgument);
  EXPECT_TRUE(contains(bad.error_message, "rank 1: no splits given")) << bad.error_message;
  EXPECT_TRUE(contains(bad.error_message, "not divisible")) << bad.error_message;
}

TEST(BuildResponseTest, AlltoallBadSplitsNameTheRank) {
  // Wrong sum on rank 1, negative on rank 0, wrong length on rank 2.
  auto requests = alltoall_requests({{4, -1, 0}, {1, 1, 1}, {1, 1}}, {3, 4, 2});
  Response r = build_response(requests);
  EXPECT_EQ(r.error_kind, ErrorKind::kInvalidArgument);
  EXPECT_TRUE(contains(r.error_message, "'tokens'")) << r.error_message;
  EXPECT_TRUE(contains(r.error_message, "rank 0: negative split -1")) << r.error_message;
  EXPECT_TRUE(contains(r.error_message,
                       "rank 1: splits [1, 1, 1] sum to 3 but the first "
                       "dimension is 4"))
      << r.error_message;
  EXPECT_TRUE(contains(r.error_message, "rank 2: splits have 2 entries")) << r.error_message;
}

TEST(BuildResponseTest, AlltoallDtypeAndTrailingDimensionsMustAgree) {
  auto requests = alltoall_requests({{1, 1}, {1, 1}}, {2, 2});
  requests[1].dtype = DataType::kInt32;
  Response dtype = build_response(requests);
  EXPECT_EQ(dtype.error_kind, ErrorKind::kMismatch);
  EXPECT_TRUE(contains(dtype.error_message, "mismatch in alltoall")) << dtype.error_message;
  EXPECT_TRUE(contains(dtype.error_message, "int32 on rank 1")) << dtype.error_message;

  requests = alltoall_requests({{1, 1}, {1, 1}}, {2, 2});
  requests[0].shape = {2, 3};
  Response dims = build_response(requests);
  EXPECT_EQ(dims.error_kind, ErrorKind::kMismatch);
  EXPECT_TRUE(contains(dims.error_message, "shape beyond the first dimension"))
      << dims.error_message;
}

// ---- Reducescatter

std::vector<Request> reducescatter_requests(int size) {
  std::vector<Request> requests = agreeing(size, "grads");
  for (Request& r : requests) r.op_type = OpType::kReducescatter;
  return requests;
}

TEST(BuildResponseTest, ReducescatterChecksLikeAllreduce) {
  EXPECT_EQ(build_response(reducescatter_requests(3)).error_kind, ErrorKind::kNone);
  const std::pair<const char*, void (*)(Request&)> cases[] = {
      {"shape differs",
       [](Request& r) {
         r.shape = {5, 2};
       }},
      {"reduce op differs", [](Request& r) { r.reduce_op = ReduceOp::kSum; }},
      {"prescale factor differs", [](Request& r) { r.prescale_factor = 2; }},
      {"postscale factor differs", [](Request& r) { r.postscale_factor = 2; }},
  };
  for (const auto& [field, change] : cases) {
    auto requests = reducescatter_requests(3);
    change(requests[2]);
    Response r = build_response(requests);
    EXPECT_EQ(r.error_kind, ErrorKind::kMismatch) << field;
    EXPECT_TRUE(contains(r.error_message, field)) << r.error_message;
  }
}

TEST(BuildResponseTest, ReducescatterOnlySumOrAverage) {
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    auto requests = reducescatter_requests(2);
    for (auto& r : requests) r.reduce_op = op;
    Response r = build_response(requests);
    EXPECT_EQ(r.error_kind, ErrorKind::kInvalidArgument) << reduce_op_name(op);
    EXPECT_TRUE(contains(r.error_message, "Sum or Average")) << r.error_message;
  }
  // Max on one rank only: still an invalid argument, naming that rank.
  auto requests = reducescatter_requests(3);
  requests[1].reduce_op = ReduceOp::kMax;
  Response r = build_response(requests);
  EXPECT_EQ(r.error_kind, ErrorKind::kInvalidArgument);
  EXPECT_TRUE(contains(r.error_message, "rank 1: Max")) << r.error_message;

  requests = reducescatter_requests(2);
  for (auto& q : requests) q.dtype = DataType::kBool;
  EXPECT_EQ(build_response(requests).error_kind, ErrorKind::kInvalidArgument);  // Average
  for (auto& q : requests) q.reduce_op = ReduceOp::kSum;
  EXPECT_EQ(build_response(requests).error_kind, ErrorKind::kNone);
}

Request group_member(int rank, const std::string& group, int index, int group_size) {
  Request r = allreduce_request(rank, group + "." + std::to_string(index));
  r.group_id = group;
  r.group_size = group_size;
  return r;
}

TEST(MessageTableGroupTest, HeldBackUntilEveryMemberIsComplete) {
  MessageTable table(2);
  for (int rank = 0; rank < 2; ++rank) table.add(group_member(rank, "g", 0, 3));
  table.add(group_member(0, "g", 1, 3));
  table.add(group_member(1, "g", 2, 3));
  table.add(allreduce_request(0, "solo"));
  table.add(allreduce_request(1, "solo"));
  auto ready = table.take_ready();
  // Only the ungrouped tensor; g.0 (complete) waits for g.1 and g.2.
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].name, "solo");
  EXPECT_EQ(table.pending(), 3u);
  // The held member is not reported as waiting for a rank.
  for (const PendingTensor& t : table.pending_tensors()) EXPECT_NE(t.name, "g.0");

  table.add(group_member(1, "g", 1, 3));
  EXPECT_TRUE(table.take_ready().empty());
  table.add(group_member(0, "g", 2, 3));
  ready = table.take_ready();
  ASSERT_EQ(ready.size(), 3u);
  EXPECT_EQ(table.pending(), 0u);
}

TEST(MessageTableGroupTest, ReleasedConsecutivelyInMemberOrder) {
  MessageTable table(2);
  // Members complete in the order 2, 0, 1, interleaved with other tensors.
  table.add(group_member(0, "g", 2, 3));
  table.add(group_member(1, "g", 2, 3));
  table.add(allreduce_request(0, "a"));
  table.add(allreduce_request(1, "a"));
  for (int rank = 0; rank < 2; ++rank) table.add(group_member(rank, "g", 0, 3));
  table.add(group_member(1, "g", 1, 3));
  table.add(allreduce_request(0, "b"));
  table.add(allreduce_request(1, "b"));
  table.add(group_member(0, "g", 1, 3));
  table.add(allreduce_request(0, "c"));
  table.add(allreduce_request(1, "c"));
  auto ready = table.take_ready();
  std::vector<std::string> names;
  for (const Response& r : ready) {
    EXPECT_EQ(r.error_kind, ErrorKind::kNone) << r.error_message;
    names.push_back(r.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "g.0", "g.1", "g.2", "c"}));
}

TEST(MessageTableGroupTest, MemberOrderIsNumericNotLexicographic) {
  MessageTable table(1);
  for (int i = 11; i >= 0; --i) table.add(group_member(0, "g", i, 12));
  auto ready = table.take_ready();
  ASSERT_EQ(ready.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(ready[i].name, "g." + std::to_string(i));
}

TEST(MessageTableGroupTest, MismatchInOneMemberFailsTheWholeGroup) {
  MessageTable table(2);
  for (int i = 0; i < 3; ++i) {
    for (int rank = 0; rank < 2; ++rank) {
      Request r = group_member(rank, "g", i, 3);
      if (i == 1 && rank == 1) r.shape = {4, 3};
      table.add(r);
    }
  }
  auto ready = table.take_ready();
  ASSERT_EQ(ready.size(), 3u);
  for (const Response& r : ready) {
    EXPECT_EQ(r.error_kind, ErrorKind::kMismatch) << r.name;
    EXPECT_EQ(r.error_message, ready[0].error_message);
  }
  EXPECT_TRUE(contains(ready[0].error_message, "group 'g'")) << ready[0].error_message;
  EXPECT_TRUE(contains(ready[0].error_message, "'g.1'")) << ready[0].error_message;
  EXPECT_TRUE(contains(ready[0].error_message, "shape")) << ready[0].error_message;
  EXPECT_EQ(table.pending(), 0u);
}

TEST(MessageTableGroupTest, GroupSizeDifferingAcrossRanksIsAMismatch) {
  MessageTable table(2);
  for (int i = 0; i < 2; ++i) {
    table.add(group_member(0, "g", i, 2));
    table.add(group_member(1, "g", i, 3));
  }
  auto ready = table.take_ready();
  ASSERT_EQ(ready.size(), 2u);
  for (const Response& r : ready) {
    EXPECT_EQ(r.error_kind, ErrorKind::kMismatch) << r.name;
    EXPECT_TRUE(contains(r.error_message, "group size")) << r.error_message;
    EXPECT_TRUE(contains(r.error_message, "2 on rank 0")) << r.error_message;
    EXPECT_TRUE(contains(r.error_message, "3 on rank 1")) << r.error_message;
  }
}

TEST(MessageTableGroupTest, GroupedOnOneRankOnlyIsAMismatch) {
  MessageTable table(2);
  table.add(group_member(0, "g", 0, 1));
  table.add(allreduce_request(1, "g.0"));
  auto ready = table.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].error_kind, ErrorKind::kMismatch);
  EXPECT_TRUE(contains(ready[0].error_message, "no group")) << ready[0].error_message;
}

// ---- join ------------------------------------------------------------------

Request join_request(int rank) {
  Request r;
  r.rank = rank;
  r.op_type = OpType::kJoin;
  r.name = "join";
  return r;
}

TEST(MessageTableJoinTest, TensorsProceedWithoutJoinedRanks) {
  MessageTable table(3);
  table.add(allreduce_request(0, "a"));
  table.add(join_request(1));
  EXPECT_TRUE(table.take_ready().empty());  // rank 2 has neither submitted nor joined
  table.add(allreduce_request(2, "a"));
  auto ready = table.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].name, "a");
  EXPECT_EQ(ready[0].error_kind, ErrorKind::kNone);
  EXPECT_EQ(ready[0].joined_ranks, std::vector<std::int32_t>{1});
  EXPECT_EQ(ready[0].joined_template.shape, (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(ready[0].joined_template.dtype, DataType::kFloat32);
}

TEST(MessageTableJoinTest, AJoinReleasesTensorsThatWaitedOnlyForThatRank) {
  MessageTable table(2);
  table.add(allreduce_request(0, "b"));
  table.add(allreduce_request(0, "a"));
  EXPECT_TRUE(table.take_ready().empty());
  table.add(join_request(1));
  auto ready = table.take_ready();
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].name, "a");  // released together, in name order
  EXPECT_EQ(ready[1].name, "b");
  EXPECT_EQ(table.pending(), 0u);
}

TEST(MessageTableJoinTest, JoinCompletesWhenEveryRankJoinedAndNamesTheLast) {
  MessageTable table(3);
  table.add(join_request(2));
  table.add(join_request(0));
  EXPECT_TRUE(table.take_ready().empty());
  table.add(allreduce_request(1, "last"));  // rank 1 is still training
  auto ready = table.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].joined_ranks, (std::vector<std::int32_t>{0, 2}));
  table.add(join_request(1));
  ready = table.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].op_type, OpType::kJoin);
  EXPECT_EQ(ready[0].last_joined_rank, 1);
  EXPECT_TRUE(table.joined().empty());
  // A new round: tensors wait for every rank again.
  table.add(allreduce_request(0, "next"));
  EXPECT_TRUE(table.take_ready().empty());
}

// As in Horovod: allreduces of every op run with the joined ranks' zeros;
// collectives that need their data fail, naming them.
TEST(MessageTableJoinTest, AllreducesOfEveryOpTakeZerosOtherOpsFail) {
  MessageTable table(3);
  table.add(join_request(1));
  Request max0 = allreduce_request(0, "m");
  Request max2 = allreduce_request(2, "m");
  max0.reduce_op = max2.reduce_op = ReduceOp::kMax;
  table.add(max0);
  table.add(max2);
  Request gather0 = allreduce_request(0, "g");
  Request gather2 = allreduce_request(2, "g");
  gather0.op_type = gather2.op_type = OpType::kAllgather;
  table.add(gather0);
  table.add(gather2);
  auto ready = table.take_ready();
  ASSERT_EQ(ready.size(), 2u);
  for (const Response& r : ready) EXPECT_EQ(r.joined_ranks, std::vector<std::int32_t>{1});
  EXPECT_EQ(ready[0].error_kind, ErrorKind::kNone) << ready[0].error_message;
  EXPECT_EQ(ready[0].joined_template.reduce_op, ReduceOp::kMax);
  EXPECT_EQ(ready[1].error_kind, ErrorKind::kInvalidArgument);
  EXPECT_TRUE(contains(ready[1].error_message, "allgather")) << ready[1].error_message;
  EXPECT_TRUE(contains(ready[1].error_message, "rank 1 joined")) << ready[1].error_message;
}

TEST(MessageTableJoinTest, JoinedRanksAreNotReportedAsStalled) {
  MessageTable table(3);
  table.add(join_request(1));
  table.add(allreduce_request(0, "a"));
  auto pending = table.pending_tensors();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].submitted_ranks, std::vector<int>{0});
  EXPECT_EQ(pending[0].joined_ranks, std::vector<int>{1});  // waits for rank 2 only
}

}  // namespace
}  // namespace hvd
