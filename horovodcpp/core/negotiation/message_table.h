// Rank 0's negotiation state: which ranks have submitted which tensor
// names, and the validated Response once every rank has.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/negotiation/message.h"

namespace hvd {

// A tensor some ranks have submitted and others not yet (read-only view of
// the table for the stall inspector).
struct PendingTensor {
  std::string name;
  OpType op_type = OpType::kAllreduce;
  std::vector<int> submitted_ranks;                  // ascending
  std::vector<int> joined_ranks;                     // ascending: called join(), so not missing
  std::chrono::steady_clock::time_point first_seen;  // when the first rank's request arrived
};

class MessageTable {
 public:
  explicit MessageTable(int size) : size_(size) {}

  // Records one rank's request (request.rank says whose) arriving at `now`.
  // A join request marks its rank as joined: from then on tensors wait only
  // for the ranks that have not joined (see Response::joined_ranks), and
  // once every rank has joined a Join response (after this cycle's other
  // responses) names the last one and starts a new round of joins.
  void add(Request request,
           std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
  // Responses for the tensors that every rank has submitted since the last
  // call, in the order they became complete: the execution order of all ranks.
  // A group's members (Request::group_id) are held back until all
  // group_size members are complete, then released consecutively in member
  // order; if any member fails validation (or ranks disagree on the group),
  // every member fails with the same message.
  std::vector<Response> take_ready();
  // Tensors not yet released (waiting for some rank, or for their group).
  std::size_t pending() const { return pending_.size() + held_count(); }
  // The tensors still waiting for some rank, in no particular order.
  std::vector<PendingTensor> pending_tensors() const;
  int size() const { return size_; }
  // Ranks that have joined in the current round.
  const std::set<int>& joined() const { return joined_; }

 private:
  int size_;
  std::unordered_map<std::string, std::vector<Request>> pending_;
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> first_seen_;
  std::vector<std::string> ready_;
  // Group id -> its members complete on every rank (each indexed by rank).
  std::unordered_map<std::string, std::vector<std::vector<Request>>> held_;
  std::set<int> joined_;
  int last_joined_ = -1;

  std::size_t held_count() const;
  void add_join(int rank);
  // True once every rank has submitted `requests`' tensor or joined.
  bool complete(const std::vector<Request>& requests) const;
  // build_response for the submitting ranks, with the rules for the
  // joined ones (see Response::joined_ranks).
  Response respond(const std::vector<Request>& submitted) const;
  void release_group(std::vector<std::vector<Request>> members, std::vector<Response>& out);
};

// Validates one tensor's requests (one per submitting rank, in rank order):
// an OK Response, or an error Response naming the field and each rank's
// value. `set_size`: the ranks of the set, joined ones included (default:
// every rank submitted).
Response build_response(const std::vector<Request>& requests, int set_size = 0);

}  // namespace hvd
