#include "core/execution/half_shares.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "core/execution/reduction.h"

namespace hvd {
namespace {

// The exchanges go in messages of at most this many bytes: one message of
// megabytes left one direction of a rate-limited link idle half the time
// (about 0.6x of the link's rate each way, between two network namespaces
// at 100 Mbit/s), messages of 128 KiB kept both directions full.
constexpr std::size_t kMessageBytes = std::size_t{128} << 10;

// Round k (0 <= k < size) pairs rank r with rank (k - r) mod size, each
// pair both ways: over the rounds every rank meets every other once (and,
// in one round, itself).
int partner(int rank, int k, int size) { return ((k - rank) % size + size) % size; }

// Sends `send_count` elements to `peer` while receiving `recv_count` from
// it (a copy when peer is this rank), message by message. Every rank makes
// as many sendrecv calls, ceil(largest / message), whatever its counts: the
// backends number their exchanges in call order (Gloo's tags).
void exchange(Backend& backend, const unsigned char* send, std::size_t send_count,
              unsigned char* recv, std::size_t recv_count, std::size_t largest, DataType dtype,
              int peer) {
  const std::size_t element = dtype_size(dtype);
  const std::size_t per_message = std::max<std::size_t>(1, kMessageBytes / element);
  for (std::size_t done = 0; done < largest; done += per_message) {
    const std::size_t out = send_count > done ? std::min(per_message, send_count - done) : 0;
    const std::size_t in = recv_count > done ? std::min(per_message, recv_count - done) : 0;
    backend.sendrecv(send + done * element, out, recv + done * element, in, dtype, peer);
  }
}

}  // namespace

void reducescatter_half_shares(Backend& backend, const void* input, void* output,
                               const std::vector<std::size_t>& counts, int rank, DataType dtype,
                               ReduceOp op, std::vector<unsigned char>& scratch) {
  HVD_CHECK((dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) &&
                (op == ReduceOp::kSum || op == ReduceOp::kProduct),
            InvalidArgument, "16-bit shares reduce float16/bfloat16 Sum or Product only");
  const int size = static_cast<int>(counts.size());
  const std::size_t mine = counts[rank];
  const std::size_t element = dtype_size(dtype);
  std::vector<std::size_t> offsets;
  offsets_of(counts, offsets);
  const auto* in = static_cast<const unsigned char*>(input);
  scratch.resize(size * mine * element);
  const std::size_t largest = *std::max_element(counts.begin(), counts.end());
  // Every rank's share of this rank's slice, in rank order.
  for (int k = 0; k < size; ++k) {
    const int peer = partner(rank, k, size);
    exchange(backend, in + offsets[peer] * element, counts[peer],
             scratch.data() + peer * mine * element, mine, largest, dtype, peer);
  }
  std::vector<const void*> shares(size);
  for (int r = 0; r < size; ++r) shares[r] = scratch.data() + r * mine * element;
  reduce_many(dtype, op, output, shares.data(), size, mine);
}

void allreduce_half_shares(Backend& backend, void* buffer, std::size_t count, int rank, int size,
                           DataType dtype, ReduceOp op, std::vector<unsigned char>& scratch) {
  std::vector<std::size_t> counts(size);
  for (int r = 0; r < size; ++r) {
    counts[r] = count / size + (static_cast<std::size_t>(r) < count % size ? 1 : 0);
  }
  const std::size_t element = dtype_size(dtype);
  std::vector<std::size_t> offsets;
  offsets_of(counts, offsets);
  auto* out = static_cast<unsigned char*>(buffer);
  std::vector<unsigned char> slice(counts[rank] * element);
  reducescatter_half_shares(backend, buffer, slice.data(), counts, rank, dtype, op, scratch);
  // Gathered by the same pairing: the rounded slices travel as 16 bits too.
  for (int k = 0; k < size; ++k) {
    const int peer = partner(rank, k, size);
    exchange(backend, slice.data(), counts[rank], out + offsets[peer] * element, counts[peer],
             counts[0], dtype, peer);  // counts[0] is the largest
  }
}

}  // namespace hvd
