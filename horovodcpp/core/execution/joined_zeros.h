// JoinedZeros: a joined rank's part in the allreduces of the ranks still
// training. It has no tensor of its own, so it adds zeros of the agreed
// dtype and shape (Response::joined_template); barriers and errors it sits
// out.
#pragma once

#include <vector>

#include "core/negotiation/message.h"
#include "core/negotiation/tensor_queue.h"
#include "horovodcpp/tensor.h"

namespace hvd {

// Whether `rank` joined before `response` was agreed (it has no entry).
bool has_joined(const Response& response, int rank);

class JoinedZeros {
 public:
  // An entry (joined, with a Work nobody waits for) of zeros shaped as
  // `agreed`. In host memory unless `device_zeroes_itself`: device-side
  // operations (NCCL) zero device memory of their own on this rank's GPU,
  // so no host memory is allocated and zeroed (every cycle, as large as the
  // tensors) for them: the entry has its dtype and shape only.
  TensorEntry make(const Request& agreed, bool device_zeroes_itself);
  // The end of a cycle: the zeros' memory is no longer read.
  void release() { kept_.clear(); }

 private:
  std::vector<Tensor> kept_;  // host zeros, kept for one cycle
};

}  // namespace hvd
