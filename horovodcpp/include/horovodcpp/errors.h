// Typed errors. Every failure of a collective reaches the caller as one of
// these, thrown by Work::wait() (or by the blocking call) on every rank.
#pragma once

#include <stdexcept>
#include <string>

namespace hvd {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The call itself is wrong: bad shape, unsupported dtype/op, not initialized.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// Ranks submitted the same tensor name with different dtype, shape, op,
// root, scale factors, device or operation.
class Mismatch : public Error {
 public:
  using Error::Error;
};

// A wait with a timeout expired; the operation is still in flight.
class Timeout : public Error {
 public:
  using Error::Error;
};

// A rank failed or left (shut down) before the operation could complete.
class RankFailure : public Error {
 public:
  using Error::Error;
};

// The communication library (MPI, Gloo, NCCL, CUDA) reported an error.
class BackendError : public Error {
 public:
  using Error::Error;
};

}  // namespace hvd
