#include "core/negotiation/message.h"

#include <cstring>
#include <type_traits>

#include "base/check.h"

namespace hvd {
namespace {

// Little helpers for a flat binary encoding; both ends are the same build
// on the same architecture, so plain memcpy of scalars is enough.
class Writer {
 public:
  template <typename T>
  void scalar(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const char* bytes = reinterpret_cast<const char*>(&value);
    out_.append(bytes, sizeof(T));
  }
  void string(const std::string& text) {
    scalar<std::uint64_t>(text.size());
    out_.append(text);
  }
  void dims(const std::vector<std::int64_t>& values) {
    scalar<std::uint64_t>(values.size());
    for (std::int64_t v : values) scalar(v);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  T scalar() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string string() {
    auto n = count(1);
    std::string text = in_.substr(pos_, n);
    pos_ += n;
    return text;
  }
  std::vector<std::int64_t> dims() {
    std::vector<std::int64_t> values(count(sizeof(std::int64_t)));
    for (auto& v : values) v = scalar<std::int64_t>();
    return values;
  }
  // A count of items of at least `min_bytes_each` that the rest of the
  // message can hold: a corrupt count fails here, before any allocation.
  std::uint64_t count(std::size_t min_bytes_each) {
    auto n = scalar<std::uint64_t>();
    HVD_CHECK(n <= (in_.size() - pos_) / min_bytes_each, Error,
              "negotiation message announces " << n << " items but has " << in_.size() - pos_
                                               << " bytes left");
    return n;
  }
  void expect_end() const {
    HVD_CHECK(pos_ == in_.size(), Error,
              "negotiation message has " << in_.size() - pos_ << " trailing bytes");
  }

 private:
  void need(std::uint64_t n) const {
    HVD_CHECK(n <= in_.size() - pos_, Error,
              "truncated negotiation message (" << in_.size() << " bytes)");
  }
  const std::string& in_;
  std::size_t pos_ = 0;
};

template <typename Enum>
Enum checked_enum(std::uint8_t raw, std::uint8_t count, const char* what) {
  HVD_CHECK(raw < count, Error, "negotiation message has invalid " << what << " " << int(raw));
  return static_cast<Enum>(raw);
}

// The fewest bytes one encoded Request takes (every string and list empty).
constexpr std::size_t kMinRequestBytes = 4 + 1 + 8 + 1 + 8 + 1 + 4 + 8 + 8 + 1 + 4 + 8 + 8 + 4 + 8;
// The fewest bytes one encoded Response takes.
constexpr std::size_t kMinResponseBytes = 1 + 8 + 1 + 8 + 8 + 8 + 8 + 4;

void write_request(Writer& w, const Request& r) {
  w.scalar(r.rank);
  w.scalar(static_cast<std::uint8_t>(r.op_type));
  w.string(r.name);
  w.scalar(static_cast<std::uint8_t>(r.dtype));
  w.dims(r.shape);
  w.scalar(static_cast<std::uint8_t>(r.reduce_op));
  w.scalar(r.root_rank);
  w.scalar(r.prescale_factor);
  w.scalar(r.postscale_factor);
  w.scalar(static_cast<std::uint8_t>(r.device.type));
  w.scalar<std::int32_t>(r.device.index);
  w.dims(r.splits);
  w.string(r.group_id);
  w.scalar<std::int32_t>(r.group_size);
  w.string(r.error);
}

Request read_request(Reader& r) {
  Request q;
  q.rank = r.scalar<std::int32_t>();
  q.op_type = checked_enum<OpType>(r.scalar<std::uint8_t>(), kNumOpTypes, "operation");
  q.name = r.string();
  q.dtype = checked_enum<DataType>(r.scalar<std::uint8_t>(), kNumDataTypes, "dtype");
  q.shape = r.dims();
  q.reduce_op = checked_enum<ReduceOp>(r.scalar<std::uint8_t>(), kNumReduceOps, "reduce op");
  q.root_rank = r.scalar<std::int32_t>();
  q.prescale_factor = r.scalar<double>();
  q.postscale_factor = r.scalar<double>();
  q.device.type = checked_enum<DeviceType>(r.scalar<std::uint8_t>(), 2, "device");
  q.device.index = r.scalar<std::int32_t>();
  q.splits = r.dims();
  q.group_id = r.string();
  q.group_size = r.scalar<std::int32_t>();
  q.error = r.string();
  return q;
}

}  // namespace

const char* op_type_name(OpType type) {
  switch (type) {
    case OpType::kAllreduce: return "allreduce";
    case OpType::kAllgather: return "allgather";
    case OpType::kBroadcast: return "broadcast";
    case OpType::kBarrier: return "barrier";
    case OpType::kAlltoall: return "alltoall";
    case OpType::kReducescatter: return "reducescatter";
    case OpType::kJoin: return "join";
  }
  return "unknown";
}

std::exception_ptr make_error(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return std::make_exception_ptr(InvalidArgument(message));
    case ErrorKind::kMismatch: return std::make_exception_ptr(Mismatch(message));
    case ErrorKind::kRankFailure: return std::make_exception_ptr(RankFailure(message));
    case ErrorKind::kNone: break;
  }
  return std::make_exception_ptr(Error(message));
}

std::string serialize(const RequestList& list) {
  Writer w;
  w.scalar<std::uint8_t>(list.shutdown);
  w.scalar<std::uint64_t>(list.requests.size());
  for (const Request& r : list.requests) write_request(w, r);
  return w.take();
}

RequestList parse_request_list(const std::string& bytes) {
  Reader r(bytes);
  RequestList list;
  list.shutdown = r.scalar<std::uint8_t>() != 0;
  list.requests.resize(r.count(kMinRequestBytes));
  for (Request& q : list.requests) q = read_request(r);
  r.expect_end();
  return list;
}

std::string serialize(const ResponseList& list) {
  Writer w;
  w.scalar<std::uint64_t>(list.shutdown_ranks.size());
  for (std::int32_t rank : list.shutdown_ranks) w.scalar(rank);
  w.string(list.stall_error);
  w.scalar(list.fusion_threshold);
  w.scalar(list.cycle_time_us);
  w.scalar<std::uint64_t>(list.responses.size());
  for (const Response& r : list.responses) {
    w.scalar(static_cast<std::uint8_t>(r.op_type));
    w.string(r.name);
    w.scalar(static_cast<std::uint8_t>(r.error_kind));
    w.string(r.error_message);
    w.dims(r.first_dims);
    w.dims(r.splits);
    w.scalar<std::uint64_t>(r.joined_ranks.size());
    for (std::int32_t rank : r.joined_ranks) w.scalar(rank);
    if (!r.joined_ranks.empty()) write_request(w, r.joined_template);
    w.scalar(r.last_joined_rank);
  }
  return w.take();
}

ResponseList parse_response_list(const std::string& bytes) {
  Reader r(bytes);
  ResponseList list;
  list.shutdown_ranks.resize(r.count(sizeof(std::int32_t)));
  for (std::int32_t& rank : list.shutdown_ranks) rank = r.scalar<std::int32_t>();
  list.stall_error = r.string();
  list.fusion_threshold = r.scalar<std::int64_t>();
  list.cycle_time_us = r.scalar<std::int64_t>();
  list.responses.resize(r.count(kMinResponseBytes));
  for (Response& p : list.responses) {
    p.op_type = checked_enum<OpType>(r.scalar<std::uint8_t>(), kNumOpTypes, "operation");
    p.name = r.string();
    p.error_kind = checked_enum<ErrorKind>(r.scalar<std::uint8_t>(), 4, "error kind");
    p.error_message = r.string();
    p.first_dims = r.dims();
    p.splits = r.dims();
    p.joined_ranks.resize(r.count(sizeof(std::int32_t)));
    for (std::int32_t& rank : p.joined_ranks) rank = r.scalar<std::int32_t>();
    if (!p.joined_ranks.empty()) p.joined_template = read_request(r);
    p.last_joined_rank = r.scalar<std::int32_t>();
  }
  r.expect_end();
  return list;
}

}  // namespace hvd
