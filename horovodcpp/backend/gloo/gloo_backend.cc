#include "backend/gloo/gloo_backend.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/broadcast.h>
#include <gloo/types.h>

#include <cstring>
#include <type_traits>
#include <utility>

#include "base/check.h"
#include "core/execution/reduction.h"

namespace hvd {
namespace {

// Gloo's typed setters only need the element size; `fn` gets a null
// pointer of an unsigned integer type of the dtype's width.
template <typename Fn>
void with_element_type(DataType dtype, Fn&& fn) {
  switch (dtype_size(dtype)) {
    case 1: fn(static_cast<std::uint8_t*>(nullptr)); return;
    case 2: fn(static_cast<std::uint16_t*>(nullptr)); return;
    case 4: fn(static_cast<std::uint32_t*>(nullptr)); return;
    case 8: fn(static_cast<std::uint64_t*>(nullptr)); return;
  }
  HVD_THROW(InvalidArgument,
            "Gloo: no element type of " << dtype_size(dtype) << " bytes for " << dtype_name(dtype));
}

// The slot prefix of sendrecv's messages: Gloo's collectives use 0x01-0x08.
constexpr std::uint8_t kSendRecvSlotPrefix = 0x40;

}  // namespace

GlooBackend::GlooBackend(std::shared_ptr<GlooContext> context) : context_(std::move(context)) {
  HVD_CHECK(context_ != nullptr, InvalidArgument, "GlooBackend needs a GlooContext");
}

BackendCapabilities GlooBackend::capabilities() const {
  // reduce_into rounds half precision after every pairwise step.
  BackendCapabilities capabilities;
  capabilities.half_reduction_in_float32 = false;
  capabilities.half_as_16bit_shares = true;  // its bytes may cross hosts
  capabilities.waits_on_network = true;
  capabilities.allreduce_lanes = 2;
  return capabilities;
}

void GlooBackend::allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) {
  allreduce_tagged(buffer, count, dtype, op, next_tag());
}

void GlooBackend::allreduce_in_lane(void* buffer, std::size_t count, DataType dtype, ReduceOp op,
                                    int lane) {
  HVD_CHECK(lane == 0 || lane == 1, InvalidArgument,
            "Gloo has two allreduce lanes, not " << lane + 1);
  allreduce_tagged(buffer, count, dtype, op, lane == 0 ? next_tag() : second_lane_tag_++);
}

void GlooBackend::allreduce_tagged(void* buffer, std::size_t count, DataType dtype, ReduceOp op,
                                   std::uint32_t tag) {
  // Validation comes first, so a bad call throws on every rank alike.
  check_backend_dtype(dtype);
  check_backend_reduce_op("Gloo", op);
  if (count == 0) return;
  const std::size_t element_size = dtype_size(dtype);
  // Gloo calls reduce(out, a, b, n): out = a op b, where out may alias a or b.
  auto reduce = [dtype, op, element_size](void* out, const void* a, const void* b, std::size_t n) {
    if (out == b) std::swap(a, b);
    if (out != a) std::memmove(out, a, n * element_size);
    reduce_into(dtype, op, out, b, n);
  };
  with_element_type(dtype, [&](auto* typed) {
    using T = std::remove_pointer_t<decltype(typed)>;
    context_->run("allreduce", [&] {
      gloo::AllreduceOptions options(context_->data());
      options.setOutput(static_cast<T*>(buffer), count);
      options.setReduceFunction(reduce);
      options.setTag(tag);
      gloo::allreduce(options);
    });
  });
}

void GlooBackend::broadcast(void* buffer, std::size_t count, DataType dtype, int root) {
  check_backend_dtype(dtype);
  const int size = context_->topology().size;
  HVD_CHECK(root >= 0 && root < size, InvalidArgument,
            "broadcast root " << root << " is not a rank of a job of size " << size);
  if (count == 0) return;
  with_element_type(dtype, [&](auto* typed) {
    using T = std::remove_pointer_t<decltype(typed)>;
    context_->run("broadcast", [&] {
      gloo::BroadcastOptions options(context_->data());
      options.setOutput(static_cast<T*>(buffer), count);
      options.setRoot(root);
      options.setTag(next_tag());
      gloo::broadcast(options);
    });
  });
}

void GlooBackend::allgatherv(const void* input, void* output,
                             const std::vector<std::size_t>& counts, DataType dtype) {
  check_backend_dtype(dtype);
  const Topology& topology = context_->topology();
  HVD_CHECK_EQ(counts.size(), static_cast<std::size_t>(topology.size), InvalidArgument,
               "allgatherv needs one count per rank");
  const std::size_t element_size = dtype_size(dtype);
  std::size_t total = 0, my_offset = 0;
  for (int r = 0; r < topology.size; ++r) {
    if (r == topology.rank) my_offset = total;
    total += counts[r];
  }
  if (total == 0) return;
  char* my_slot = static_cast<char*>(output) + my_offset * element_size;
  const std::size_t my_count = counts[topology.rank];
  // Gloo gathers in place from the output: our part goes to our slot first
  // (the core may already have put it there).
  if (my_count > 0 && input != my_slot) std::memcpy(my_slot, input, my_count * element_size);
  with_element_type(dtype, [&](auto* typed) {
    using T = std::remove_pointer_t<decltype(typed)>;
    context_->run("allgatherv", [&] {
      gloo::AllgathervOptions options(context_->data());
      options.setOutput(static_cast<T*>(output), counts);
      options.setTag(next_tag());
      gloo::allgatherv(options);
    });
  });
}

void GlooBackend::alltoallv(const void* input, const std::vector<std::size_t>& send_counts,
                            void* output, const std::vector<std::size_t>& recv_counts,
                            DataType dtype) {
  check_backend_dtype(dtype);
  const Topology& topology = context_->topology();
  HVD_CHECK_EQ(send_counts.size(), static_cast<std::size_t>(topology.size), InvalidArgument,
               "alltoallv needs one send count per rank");
  HVD_CHECK_EQ(recv_counts.size(), static_cast<std::size_t>(topology.size), InvalidArgument,
               "alltoallv needs one receive count per rank");
  std::vector<std::int64_t> send(send_counts.begin(), send_counts.end());
  std::vector<std::int64_t> recv(recv_counts.begin(), recv_counts.end());
  // Gloo registers both buffers even when empty: give it a valid address.
  std::uint64_t placeholder = 0;
  void* in = input ? const_cast<void*>(input) : &placeholder;
  void* out = output ? output : &placeholder;
  with_element_type(dtype, [&](auto* typed) {
    using T = std::remove_pointer_t<decltype(typed)>;
    context_->run("alltoallv", [&] {
      gloo::AlltoallvOptions options(context_->data());
      options.setInput(static_cast<T*>(in), send);
      options.setOutput(static_cast<T*>(out), recv);
      options.setTag(next_tag());
      gloo::alltoallv(options);
    });
  });
}

void GlooBackend::reducescatter(void* buffer, void* output, const std::vector<std::size_t>& counts,
                                DataType dtype, ReduceOp op) {
  check_backend_dtype(dtype);
  check_backend_reduce_op("Gloo", op);
  const Topology& topology = context_->topology();
  HVD_CHECK_EQ(counts.size(), static_cast<std::size_t>(topology.size), InvalidArgument,
               "reducescatter needs one count per rank");
  std::size_t total = 0, my_offset = 0;
  for (int r = 0; r < topology.size; ++r) {
    if (r == topology.rank) my_offset = total;
    total += counts[r];
  }
  allreduce(buffer, total, dtype, op);
  const std::size_t mine = counts[topology.rank];
  if (mine > 0) {
    const std::size_t element_size = dtype_size(dtype);
    std::memcpy(output, static_cast<char*>(buffer) + my_offset * element_size, mine * element_size);
  }
}

void GlooBackend::sendrecv(const void* send, std::size_t send_count, void* recv,
                           std::size_t recv_count, DataType dtype, int peer) {
  check_backend_dtype(dtype);
  const Topology& topology = context_->topology();
  check_sendrecv_arguments(peer, topology.rank, topology.size, send_count, recv_count);
  const std::size_t element_size = dtype_size(dtype);
  // Both partners call this in the same order of collectives: the same tag.
  const gloo::Slot slot = gloo::Slot::build(kSendRecvSlotPrefix, next_tag());
  if (peer == topology.rank) {
    if (send_count > 0) std::memcpy(recv, send, send_count * element_size);
    return;
  }
  context_->run("sendrecv", [&] {
    const std::shared_ptr<gloo::Context>& context = context_->data();
    std::unique_ptr<gloo::transport::UnboundBuffer> out, in;
    if (send_count > 0) {
      out = context->createUnboundBuffer(const_cast<void*>(send), send_count * element_size);
      out->send(peer, slot);
    }
    if (recv_count > 0) {
      in = context->createUnboundBuffer(recv, recv_count * element_size);
      in->recv(peer, slot);
    }
    if (in) in->waitRecv(context_->timeout());
    if (out) out->waitSend(context_->timeout());
  });
}

}  // namespace hvd
