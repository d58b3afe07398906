// MpiBitwiseAnd: the control plane's bit-vector AND (Controller::bitwise_and,
// once per negotiation cycle) by recursive doubling over point-to-point
// messages: log2(p) exchanges (one more before and after for the ranks
// beyond the largest power of two). Open MPI's non-blocking allreduce takes
// twice as many rounds for such a vector (the reduce-scatter and allgather
// chosen for the data plane's large messages), and between hosts every
// round pays the network's latency.
//
// Each message carries the sender's length and whether a mismatch was seen:
// ranks that pass vectors of different lengths all throw InvalidArgument
// after the same exchanges, and stay in step.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/mpi/mpi_context.h"

namespace hvd {

class MpiBitwiseAnd {
 public:
  explicit MpiBitwiseAnd(std::shared_ptr<MpiContext> context);

  // Collective over the context's control communicator.
  void run(std::vector<std::uint64_t>& words);

 private:
  struct Header {
    std::uint64_t mismatch = 0;
    std::uint64_t length = 0;
  };
  // Sends this rank's header and `words` to `peer` (if `send`) while
  // receiving the peer's into their_header_ and theirs_ (if `receive`).
  void exchange(const std::vector<std::uint64_t>& words, int peer, bool send, bool receive);
  // ANDs what was received into `words`, or notes that the lengths differ.
  void combine(std::vector<std::uint64_t>& words);

  std::shared_ptr<MpiContext> context_;
  bool mismatch_ = false;
  Header my_header_;
  Header their_header_;
  std::vector<std::uint64_t> theirs_;
};

}  // namespace hvd
