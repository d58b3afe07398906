// Rank 0's negotiation state: which ranks have submitted which tensor
// names, and the validated Response once every rank has.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/message.h"

namespace hvd {

class MessageTable {
 public:
  explicit MessageTable(int size) : size_(size) {}

  // Records one rank's request (request.rank says whose).
  void add(Request request);
  // Responses for the tensors that every rank has submitted since the last
  // call, in the order they became complete: the execution order of all ranks.
  std::vector<Response> take_ready();
  std::size_t pending() const { return pending_.size(); }

 private:
  int size_;
  std::unordered_map<std::string, std::vector<Request>> pending_;
  std::vector<std::string> ready_;
};

// Validates one tensor's requests (one per rank, indexed by rank): an OK
// Response, or an error Response naming the field and each rank's value.
Response build_response(const std::vector<Request>& requests);

}  // namespace hvd
