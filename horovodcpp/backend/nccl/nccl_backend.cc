#include "backend/nccl/nccl_backend.h"

#include <algorithm>
#include <utility>

#include "backend/nccl/nccl_check.h"
#include "backend/nccl/nccl_types.h"

namespace hvd {
namespace {

const unsigned char* at(const void* base, std::size_t elements, DataType dtype) {
  return static_cast<const unsigned char*>(base) + elements * dtype_size(dtype);
}
unsigned char* at(void* base, std::size_t elements, DataType dtype) {
  return static_cast<unsigned char*>(base) + elements * dtype_size(dtype);
}

bool all_equal(const std::vector<std::size_t>& counts) {
  return std::adjacent_find(counts.begin(), counts.end(), std::not_equal_to<>()) == counts.end();
}

// calls() between ncclGroupStart and ncclGroupEnd. A call that throws still
// ends the group: left open, it would swallow this thread's later NCCL calls.
template <typename Calls>
void in_group(Calls calls) {
  HVD_NCCL_CHECK(ncclGroupStart());
  try {
    calls();
  } catch (...) {
    ncclGroupEnd();
    throw;
  }
  HVD_NCCL_CHECK(ncclGroupEnd());
}

}  // namespace

NcclBackend::NcclBackend(std::shared_ptr<NcclCommunicator> communicator)
    : communicator_(std::move(communicator)) {}

BackendCapabilities NcclBackend::capabilities() const {
  BackendCapabilities caps;
  caps.half_reduction_in_float32 = false;  // NCCL's half sums are not specified to be float32
  caps.stream_ordered = true;
  return caps;
}

void NcclBackend::allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) {
  const ncclDataType_t type = nccl_reduction_type(dtype);
  const ncclRedOp_t nccl = nccl_op(op, dtype);
  communicator_->issue("ncclAllReduce", [&](ncclComm_t comm, cudaStream_t stream) {
    HVD_NCCL_CHECK(ncclAllReduce(buffer, buffer, count, type, nccl, comm, stream));
  });
}

void NcclBackend::broadcast(void* buffer, std::size_t count, DataType dtype, int root) {
  const ncclDataType_t type = nccl_movement_type(dtype, count);
  communicator_->issue("ncclBroadcast", [&](ncclComm_t comm, cudaStream_t stream) {
    HVD_NCCL_CHECK(ncclBroadcast(buffer, buffer, count, type, root, comm, stream));
  });
}

// Equal counts: one ncclAllGather. Ragged: one broadcast per rank in a
// group, each into its place in the output (as Horovod does).
void NcclBackend::allgatherv(const void* input, void* output,
                             const std::vector<std::size_t>& counts, DataType dtype) {
  const int rank = communicator_->rank();
  communicator_->issue("allgatherv", [&](ncclComm_t comm, cudaStream_t stream) {
    std::size_t units = counts.empty() ? 0 : counts.front();
    if (all_equal(counts)) {
      const ncclDataType_t type = nccl_movement_type(dtype, units);
      HVD_NCCL_CHECK(ncclAllGather(input, output, units, type, comm, stream));
      return;
    }
    in_group([&] {
      std::size_t offset = 0;
      for (std::size_t r = 0; r < counts.size(); ++r) {
        units = counts[r];
        const ncclDataType_t type = nccl_movement_type(dtype, units);
        void* place = at(output, offset, dtype);
        const void* send = static_cast<int>(r) == rank ? input : place;
        HVD_NCCL_CHECK(ncclBroadcast(send, place, units, type, static_cast<int>(r), comm, stream));
        offset += counts[r];
      }
    });
  });
}

// Point-to-point sends and receives in one group.
void NcclBackend::alltoallv(const void* input, const std::vector<std::size_t>& send_counts,
                            void* output, const std::vector<std::size_t>& recv_counts,
                            DataType dtype) {
  communicator_->issue("alltoallv", [&](ncclComm_t comm, cudaStream_t stream) {
    in_group([&] {
      std::size_t send_offset = 0, recv_offset = 0;
      for (std::size_t r = 0; r < send_counts.size(); ++r) {
        std::size_t send_units = send_counts[r], recv_units = recv_counts[r];
        const ncclDataType_t type = nccl_movement_type(dtype, send_units);
        nccl_movement_type(dtype, recv_units);
        const int peer = static_cast<int>(r);
        if (send_units > 0) {
          HVD_NCCL_CHECK(
              ncclSend(at(input, send_offset, dtype), send_units, type, peer, comm, stream));
        }
        if (recv_units > 0) {
          HVD_NCCL_CHECK(
              ncclRecv(at(output, recv_offset, dtype), recv_units, type, peer, comm, stream));
        }
        send_offset += send_counts[r];
        recv_offset += recv_counts[r];
      }
    });
  });
}

// Equal counts: one ncclReduceScatter. Uneven: one ncclReduce per rank's
// share in a group, rooted at that rank.
void NcclBackend::reducescatter(void* buffer, void* output, const std::vector<std::size_t>& counts,
                                DataType dtype, ReduceOp op) {
  const ncclDataType_t type = nccl_reduction_type(dtype);
  const ncclRedOp_t nccl = nccl_op(op, dtype);
  const int rank = communicator_->rank();
  communicator_->issue("reducescatter", [&](ncclComm_t comm, cudaStream_t stream) {
    if (all_equal(counts) && !counts.empty()) {
      HVD_NCCL_CHECK(ncclReduceScatter(buffer, output, counts.front(), type, nccl, comm, stream));
      return;
    }
    in_group([&] {
      std::size_t offset = 0;
      for (std::size_t r = 0; r < counts.size(); ++r) {
        // recvbuff is used on the root only; elsewhere any valid pointer.
        void* send = at(buffer, offset, dtype);
        void* recv = static_cast<int>(r) == rank ? output : send;
        HVD_NCCL_CHECK(
            ncclReduce(send, recv, counts[r], type, nccl, static_cast<int>(r), comm, stream));
        offset += counts[r];
      }
    });
  });
}

}  // namespace hvd
