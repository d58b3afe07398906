// ShmController: negotiation through shared memory when every rank of the
// transport runs on this host. Each rank streams its message, length first,
// through its own slots of a small segment (one ChunkPipeline pass,
// shm_pipeline.h): a message that fits one slot takes one pass, in which
// each rank waits for the others as MPI mode's control plane does (a spin
// of 200 us where every rank has a core, else a yield; then a sleep on the
// doorbell's futex, shm_wait.h). So a cycle whose
// tensors all hit the response cache costs microseconds, not a Gloo
// collective's hundreds, and a waiting coordinator does not hold a core.
// A peer that dies makes the others throw RankFailure naming it within about
// 0.1 s; one that stops answering, after HOROVODCPP_SHM_TIMEOUT_SECONDS.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/shm/shm_pipeline.h"
#include "backend/shm/shm_segment.h"
#include "core/negotiation/controller.h"

namespace hvd {

class ShmController : public Controller {
 public:
  // Bytes of one rank's slot per stage: a response cache's bit vector or a
  // few dozen requests fit one slot; larger messages stream through several.
  static constexpr std::size_t kSlotBytes = std::size_t{16} << 10;
  static constexpr int kStages = 4;
  // The payloads of one bitwise AND, all ranks' together.
  static constexpr std::size_t kPayloadBytesAllRanks = std::size_t{8} << 10;

  // Over `segment` (every rank's record holds its process identity), whose
  // name, already removed, is `name`.
  ShmController(const Topology& topology, shm::ShmSegment segment, std::string name,
                const shm::WaitPolicy& policy);

  const Topology& topology() const override { return topology_; }
  std::vector<std::string> gather_to_root(const std::string& message) override;
  std::string broadcast_from_root(const std::string& message) override;
  // Throw InvalidArgument on every rank if the ranks' vectors differ in length.
  void bitwise_and(std::vector<std::uint64_t>& words) override;
  std::size_t payload_capacity() const override;
  void bitwise_and_gathering(std::vector<std::uint64_t>& words, const std::string& payload,
                             std::vector<std::string>& gathered) override;

  const std::string& segment_name() const { return segment_name_; }

 private:
  // Every rank sends `bytes` bytes at `mine`; read(r, offset, piece, size)
  // gets each piece of every rank's message (lengths_[r] bytes in all).
  template <typename Read>
  void exchange(const char* what, const void* mine, std::uint64_t bytes, Read&& read);

  Topology topology_;
  shm::ShmSegment segment_;
  std::string segment_name_;
  shm::ChunkPipeline pipeline_;
  std::vector<std::uint64_t> lengths_;  // of the last exchange, per rank
  // bitwise_and's messages, reused: this rank's, every rank's, and the
  // payloads a plain bitwise_and gathers (all empty).
  std::string outgoing_;
  std::vector<std::string> received_;
  std::vector<std::string> gathered_;
};

// The transport hook: a ShmController over `setup`'s ranks when there are
// several, all on this host, and HOROVODCPP_SHM is not 0 on rank 0; else
// null (rank 0 logs why when the segment could not be shared, and that
// `fallback` is used). Collective over `setup`, which serves only the setup.
std::unique_ptr<Controller> maybe_shm_controller(Controller& setup, const std::string& fallback);

}  // namespace hvd
