#include "backend/shm/shm_controller.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "backend/shm/shm_backend.h"
#include "backend/shm/shm_setup.h"
#include "base/check.h"
#include "core/negotiation/root_decides.h"
#include "core/runtime/usable_cpus.h"

namespace hvd {
namespace {

constexpr int kRoot = 0;
// A message starts with its length; the first chunk carries the rest of the slot.
constexpr std::size_t kLengthBytes = sizeof(std::uint64_t);

}  // namespace

ShmController::ShmController(const Topology& topology, shm::ShmSegment segment, std::string name,
                             const shm::WaitPolicy& policy)
    : topology_(topology),
      segment_(std::move(segment)),
      segment_name_(std::move(name)),
      pipeline_(segment_, topology.rank, policy),
      lengths_(static_cast<std::size_t>(topology.size)) {
  HVD_CHECK(segment_.mapped() && segment_.geometry().ranks == topology.size &&
                segment_.geometry().slot_bytes > kLengthBytes,
            InvalidArgument, "ShmController needs a mapped segment with a slot per rank");
}

template <typename Read>
void ShmController::exchange(const char* what, const void* mine, std::uint64_t bytes, Read&& read) {
  const int rank = topology_.rank, size = topology_.size;
  const std::size_t slot = segment_.geometry().slot_bytes;
  const std::size_t head = slot - kLengthBytes;  // message bytes in the first chunk
  const auto* data = static_cast<const unsigned char*>(mine);
  auto no_reduce = [](std::uint64_t, int) {};

  auto fill_first = [&](std::uint64_t, int stage) {
    unsigned char* to = segment_.slot(stage, rank);
    std::memcpy(to, &bytes, kLengthBytes);
    if (bytes > 0) std::memcpy(to + kLengthBytes, data, std::min<std::uint64_t>(bytes, head));
  };
  auto drain_first = [&](std::uint64_t, int stage) {
    for (int r = 0; r < size; ++r) {
      const unsigned char* from = segment_.slot(stage, r);
      std::memcpy(&lengths_[r], from, kLengthBytes);
      read(r, std::uint64_t{0}, from + kLengthBytes, std::min<std::uint64_t>(lengths_[r], head));
    }
  };
  pipeline_.run(what, 1, /*reduces=*/false, fill_first, no_reduce, drain_first);

  // Every rank has read every length: all agree on the chunks of the rest.
  const std::uint64_t longest = *std::max_element(lengths_.begin(), lengths_.end());
  if (longest <= head) return;
  const std::uint64_t chunks = (longest - head + slot - 1) / slot;
  // Chunk c carries bytes [head + c * slot, ...) of each message.
  auto piece = [head, slot](std::uint64_t length, std::uint64_t c) -> std::uint64_t {
    const std::uint64_t offset = head + c * slot;
    return offset >= length ? 0 : std::min<std::uint64_t>(slot, length - offset);
  };
  auto fill = [&](std::uint64_t c, int stage) {
    if (const std::uint64_t n = piece(bytes, c); n > 0) {
      std::memcpy(segment_.slot(stage, rank), data + head + c * slot, n);
    }
  };
  auto drain = [&](std::uint64_t c, int stage) {
    for (int r = 0; r < size; ++r) {
      if (const std::uint64_t n = piece(lengths_[r], c); n > 0) {
        read(r, head + c * slot, segment_.slot(stage, r), n);
      }
    }
  };
  pipeline_.run(what, chunks, /*reduces=*/false, fill, no_reduce, drain);
}

std::vector<std::string> ShmController::gather_to_root(const std::string& message) {
  const bool is_root = topology_.rank == kRoot;
  std::vector<std::string> messages(is_root ? topology_.size : 0);
  exchange("control gather", message.data(), message.size(),
           [&](int r, std::uint64_t offset, const unsigned char* piece, std::uint64_t n) {
             if (!is_root) return;
             if (offset == 0) messages[r].reserve(lengths_[r]);
             messages[r].append(reinterpret_cast<const char*>(piece), n);
           });
  return messages;
}

std::string ShmController::broadcast_from_root(const std::string& message) {
  const bool is_root = topology_.rank == kRoot;
  std::string result;
  exchange("control broadcast", message.data(), is_root ? message.size() : 0,
           [&](int r, std::uint64_t offset, const unsigned char* piece, std::uint64_t n) {
             if (is_root || r != kRoot) return;
             if (offset == 0) result.reserve(lengths_[r]);
             result.append(reinterpret_cast<const char*>(piece), n);
           });
  return is_root ? message : result;
}

void ShmController::bitwise_and(std::vector<std::uint64_t>& words) {
  bitwise_and_gathering(words, std::string(), gathered_);
}

std::size_t ShmController::payload_capacity() const {
  // As much as every rank reduces from every slot in the shared-memory
  // backend's small path: the whole message still takes one pass.
  return kPayloadBytesAllRanks / static_cast<std::size_t>(topology_.size);
}

void ShmController::bitwise_and_gathering(std::vector<std::uint64_t>& words,
                                          const std::string& payload,
                                          std::vector<std::string>& gathered) {
  HVD_CHECK(payload.size() <= payload_capacity(), InvalidArgument,
            "bitwise_and: a payload of " << payload.size() << " bytes exceeds the "
                                         << payload_capacity() << " this plane carries");
  // The message: the word count, the words, the payload. Even empty vectors
  // are exchanged: a rank whose length differs must not leave the others
  // waiting.
  const std::uint64_t count = words.size();
  outgoing_.assign(reinterpret_cast<const char*>(&count), sizeof count);
  outgoing_.append(reinterpret_cast<const char*>(words.data()), count * sizeof(std::uint64_t));
  outgoing_.append(payload);
  received_.resize(static_cast<std::size_t>(topology_.size));
  exchange("control bitwise AND", outgoing_.data(), outgoing_.size(),
           [&](int r, std::uint64_t offset, const unsigned char* piece, std::uint64_t n) {
             if (offset == 0) received_[r].clear();
             received_[r].append(reinterpret_cast<const char*>(piece), n);
           });
  const auto words_of = [&](int r) {
    std::uint64_t n;
    std::memcpy(&n, received_[r].data(), sizeof n);
    return n;
  };
  for (int r = 0; r < topology_.size; ++r) {
    HVD_CHECK(words_of(r) == words_of(kRoot), InvalidArgument,
              "bitwise_and: rank " << r << " passed " << words_of(r) << " words, rank 0 "
                                   << words_of(kRoot));
  }
  gathered.resize(received_.size());
  const std::size_t payload_at = sizeof count + count * sizeof(std::uint64_t);
  for (int r = 0; r < topology_.size; ++r) {
    const char* theirs = received_[r].data() + sizeof count;
    for (std::size_t i = 0; i < count; ++i) {
      std::uint64_t word;
      std::memcpy(&word, theirs + i * sizeof word, sizeof word);
      words[i] = r == 0 ? word : words[i] & word;
    }
    gathered[r].assign(received_[r], payload_at, std::string::npos);
  }
}

std::unique_ptr<Controller> maybe_shm_controller(Controller& setup, const std::string& fallback) {
  const Topology& topology = setup.topology();
  if (topology.size < 2 || topology.local_size != topology.size) return nullptr;
  if (!shm_agreed(setup)) return nullptr;
  shm::WaitPolicy policy;
  policy.timeout = ShmOptions::from_environment().timeout;
  // As MPI mode's control plane waits (mpi_wait.h): spinning 200 us where
  // every rank has a core, which a peer about to arrive answers within
  // microseconds; else yielding, then sleeping on the futex.
  policy.spin = topology.size <= usable_cpus();
  policy.spin_for = std::chrono::microseconds(200);
  shm::SharedSegment shared =
      shm::share_segment(setup, ShmController::kSlotBytes, ShmController::kStages, fallback);
  if (!shared.segment.mapped()) return nullptr;
  return std::make_unique<ShmController>(topology, std::move(shared.segment),
                                         std::move(shared.name), policy);
}

}  // namespace hvd
