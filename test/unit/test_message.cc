// Round trips of the negotiation messages and rejection of corrupt input.
#include <gtest/gtest.h>

#include "core/negotiation/message.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

Request sample_request(int rank, const std::string& name) {
  Request r;
  r.rank = rank;
  r.op_type = OpType::kBroadcast;
  r.name = name;
  r.dtype = DataType::kBFloat16;
  r.shape = {3, 0, 7};
  r.reduce_op = ReduceOp::kProduct;
  r.root_rank = 2;
  r.prescale_factor = 0.125;
  r.postscale_factor = -3.5;
  r.device = Device::cuda(1);
  r.error = "output has 3 elements but input has 4";
  return r;
}

void expect_equal(const Request& a, const Request& b) {
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.op_type, b.op_type);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.reduce_op, b.reduce_op);
  EXPECT_EQ(a.root_rank, b.root_rank);
  EXPECT_EQ(a.prescale_factor, b.prescale_factor);
  EXPECT_EQ(a.postscale_factor, b.postscale_factor);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.splits, b.splits);
  EXPECT_EQ(a.group_id, b.group_id);
  EXPECT_EQ(a.group_size, b.group_size);
  EXPECT_EQ(a.error, b.error);
}

TEST(MessageTest, RequestListRoundTrip) {
  RequestList list;
  list.shutdown = true;
  list.requests = {sample_request(1, "grad/fc1.weight"), sample_request(3, "")};
  list.requests[1].op_type = OpType::kAllgather;
  list.requests[1].shape = {};
  list.requests[1].error = "";

  RequestList back = parse_request_list(serialize(list));
  EXPECT_TRUE(back.shutdown);
  ASSERT_EQ(back.requests.size(), 2u);
  expect_equal(back.requests[0], list.requests[0]);
  expect_equal(back.requests[1], list.requests[1]);
}

TEST(MessageTest, GroupFieldsRoundTrip) {
  RequestList list;
  list.requests = {sample_request(0, "grads.0"), sample_request(1, "solo")};
  list.requests[0].op_type = OpType::kAllreduce;
  list.requests[0].group_id = "grads";
  list.requests[0].group_size = 7;

  RequestList back = parse_request_list(serialize(list));
  ASSERT_EQ(back.requests.size(), 2u);
  expect_equal(back.requests[0], list.requests[0]);
  expect_equal(back.requests[1], list.requests[1]);
  EXPECT_EQ(back.requests[0].group_id, "grads");
  EXPECT_EQ(back.requests[0].group_size, 7);
  EXPECT_TRUE(back.requests[1].group_id.empty());
  EXPECT_EQ(back.requests[1].group_size, 0);
}

TEST(MessageTest, AlltoallAndReducescatterRoundTrip) {
  RequestList list;
  list.requests = {sample_request(2, "tokens"), sample_request(0, "grads")};
  list.requests[0].op_type = OpType::kAlltoall;
  list.requests[0].splits = {3, 0, 1, 7};
  list.requests[1].op_type = OpType::kReducescatter;
  list.requests[1].reduce_op = ReduceOp::kAverage;
  RequestList back = parse_request_list(serialize(list));
  ASSERT_EQ(back.requests.size(), 2u);
  expect_equal(back.requests[0], list.requests[0]);
  expect_equal(back.requests[1], list.requests[1]);

  ResponseList responses;
  Response alltoall;
  alltoall.op_type = OpType::kAlltoall;
  alltoall.name = "tokens";
  alltoall.splits = {1, 2, 0, 3};  // 2 x 2, row r = rank r's splits
  Response reducescatter;
  reducescatter.op_type = OpType::kReducescatter;
  reducescatter.name = "grads";
  responses.responses = {alltoall, reducescatter};
  ResponseList parsed = parse_response_list(serialize(responses));
  ASSERT_EQ(parsed.responses.size(), 2u);
  EXPECT_EQ(parsed.responses[0].op_type, OpType::kAlltoall);
  EXPECT_EQ(parsed.responses[0].splits, alltoall.splits);
  EXPECT_EQ(parsed.responses[1].op_type, OpType::kReducescatter);
  EXPECT_TRUE(parsed.responses[1].splits.empty());
  EXPECT_STREQ(op_type_name(OpType::kAlltoall), "alltoall");
  EXPECT_STREQ(op_type_name(OpType::kReducescatter), "reducescatter");
}

TEST(MessageTest, EmptyListsRoundTrip) {
  RequestList requests = parse_request_list(serialize(RequestList{}));
  EXPECT_FALSE(requests.shutdown);
  EXPECT_TRUE(requests.requests.empty());
  ResponseList responses = parse_response_list(serialize(ResponseList{}));
  EXPECT_TRUE(responses.shutdown_ranks.empty());
  EXPECT_TRUE(responses.stall_error.empty());
  EXPECT_TRUE(responses.responses.empty());
}

TEST(MessageTest, ResponseListRoundTrip) {
  ResponseList list;
  list.shutdown_ranks = {0, 5};
  list.stall_error = "tensor 'w' (allreduce) submitted by rank 0; missing on rank 1";
  Response ok;
  ok.op_type = OpType::kAllgather;
  ok.name = "embeddings";
  ok.first_dims = {4, 0, 9};
  Response failed;
  failed.op_type = OpType::kAllreduce;
  failed.name = "loss";
  failed.error_kind = ErrorKind::kMismatch;
  failed.error_message = "dtype differs";
  list.responses = {ok, failed};

  ResponseList back = parse_response_list(serialize(list));
  EXPECT_EQ(back.shutdown_ranks, list.shutdown_ranks);
  EXPECT_EQ(back.stall_error, list.stall_error);
  ASSERT_EQ(back.responses.size(), 2u);
  EXPECT_EQ(back.responses[0].op_type, OpType::kAllgather);
  EXPECT_EQ(back.responses[0].name, "embeddings");
  EXPECT_EQ(back.responses[0].error_kind, ErrorKind::kNone);
  EXPECT_EQ(back.responses[0].first_dims, ok.first_dims);
  EXPECT_EQ(back.responses[1].error_kind, ErrorKind::kMismatch);
  EXPECT_EQ(back.responses[1].error_message, "dtype differs");
}

TEST(MessageTest, JoinAndTuningFieldsRoundTrip) {
  ResponseList list;
  list.fusion_threshold = 16 << 20;
  list.cycle_time_us = 500;
  Response with_joined;
  with_joined.name = "grad";
  with_joined.joined_ranks = {1, 3};
  with_joined.joined_template = sample_request(0, "grad");
  Response join;
  join.op_type = OpType::kJoin;
  join.name = "join";
  join.last_joined_rank = 2;
  list.responses = {with_joined, join};

  ResponseList back = parse_response_list(serialize(list));
  EXPECT_EQ(back.fusion_threshold, 16 << 20);
  EXPECT_EQ(back.cycle_time_us, 500);
  ASSERT_EQ(back.responses.size(), 2u);
  EXPECT_EQ(back.responses[0].joined_ranks, with_joined.joined_ranks);
  EXPECT_EQ(back.responses[0].joined_template.name, "grad");
  EXPECT_EQ(back.responses[0].joined_template.shape, with_joined.joined_template.shape);
  EXPECT_EQ(back.responses[0].joined_template.dtype, with_joined.joined_template.dtype);
  EXPECT_EQ(back.responses[1].op_type, OpType::kJoin);
  EXPECT_EQ(back.responses[1].last_joined_rank, 2);
  EXPECT_TRUE(back.responses[1].joined_ranks.empty());
  // Defaults: nothing to change.
  ResponseList plain = parse_response_list(serialize(ResponseList{}));
  EXPECT_EQ(plain.fusion_threshold, -1);
  EXPECT_EQ(plain.cycle_time_us, -1);
}

TEST(MessageTest, TruncatedInputIsRejectedAtEveryLength) {
  RequestList list;
  list.requests = {sample_request(0, "w")};
  const std::string bytes = serialize(list);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THROW(parse_request_list(bytes.substr(0, n)), Error) << "length " << n;
  }
  EXPECT_THROW(parse_request_list(bytes + "x"), Error);
}

TEST(MessageTest, InvalidEnumIsRejected) {
  RequestList list;
  list.requests = {sample_request(0, "w")};
  std::string bytes = serialize(list);
  // Layout: shutdown(1) count(8) rank(4) op_type(1) ...
  bytes[1 + 8 + 4] = 9;
  EXPECT_THROW(parse_request_list(bytes), Error);
  bytes[1 + 8 + 4] = kNumOpTypes;  // one past the last operation
  EXPECT_THROW(parse_request_list(bytes), Error);
  bytes[1 + 8 + 4] = kNumOpTypes - 1;
  EXPECT_EQ(parse_request_list(bytes).requests[0].op_type, OpType::kJoin);
}

TEST(MessageTest, ErrorKindsMapToExceptionTypes) {
  EXPECT_THROW(std::rethrow_exception(make_error(ErrorKind::kMismatch, "m")), Mismatch);
  EXPECT_THROW(std::rethrow_exception(make_error(ErrorKind::kInvalidArgument, "i")),
               InvalidArgument);
  EXPECT_THROW(std::rethrow_exception(make_error(ErrorKind::kRankFailure, "r")), RankFailure);
}

}  // namespace
}  // namespace hvd
