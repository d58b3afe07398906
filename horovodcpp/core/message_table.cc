#include "core/message_table.h"

#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "core/check.h"
#include "horovodcpp/tensor.h"

namespace hvd {
namespace {

using ValueOf = std::function<std::string(const Request&)>;

std::string number_str(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

std::string ranks_str(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

// "float32 on ranks 0, 2; float64 on rank 1", or empty when all agree.
// `key` decides equality; `value` (default: the key) is what is printed.
std::string disagreement(const std::vector<Request>& requests, const ValueOf& key,
                         const ValueOf& value = nullptr) {
  const ValueOf& shown = value ? value : key;
  std::map<std::string, std::vector<int>> ranks_by_value;  // ordered: stable messages
  std::set<std::string> keys;
  for (const Request& r : requests) {
    ranks_by_value[shown(r)].push_back(r.rank);
    keys.insert(key(r));
  }
  if (keys.size() <= 1) return "";
  std::ostringstream out;
  bool first = true;
  for (const auto& [text, ranks] : ranks_by_value) {
    out << (first ? "" : "; ") << text << " on " << ranks_str(ranks);
    first = false;
  }
  return out.str();
}

struct FieldCheck {
  const char* field;
  ValueOf key;
  ValueOf value;  // null: print the key
};

std::vector<std::int64_t> trailing_dims(const std::vector<std::int64_t>& shape) {
  return shape.empty() ? shape : std::vector<std::int64_t>(shape.begin() + 1, shape.end());
}

std::vector<FieldCheck> checks_for(OpType op_type) {
  auto shape = [](const Request& r) { return shape_str(r.shape); };
  std::vector<FieldCheck> checks = {
      {"device", [](const Request& r) { return r.device.str(); }, nullptr},
      {"dtype", [](const Request& r) { return std::string(dtype_name(r.dtype)); }, nullptr},
  };
  switch (op_type) {
    case OpType::kAllreduce:
      checks.push_back({"shape", shape, nullptr});
      checks.push_back({"reduce op",
                        [](const Request& r) { return std::string(reduce_op_name(r.reduce_op)); },
                        nullptr});
      checks.push_back({"prescale factor",
                        [](const Request& r) { return number_str(r.prescale_factor); }, nullptr});
      checks.push_back({"postscale factor",
                        [](const Request& r) { return number_str(r.postscale_factor); },
                        nullptr});
      break;
    case OpType::kAllgather:
      checks.push_back({"shape beyond the first dimension",
                        [](const Request& r) {
                          return std::to_string(r.shape.size()) + shape_str(trailing_dims(r.shape));
                        },
                        shape});
      break;
    case OpType::kBroadcast:
      checks.push_back({"root rank", [](const Request& r) { return std::to_string(r.root_rank); },
                        nullptr});
      checks.push_back({"shape", shape, nullptr});
      break;
    case OpType::kBarrier:
      break;
  }
  return checks;
}

Response error_response(const Request& any, ErrorKind kind, const std::string& message) {
  Response response;
  response.op_type = any.op_type;
  response.name = any.name;
  response.error_kind = kind;
  response.error_message = message;
  return response;
}

}  // namespace

void MessageTable::add(Request request) {
  HVD_CHECK(request.rank >= 0 && request.rank < size_, Error,
            "request for '" << request.name << "' from invalid rank " << request.rank);
  auto& requests = pending_[request.name];
  for (const Request& earlier : requests) {
    HVD_CHECK(earlier.rank != request.rank, Error,
              "rank " << request.rank << " submitted '" << request.name << "' twice");
  }
  requests.push_back(std::move(request));
  if (static_cast<int>(requests.size()) == size_) ready_.push_back(requests.front().name);
}

std::vector<Response> MessageTable::take_ready() {
  std::vector<Response> responses;
  responses.reserve(ready_.size());
  for (const std::string& name : ready_) {
    auto it = pending_.find(name);
    std::vector<Request> by_rank(size_);
    for (Request& r : it->second) by_rank[r.rank] = std::move(r);
    pending_.erase(it);
    responses.push_back(build_response(by_rank));
  }
  ready_.clear();
  return responses;
}

Response build_response(const std::vector<Request>& requests) {
  const Request& first = requests.front();
  const std::string what = "tensor '" + first.name + "'";

  // Errors found by a rank's own validation come first: they explain the rest.
  std::ostringstream local_errors;
  for (const Request& r : requests) {
    if (r.error.empty()) continue;
    local_errors << (local_errors.tellp() ? "; " : "") << "rank " << r.rank << ": " << r.error;
  }
  if (local_errors.tellp()) {
    return error_response(first, ErrorKind::kInvalidArgument,
                          "invalid " + std::string(op_type_name(first.op_type)) + " of " + what +
                              ": " + local_errors.str());
  }

  std::string diff = disagreement(
      requests, [](const Request& r) { return std::string(op_type_name(r.op_type)); });
  if (!diff.empty()) {
    return error_response(first, ErrorKind::kMismatch,
                          "mismatch for " + what + ": operation differs across ranks: " + diff);
  }
  for (const FieldCheck& check : checks_for(first.op_type)) {
    diff = disagreement(requests, check.key, check.value);
    if (!diff.empty()) {
      return error_response(first, ErrorKind::kMismatch,
                            "mismatch in " + std::string(op_type_name(first.op_type)) + " of " +
                                what + ": " + check.field + " differs across ranks: " + diff);
    }
  }

  // Every rank agrees; what remains are rules on the agreed values.
  const int size = static_cast<int>(requests.size());
  if (first.op_type == OpType::kAllreduce && first.dtype == DataType::kBool &&
      first.reduce_op == ReduceOp::kAverage) {
    return error_response(first, ErrorKind::kInvalidArgument,
                          "allreduce of " + what + ": Average is not defined for bool tensors "
                          "(use Sum for logical OR, Min for logical AND)");
  }
  if (first.op_type == OpType::kBroadcast && (first.root_rank < 0 || first.root_rank >= size)) {
    return error_response(first, ErrorKind::kInvalidArgument,
                          "broadcast of " + what + ": root rank " +
                              std::to_string(first.root_rank) + " is not in [0, " +
                              std::to_string(size) + ")");
  }
  Response response;
  response.op_type = first.op_type;
  response.name = first.name;
  if (first.op_type == OpType::kAllgather) {
    for (const Request& r : requests) response.first_dims.push_back(r.shape.at(0));
  }
  return response;
}

}  // namespace hvd
