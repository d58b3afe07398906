// The negotiation messages: each rank sends its new Requests to rank 0,
// which answers every rank with the same ordered list of Responses.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "horovodcpp/types.h"

namespace hvd {

enum class OpType : std::uint8_t {
  kAllreduce,
  kAllgather,
  kBroadcast,
  kBarrier,
  kAlltoall,
  kReducescatter,
  kJoin,  // this rank has no more batches; see join() in horovodcpp.h
};
constexpr std::uint8_t kNumOpTypes = 7;
const char* op_type_name(OpType type);

// One rank's submission of one named tensor.
struct Request {
  std::int32_t rank = 0;
  OpType op_type = OpType::kAllreduce;
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<std::int64_t> shape;
  ReduceOp reduce_op = ReduceOp::kSum;
  std::int32_t root_rank = 0;
  double prescale_factor = 1.0;
  double postscale_factor = 1.0;
  Device device;
  // Alltoall: rows (first-dimension slices) this rank sends to each rank.
  std::vector<std::int64_t> splits;
  // Grouped collectives: the group's name (empty: not in a group) and how
  // many members it has. Members are named "<group_id>.<index>"; rank 0
  // releases them only once every member is ready on every rank.
  std::string group_id;
  std::int32_t group_size = 0;
  // Non-empty if the submission failed local validation; rank 0 then fails
  // the tensor on every rank with this message.
  std::string error;
  // This rank's flight recorder record of it (0: none). Not sent.
  std::uint64_t flight_number = 0;
};

struct RequestList {
  std::vector<Request> requests;
  bool shutdown = false;  // this rank is shutting down
};

// How an error Response is raised on each rank.
enum class ErrorKind : std::uint8_t { kNone, kInvalidArgument, kMismatch, kRankFailure };
std::exception_ptr make_error(ErrorKind kind, const std::string& message);

// Rank 0's verdict on one tensor, executed by every rank in list order.
struct Response {
  OpType op_type = OpType::kAllreduce;
  std::string name;
  ErrorKind error_kind = ErrorKind::kNone;
  std::string error_message;
  // Allgather: the first dimension of each rank's tensor, indexed by rank.
  std::vector<std::int64_t> first_dims;
  // Alltoall: the size x size matrix of rows sent, row-major: element
  // [r * size + j] is how many rows rank r sends to rank j.
  std::vector<std::int64_t> splits;
  // Ranks that called join() without submitting this tensor. They take part
  // with zeros of `joined_template`'s dtype and shape (allreduce) or not at
  // all (barrier, errors); Average still divides by every rank (Horovod).
  std::vector<std::int32_t> joined_ranks;
  Request joined_template;  // meaningful only when joined_ranks is non-empty
  // Join: the last rank to call join(), what join() returns on every rank.
  std::int32_t last_joined_rank = -1;
};

struct ResponseList {
  std::vector<Response> responses;
  // Ranks that called shutdown(); if any did, every rank stops after this
  // cycle and fails what is still pending.
  std::vector<std::int32_t> shutdown_ranks;
  // Set by rank 0's stall inspector once a tensor has waited for some ranks
  // longer than HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS: every rank then
  // stops after this cycle and fails what is pending with this message.
  std::string stall_error;
  // Set by rank 0's autotuner: every rank switches to these values after
  // this cycle, so all plan fusion alike. -1: unchanged.
  std::int64_t fusion_threshold = -1;
  std::int64_t cycle_time_us = -1;
};

std::string serialize(const RequestList& list);
std::string serialize(const ResponseList& list);
// Throw hvd::Error on truncated or malformed input.
RequestList parse_request_list(const std::string& bytes);
ResponseList parse_response_list(const std::string& bytes);

}  // namespace hvd
