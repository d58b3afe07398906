// NcclBackend: the Backend collectives on device memory over one
// NcclCommunicator. Calls are stream-ordered: each returns once its work is
// queued on the communicator's stream (capabilities().stream_ordered); the
// caller observes completion with an event on stream() or synchronize().
#pragma once

#include <memory>

#include "backend/nccl/nccl_communicator.h"
#include "core/execution/backend.h"

namespace hvd {

class NcclBackend : public Backend {
 public:
  explicit NcclBackend(std::shared_ptr<NcclCommunicator> communicator);

  const char* name() const override { return "nccl"; }
  BackendCapabilities capabilities() const override;

  // int16/uint16 have no NCCL type: allreduce and reducescatter of them
  // throw InvalidArgument (the other collectives move them as bytes).
  void allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) override;
  void allgatherv(const void* input, void* output, const std::vector<std::size_t>& counts,
                  DataType dtype) override;
  void broadcast(void* buffer, std::size_t count, DataType dtype, int root) override;
  void alltoallv(const void* input, const std::vector<std::size_t>& send_counts, void* output,
                 const std::vector<std::size_t>& recv_counts, DataType dtype) override;
  void reducescatter(void* buffer, void* output, const std::vector<std::size_t>& counts,
                     DataType dtype, ReduceOp op) override;

  NcclCommunicator& communicator() { return *communicator_; }

 private:
  std::shared_ptr<NcclCommunicator> communicator_;
};

}  // namespace hvd
