#include "core/negotiation/message_table.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "base/check.h"
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
    case OpType::kReducescatter:
      checks.push_back({"shape", shape, nullptr});
      checks.push_back({"reduce op",
                        [](const Request& r) { return std::string(reduce_op_name(r.reduce_op)); },
                        nullptr});
      checks.push_back({"prescale factor",
                        [](const Request& r) { return number_str(r.prescale_factor); }, nullptr});
      checks.push_back({"postscale factor",
                        [](const Request& r) { return number_str(r.postscale_factor); }, nullptr});
      break;
    case OpType::kAllgather:
    case OpType::kAlltoall:
      checks.push_back({"shape beyond the first dimension",
                        [](const Request& r) {
                          return std::to_string(r.shape.size()) + shape_str(trailing_dims(r.shape));
                        },
                        shape});
      break;
    case OpType::kBroadcast:
      checks.push_back(
          {"root rank", [](const Request& r) { return std::to_string(r.root_rank); }, nullptr});
      checks.push_back({"shape", shape, nullptr});
      break;
    case OpType::kBarrier:
    case OpType::kJoin: break;
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

// Reducescatter: "rank 1: Max; rank 2: Min" for the ranks whose op is
// neither Sum nor Average, or empty.
std::string unsupported_reducescatter_ops(const std::vector<Request>& requests) {
  std::ostringstream out;
  for (const Request& r : requests) {
    if (r.reduce_op == ReduceOp::kSum || r.reduce_op == ReduceOp::kAverage) continue;
    out << (out.tellp() ? "; " : "") << "rank " << r.rank << ": " << reduce_op_name(r.reduce_op);
  }
  return out.str();
}

// Alltoall: each rank's splits (empty: equal parts) checked against its
// first dimension, into the row-major size x size matrix. Problems go to
// `errors` as "rank r: ...".
std::vector<std::int64_t> alltoall_matrix(const std::vector<Request>& requests,
                                          std::ostringstream& errors) {
  const std::int64_t size = static_cast<std::int64_t>(requests.size());
  std::vector<std::int64_t> matrix;
  matrix.reserve(size * size);
  for (const Request& r : requests) {
    const std::int64_t rows = r.shape.empty() ? 0 : r.shape[0];
    std::vector<std::int64_t> splits = r.splits;
    std::ostringstream problem;
    if (splits.empty()) {
      if (rows % size == 0) {
        splits.assign(size, rows / size);
      } else {
        problem << "no splits given and the first dimension " << rows
                << " is not divisible by the number of ranks " << size;
      }
    } else if (static_cast<std::int64_t>(splits.size()) != size) {
      problem << "splits have " << splits.size() << " entries, expected one per rank (" << size
              << ")";
    } else {
      std::int64_t sum = 0;
      for (std::int64_t n : splits) {
        if (n < 0) {
          problem << "negative split " << n << " in " << shape_str(splits);
          break;
        }
        sum += n;
      }
      if (!problem.tellp() && sum != rows) {
        problem << "splits " << shape_str(splits) << " sum to " << sum
                << " but the first dimension is " << rows;
      }
    }
    if (problem.tellp()) {
      errors << (errors.tellp() ? "; " : "") << "rank " << r.rank << ": " << problem.str();
      splits.assign(size, 0);
    }
    matrix.insert(matrix.end(), splits.begin(), splits.end());
  }
  return matrix;
}

}  // namespace

void MessageTable::add(Request request, std::chrono::steady_clock::time_point now) {
  HVD_CHECK(request.rank >= 0 && request.rank < size_, Error,
            "request for '" << request.name << "' from invalid rank " << request.rank);
  if (request.op_type == OpType::kJoin) return add_join(request.rank);
  first_seen_.emplace(request.name, now);  // keeps the first rank's time
  auto& requests = pending_[request.name];
  for (const Request& earlier : requests) {
    HVD_CHECK(earlier.rank != request.rank, Error,
              "rank " << request.rank << " submitted '" << request.name << "' twice");
  }
  requests.push_back(std::move(request));
  if (complete(requests)) ready_.push_back(requests.front().name);
}

void MessageTable::add_join(int rank) {
  HVD_CHECK(joined_.insert(rank).second, Error, "rank " << rank << " joined twice");
  last_joined_ = rank;
  // Tensors that waited only for this rank are complete now, in a stable
  // (name) order so that every run releases them alike.
  std::set<std::string> now_complete;
  for (const auto& [name, requests] : pending_) {
    const bool submitted = std::any_of(requests.begin(), requests.end(),
                                       [rank](const Request& r) { return r.rank == rank; });
    if (!submitted && complete(requests)) now_complete.insert(name);
  }
  ready_.insert(ready_.end(), now_complete.begin(), now_complete.end());
}

bool MessageTable::complete(const std::vector<Request>& requests) const {
  std::size_t missing_but_joined = joined_.size();
  for (const Request& r : requests) missing_but_joined -= joined_.count(r.rank);
  return requests.size() + missing_but_joined == static_cast<std::size_t>(size_);
}

Response MessageTable::respond(const std::vector<Request>& submitted) const {
  if (static_cast<int>(submitted.size()) == size_) return build_response(submitted);
  std::vector<int> joined;  // ranks that joined instead of submitting
  for (int rank = 0, i = 0; rank < size_; ++rank) {
    const bool submitted_here = i < static_cast<int>(submitted.size()) && submitted[i].rank == rank;
    if (submitted_here) {
      ++i;
    } else {
      joined.push_back(rank);
    }
  }
  const Request& first = submitted.front();
  // As in Horovod: a joined rank adds zeros to allreduces of every op (so
  // Min, Max and Product see a 0 from it) and has nothing to do in a
  // barrier; other collectives need its data.
  const bool zeros_work = first.op_type == OpType::kBarrier || first.op_type == OpType::kAllreduce;
  Response response;
  if (zeros_work) {
    response = build_response(submitted, size_);
    response.joined_template = first;
    response.joined_template.error.clear();
  } else {
    response = error_response(first, ErrorKind::kInvalidArgument,
                              std::string(op_type_name(first.op_type)) + " of tensor '" +
                                  first.name + "' cannot run after " + ranks_str(joined) +
                                  " joined: only allreduces (a joined rank contributes zeros) "
                                  "and barriers run while ranks have joined");
  }
  response.joined_ranks.assign(joined.begin(), joined.end());
  return response;
}

std::vector<Response> MessageTable::take_ready() {
  std::vector<Response> responses;
  responses.reserve(ready_.size() + 1);
  for (const std::string& name : ready_) {
    auto it = pending_.find(name);
    std::vector<Request> by_rank = std::move(it->second);
    std::sort(by_rank.begin(), by_rank.end(),
              [](const Request& a, const Request& b) { return a.rank < b.rank; });
    pending_.erase(it);
    first_seen_.erase(name);
    // Grouped if any rank says so (a rank that does not is a mismatch,
    // reported when the group is released).
    const Request* grouped = nullptr;
    for (const Request& r : by_rank) {
      if (!r.group_id.empty()) {
        grouped = &r;
        break;
      }
    }
    if (!grouped) {
      responses.push_back(respond(by_rank));
      continue;
    }
    const std::string group_id = grouped->group_id;
    auto& members = held_[group_id];
    members.push_back(std::move(by_rank));
    // Released once as many members are complete as the smallest group_size
    // any rank gave (ranks that disagree on it fail the group then).
    std::int64_t target = std::numeric_limits<std::int64_t>::max();
    for (const auto& member : members) {
      for (const Request& r : member) target = std::min<std::int64_t>(target, r.group_size);
    }
    if (static_cast<std::int64_t>(members.size()) >= target) {
      std::vector<std::vector<Request>> complete = std::move(members);
      held_.erase(group_id);
      release_group(std::move(complete), responses);
    }
  }
  ready_.clear();
  if (static_cast<int>(joined_.size()) == size_) {
    Response join;
    join.op_type = OpType::kJoin;
    join.name = "join";
    join.last_joined_rank = last_joined_;
    responses.push_back(std::move(join));
    joined_.clear();
    last_joined_ = -1;
  }
  return responses;
}

std::size_t MessageTable::held_count() const {
  std::size_t n = 0;
  for (const auto& [group_id, members] : held_) n += members.size();
  return n;
}

void MessageTable::release_group(std::vector<std::vector<Request>> members,
                                 std::vector<Response>& out) {
  const std::string group_id = [&] {
    for (const Request& r : members.front()) {
      if (!r.group_id.empty()) return r.group_id;
    }
    return std::string();
  }();
  // Member order: the index in "<group_id>.<index>" (names that do not
  // follow the pattern keep their completion order, after the others).
  auto index_of = [&](const std::vector<Request>& member) -> long long {
    const std::string& name = member.front().name;
    const std::string prefix = group_id + ".";
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) {
      return std::numeric_limits<long long>::max();
    }
    const std::string digits = name.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 18) {
      return std::numeric_limits<long long>::max();
    }
    return std::stoll(digits);
  };
  std::stable_sort(members.begin(), members.end(),
                   [&](const auto& a, const auto& b) { return index_of(a) < index_of(b); });

  ErrorKind kind = ErrorKind::kNone;
  std::string message;
  const std::string what = "group '" + group_id + "'";
  for (const auto& member : members) {
    std::string diff = disagreement(
        member, [](const Request& r) { return r.group_id; },
        [](const Request& r) {
          return r.group_id.empty() ? std::string("no group") : "group '" + r.group_id + "'";
        });
    const char* field = "group";
    if (diff.empty()) {
      diff = disagreement(member, [](const Request& r) { return std::to_string(r.group_size); });
      field = "group size";
    }
    if (!diff.empty()) {
      kind = ErrorKind::kMismatch;
      message = "mismatch in " + what + " (tensor '" + member.front().name + "'): " + field +
                " differs across ranks: " + diff;
      break;
    }
  }
  std::vector<Response> responses;
  for (const auto& member : members) responses.push_back(respond(member));
  if (kind == ErrorKind::kNone) {
    for (const Response& r : responses) {
      if (r.error_kind == ErrorKind::kNone) continue;
      kind = r.error_kind;
      message = what + " failed: " + r.error_message;
      break;
    }
  }
  for (Response& r : responses) {
    if (kind != ErrorKind::kNone) {
      r.error_kind = kind;
      r.error_message = message;
      r.first_dims.clear();
      r.splits.clear();
      r.joined_template = Request();
    }
    out.push_back(std::move(r));
  }
}

std::vector<PendingTensor> MessageTable::pending_tensors() const {
  std::vector<PendingTensor> result;
  result.reserve(pending_.size());
  for (const auto& [name, requests] : pending_) {
    if (complete(requests)) continue;  // ready, not waiting
    PendingTensor tensor;
    tensor.name = name;
    tensor.op_type = requests.front().op_type;
    for (const Request& r : requests) tensor.submitted_ranks.push_back(r.rank);
    std::sort(tensor.submitted_ranks.begin(), tensor.submitted_ranks.end());
    tensor.joined_ranks.assign(joined_.begin(), joined_.end());
    tensor.first_seen = first_seen_.at(name);
    result.push_back(std::move(tensor));
  }
  return result;
}

namespace {

// The rules on values every rank agrees on: Average of bools, Adasum's
// dtype and power-of-two ranks, broadcast's root. An error response, or
// nothing when the request is valid.
std::optional<Response> agreed_values_refused(const Request& first, const std::string& what,
                                              int size, int set_size) {
  if ((first.op_type == OpType::kAllreduce || first.op_type == OpType::kReducescatter) &&
      first.dtype == DataType::kBool && first.reduce_op == ReduceOp::kAverage) {
    return error_response(first, ErrorKind::kInvalidArgument,
                          std::string(op_type_name(first.op_type)) + " of " + what +
                              ": Average is not defined for bool tensors "
                              "(use Sum for logical OR, Min for logical AND)");
  }
  if (first.op_type == OpType::kAllreduce && first.reduce_op == ReduceOp::kAdasum) {
    if (!is_floating(first.dtype)) {
      return error_response(first, ErrorKind::kInvalidArgument,
                            "allreduce of " + what +
                                ": Adasum needs a floating-point tensor "
                                "(float16, bfloat16, float32 or float64), got " +
                                dtype_name(first.dtype));
    }
    // Joined ranks take part (with zeros): the set's size counts.
    const int ranks = set_size > 0 ? set_size : size;
    if ((ranks & (ranks - 1)) != 0) {
      return error_response(first, ErrorKind::kInvalidArgument,
                            "allreduce of " + what +
                                ": Adasum needs a power-of-two number of "
                                "ranks (as in Horovod), this process set has " +
                                std::to_string(ranks));
    }
  }
  if (first.op_type == OpType::kBroadcast && (first.root_rank < 0 || first.root_rank >= size)) {
    return error_response(first, ErrorKind::kInvalidArgument,
                          "broadcast of " + what + ": root rank " +
                              std::to_string(first.root_rank) + " is not in [0, " +
                              std::to_string(size) + ")");
  }
  return std::nullopt;
}

}  // namespace

Response build_response(const std::vector<Request>& requests, int set_size) {
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

  std::string diff =
      disagreement(requests, [](const Request& r) { return std::string(op_type_name(r.op_type)); });
  if (!diff.empty()) {
    return error_response(first, ErrorKind::kMismatch,
                          "mismatch for " + what + ": operation differs across ranks: " + diff);
  }
  if (first.op_type == OpType::kReducescatter) {
    const std::string unsupported = unsupported_reducescatter_ops(requests);
    if (!unsupported.empty()) {
      return error_response(first, ErrorKind::kInvalidArgument,
                            "reducescatter of " + what +
                                ": the reduce op must be Sum or Average, got " + unsupported);
    }
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
  if (std::optional<Response> refused = agreed_values_refused(first, what, size, set_size)) {
    return *refused;
  }
  Response response;
  response.op_type = first.op_type;
  response.name = first.name;
  if (first.op_type == OpType::kAllgather) {
    for (const Request& r : requests) response.first_dims.push_back(r.shape.at(0));
  }
  if (first.op_type == OpType::kAlltoall) {
    std::ostringstream errors;
    response.splits = alltoall_matrix(requests, errors);
    if (errors.tellp()) {
      return error_response(first, ErrorKind::kInvalidArgument,
                            "invalid alltoall of " + what + ": " + errors.str());
    }
  }
  return response;
}

}  // namespace hvd
