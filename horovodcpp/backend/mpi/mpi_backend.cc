#include "backend/mpi/mpi_backend.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "backend/mpi/mpi_check.h"
#include "base/check.h"

namespace hvd {
namespace {

// Calls fn(offset, n) for consecutive chunks of at most `max` elements.
template <typename Fn>
void for_each_chunk(std::size_t count, std::size_t max, Fn&& fn) {
  for (std::size_t offset = 0; offset < count;) {
    const std::size_t n = std::min(max, count - offset);
    fn(offset, static_cast<int>(n));
    offset += n;
  }
}

std::vector<int> to_ints(const std::vector<std::size_t>& values) {
  return std::vector<int>(values.begin(), values.end());
}

}  // namespace

MpiBackend::MpiBackend(std::shared_ptr<MpiContext> context, std::size_t max_elements_per_call)
    : context_(std::move(context)), max_elements_per_call_(max_elements_per_call) {
  HVD_CHECK(context_ != nullptr, InvalidArgument, "MpiBackend needs an MpiContext");
  HVD_CHECK(
      max_elements_per_call_ >= 1 && max_elements_per_call_ <= INT_MAX, InvalidArgument,
      "max_elements_per_call must be in [1, " << INT_MAX << "], got " << max_elements_per_call_);
}

BackendCapabilities MpiBackend::capabilities() const {
  // The half-precision ops round after every pairwise step.
  BackendCapabilities capabilities;
  capabilities.half_reduction_in_float32 = false;
  capabilities.half_as_16bit_shares = true;  // its bytes may cross hosts
  capabilities.waits_on_network = true;
  capabilities.reducescatter_keeps_input = true;  // MPI_Ireduce(_scatter) only read it
  return capabilities;
}

MPI_Datatype MpiBackend::mpi_datatype(DataType dtype) const {
  switch (dtype) {
    case DataType::kUInt8: return MPI_UINT8_T;
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kUInt16: return MPI_UINT16_T;
    case DataType::kInt16: return MPI_INT16_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kFloat16:
    case DataType::kBFloat16: return user_ops_.half_datatype(dtype);
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
    // One byte; logical ops on it treat any nonzero as true and yield 0/1.
    case DataType::kBool: return MPI_UNSIGNED_CHAR;
  }
  HVD_THROW(InvalidArgument, "unknown dtype " << static_cast<int>(dtype));
}

MPI_Op MpiBackend::mpi_op(DataType dtype, ReduceOp op) const {
  HVD_CHECK(op != ReduceOp::kAverage, InvalidArgument,
            "the MPI backend does not average; the core reduces with Sum and divides");
  if (MPI_Op user_op = user_ops_.op(dtype, op); user_op != MPI_OP_NULL) return user_op;
  if (dtype == DataType::kBool) {
    return op == ReduceOp::kSum || op == ReduceOp::kMax ? MPI_LOR : MPI_LAND;
  }
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProduct: return MPI_PROD;
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum: break;
  }
  HVD_THROW(InvalidArgument, "unknown reduce op " << static_cast<int>(op));
}

std::size_t MpiBackend::chunk_elements(DataType dtype) const {
  return std::min(max_elements_per_call_, kMaxBytesPerCall / dtype_size(dtype));
}

void MpiBackend::allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) {
  // Both look-ups validate before any communication, so a bad call throws
  // on every rank alike. Zero elements: no rank communicates.
  const MPI_Datatype datatype = mpi_datatype(dtype);
  const MPI_Op mpi_reduce_op = mpi_op(dtype, op);
  char* bytes = static_cast<char*>(buffer);
  const std::size_t element_size = dtype_size(dtype);
  for_each_chunk(count, chunk_elements(dtype), [&](std::size_t offset, int n) {
    context_->run(MpiPlane::kData, "MPI_Iallreduce", [&](MPI_Request* r) {
      return MPI_Iallreduce(MPI_IN_PLACE, bytes + offset * element_size, n, datatype, mpi_reduce_op,
                            context_->data_comm(), r);
    });
  });
}

void MpiBackend::chunked_broadcast(char* buffer, std::size_t count, DataType dtype, int root) {
  const MPI_Datatype datatype = mpi_datatype(dtype);
  const std::size_t element_size = dtype_size(dtype);
  for_each_chunk(count, chunk_elements(dtype), [&](std::size_t offset, int n) {
    context_->run(MpiPlane::kData, "MPI_Ibcast", [&](MPI_Request* r) {
      return MPI_Ibcast(buffer + offset * element_size, n, datatype, root, context_->data_comm(),
                        r);
    });
  });
}

void MpiBackend::broadcast(void* buffer, std::size_t count, DataType dtype, int root) {
  const int size = context_->topology().size;
  HVD_CHECK(root >= 0 && root < size, InvalidArgument,
            "broadcast root " << root << " is not a rank of a job of size " << size);
  chunked_broadcast(static_cast<char*>(buffer), count, dtype, root);
}

void MpiBackend::allgatherv(const void* input, void* output, const std::vector<std::size_t>& counts,
                            DataType dtype) {
  const Topology& topology = context_->topology();
  HVD_CHECK_EQ(counts.size(), static_cast<std::size_t>(topology.size), InvalidArgument,
               "allgatherv needs one count per rank");
  const MPI_Datatype datatype = mpi_datatype(dtype);
  const std::size_t element_size = dtype_size(dtype);
  std::vector<std::size_t> offsets(counts.size());
  std::size_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = total;
    total += counts[r];
  }
  if (total == 0) return;

  char* out = static_cast<char*>(output);
  const std::size_t my_count = counts[topology.rank];
  char* my_slot = out + offsets[topology.rank] * element_size;
  // The core may gather from the output buffer itself; MPI forbids aliased
  // send and receive buffers unless the input is passed as MPI_IN_PLACE.
  const bool in_place = input == my_slot;

  // Displacements are ints too, so the one-call path needs the total in an
  // int (chunk_elements() <= INT_MAX).
  if (total <= chunk_elements(dtype)) {
    std::vector<int> int_counts(counts.size()), displacements(counts.size());
    for (std::size_t r = 0; r < counts.size(); ++r) {
      int_counts[r] = static_cast<int>(counts[r]);
      displacements[r] = static_cast<int>(offsets[r]);
    }
    context_->run(MpiPlane::kData, "MPI_Iallgatherv", [&](MPI_Request* r) {
      return MPI_Iallgatherv(in_place ? MPI_IN_PLACE : input, static_cast<int>(my_count), datatype,
                             out, int_counts.data(), displacements.data(), datatype,
                             context_->data_comm(), r);
    });
    return;
  }
  // Each rank in turn broadcasts its part from its slot of the output.
  if (!in_place && my_count > 0) std::memcpy(my_slot, input, my_count * element_size);
  for (int r = 0; r < topology.size; ++r) {
    chunked_broadcast(out + offsets[r] * element_size, counts[r], dtype, r);
  }
}

void MpiBackend::alltoallv(const void* input, const std::vector<std::size_t>& send_counts,
                           void* output, const std::vector<std::size_t>& recv_counts,
                           DataType dtype) {
  const Topology& topology = context_->topology();
  HVD_CHECK_EQ(send_counts.size(), static_cast<std::size_t>(topology.size), InvalidArgument,
               "alltoallv needs one send count per rank");
  HVD_CHECK_EQ(recv_counts.size(), static_cast<std::size_t>(topology.size), InvalidArgument,
               "alltoallv needs one receive count per rank");
  const MPI_Datatype datatype = mpi_datatype(dtype);
  std::vector<std::size_t> send_offsets, recv_offsets;
  const std::size_t send_total = offsets_of(send_counts, send_offsets);
  const std::size_t recv_total = offsets_of(recv_counts, recv_offsets);
  // Counts and displacements are ints; whether they fit is known per rank,
  // and every rank must take the same path.
  int too_large = std::max(send_total, recv_total) > chunk_elements(dtype) ? 1 : 0;
  context_->run(MpiPlane::kData, "MPI_Iallreduce", [&](MPI_Request* r) {
    return MPI_Iallreduce(MPI_IN_PLACE, &too_large, 1, MPI_INT, MPI_MAX, context_->data_comm(), r);
  });
  if (too_large) {
    pairwise_alltoallv(static_cast<const char*>(input), send_counts, static_cast<char*>(output),
                       recv_counts, dtype);
    return;
  }
  const std::vector<int> int_send_counts = to_ints(send_counts);
  const std::vector<int> int_send_offsets = to_ints(send_offsets);
  const std::vector<int> int_recv_counts = to_ints(recv_counts);
  const std::vector<int> int_recv_offsets = to_ints(recv_offsets);
  context_->run(MpiPlane::kData, "MPI_Ialltoallv", [&](MPI_Request* r) {
    return MPI_Ialltoallv(input, int_send_counts.data(), int_send_offsets.data(), datatype, output,
                          int_recv_counts.data(), int_recv_offsets.data(), datatype,
                          context_->data_comm(), r);
  });
}

void MpiBackend::pairwise_alltoallv(const char* input, const std::vector<std::size_t>& send_counts,
                                    char* output, const std::vector<std::size_t>& recv_counts,
                                    DataType dtype) {
  const Topology& topology = context_->topology();
  const std::size_t element_size = dtype_size(dtype);
  std::vector<std::size_t> send_offsets, recv_offsets;
  offsets_of(send_counts, send_offsets);
  offsets_of(recv_counts, recv_offsets);
  const int size = topology.size, rank = topology.rank;
  if (recv_counts[rank] > 0) {
    std::memcpy(output + recv_offsets[rank] * element_size,
                input + send_offsets[rank] * element_size, recv_counts[rank] * element_size);
  }
  // Step k: send to rank + k, receive from rank - k.
  for (int k = 1; k < size; ++k) {
    const int to = (rank + k) % size, from = (rank - k + size) % size;
    exchange(input + send_offsets[to] * element_size, send_counts[to], to,
             output + recv_offsets[from] * element_size, recv_counts[from], from, dtype);
  }
}

// Both ends of a direction split its count into the same chunks, and MPI
// keeps messages between two ranks in order.
void MpiBackend::exchange(const char* send, std::size_t send_count, int to, char* recv,
                          std::size_t recv_count, int from, DataType dtype) {
  constexpr int kTag = 0x2a11;
  const MPI_Datatype datatype = mpi_datatype(dtype);
  const std::size_t element_size = dtype_size(dtype);
  const std::size_t chunk = chunk_elements(dtype);
  std::vector<MPI_Request> requests;
  for_each_chunk(recv_count, chunk, [&](std::size_t offset, int n) {
    requests.emplace_back();
    HVD_MPI_CHECK(MPI_Irecv(recv + offset * element_size, n, datatype, from, kTag,
                            context_->data_comm(), &requests.back()));
  });
  for_each_chunk(send_count, chunk, [&](std::size_t offset, int n) {
    requests.emplace_back();
    HVD_MPI_CHECK(MPI_Isend(send + offset * element_size, n, datatype, to, kTag,
                            context_->data_comm(), &requests.back()));
  });
  for (MPI_Request& request : requests) {
    context_->wait(MpiPlane::kData, &request, "MPI_Isend/MPI_Irecv");
  }
}

void MpiBackend::sendrecv(const void* send, std::size_t send_count, void* recv,
                          std::size_t recv_count, DataType dtype, int peer) {
  const Topology& topology = context_->topology();
  check_sendrecv_arguments(peer, topology.rank, topology.size, send_count, recv_count);
  exchange(static_cast<const char*>(send), send_count, peer, static_cast<char*>(recv), recv_count,
           peer, dtype);
}

void MpiBackend::reducescatter(void* buffer, void* output, const std::vector<std::size_t>& counts,
                               DataType dtype, ReduceOp op) {
  const Topology& topology = context_->topology();
  HVD_CHECK_EQ(counts.size(), static_cast<std::size_t>(topology.size), InvalidArgument,
               "reducescatter needs one count per rank");
  // Both look-ups validate before any communication, as in allreduce.
  const MPI_Datatype datatype = mpi_datatype(dtype);
  const MPI_Op mpi_reduce_op = mpi_op(dtype, op);
  std::vector<std::size_t> offsets;
  const std::size_t total = offsets_of(counts, offsets);
  if (total == 0) return;  // the same counts on every rank: nobody communicates
  char* bytes = static_cast<char*>(buffer);
  if (total <= chunk_elements(dtype)) {
    const std::vector<int> int_counts = to_ints(counts);
    context_->run(MpiPlane::kData, "MPI_Ireduce_scatter", [&](MPI_Request* r) {
      return MPI_Ireduce_scatter(bytes, output, int_counts.data(), datatype, mpi_reduce_op,
                                 context_->data_comm(), r);
    });
    return;
  }
  // Each rank's share in turn, reduced to it in chunks.
  const std::size_t element_size = dtype_size(dtype);
  char* out = static_cast<char*>(output);
  for (int r = 0; r < topology.size; ++r) {
    for_each_chunk(counts[r], chunk_elements(dtype), [&](std::size_t offset, int n) {
      context_->run(MpiPlane::kData, "MPI_Ireduce", [&](MPI_Request* request) {
        return MPI_Ireduce(bytes + (offsets[r] + offset) * element_size,
                           r == topology.rank ? out + offset * element_size : nullptr, n, datatype,
                           mpi_reduce_op, r, context_->data_comm(), request);
      });
    });
  }
}

}  // namespace hvd
