// Typed errors. Every failure of a collective reaches the caller as one of
// these, thrown by Work::wait() (or by the blocking call) on every rank.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "horovodcpp/export.h"

namespace hvd {

class HVD_EXPORT Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The call itself is wrong: bad shape, unsupported dtype/op, not initialized.
class HVD_EXPORT InvalidArgument : public Error {
 public:
  using Error::Error;
};

// Ranks submitted the same tensor name with different dtype, shape, op,
// root, scale factors, device or operation.
class HVD_EXPORT Mismatch : public Error {
 public:
  using Error::Error;
};

// A wait with a timeout expired; the operation is still in flight.
class HVD_EXPORT Timeout : public Error {
 public:
  using Error::Error;
};

// A rank failed or left (shut down) before the operation could complete.
class HVD_EXPORT RankFailure : public Error {
 public:
  // `ranks`: the ranks that died or stopped answering, when this rank could
  // tell which (a dead process, a roll call of the survivors); else empty.
  explicit RankFailure(const std::string& message, std::vector<int> ranks = {})
      : Error(message), ranks_(std::move(ranks)) {}
  const std::vector<int>& ranks() const { return ranks_; }

 private:
  std::vector<int> ranks_;
};

// The communication library (MPI, Gloo, NCCL, CUDA) reported an error.
class HVD_EXPORT BackendError : public Error {
 public:
  using Error::Error;
};

}  // namespace hvd
