// CollectiveExecutor: runs one agreed collective on this rank's buffers
// through the Backend, applying scaling and Average around it, and
// completes the tensor's Work.
#pragma once

#include <vector>

#include "core/backend.h"
#include "core/controller.h"
#include "core/message.h"
#include "core/tensor_queue.h"

namespace hvd {

class CollectiveExecutor {
 public:
  CollectiveExecutor(Backend& backend, const Topology& topology)
      : backend_(backend), topology_(topology) {}

  // Never throws: failures go to the entry's Work.
  void execute(const Response& response, TensorEntry entry);

 private:
  void allreduce(const TensorEntry& entry);
  void allreduce_half_in_float32(const TensorEntry& entry, std::size_t count);
  Tensor allgather(const TensorEntry& entry, const Response& response);

  Backend& backend_;
  const Topology& topology_;
  std::vector<float> staging_;  // float16/bfloat16 accumulate here; reused across calls
};

}  // namespace hvd
