#include "core/execution/fused_layout.h"

#include "core/execution/fusion_pipeline.h"

namespace hvd {

FusedLayout::FusedLayout(const std::vector<const TensorEntry*>& group, std::size_t element_size) {
  std::size_t packed = 0;
  for (const TensorEntry* entry : group) {
    const std::size_t bytes = entry->input.num_elements() * element_size;
    if (bytes >= kOwnChunksBytes) continue;
    parts_.push_back({entry, packed, bytes, false});
    packed += bytes;
  }
  bounds_ = packed > 0 ? FusionPipeline::chunk_bounds(packed) : std::vector<std::size_t>{0};
  std::size_t offset = packed;
  for (const TensorEntry* entry : group) {
    const std::size_t bytes = entry->input.num_elements() * element_size;
    if (bytes < kOwnChunksBytes) continue;
    // A joined rank's zeros are not its to reduce into.
    const bool in_place = entry->input.data == entry->output.data &&
                          entry->request.prescale_factor == 1.0 && !entry->joined;
    parts_.push_back({entry, offset, bytes, in_place});
    // Few chunks: each is a whole allreduce with its rounds' start-up (six
    // 4 MiB gradients, three chunks each, took 49-55 ms on two hosts at
    // 10 Gbit/s, one chunk each 37-45 ms). The other lane takes the next.
    const std::size_t count = bytes / element_size;
    const std::size_t pieces = (bytes + kMostChunkBytes - 1) / kMostChunkBytes;
    for (std::size_t c = 1; c <= pieces; ++c) {
      bounds_.push_back(offset + count * c / pieces * element_size);
    }
    offset += bytes;
  }
}

unsigned char* FusedLayout::reduced_at(std::size_t begin, unsigned char* buffer) const {
  for (const Part& part : parts_) {
    if (part.in_own_memory && begin >= part.offset && begin < part.offset + part.bytes) {
      return static_cast<unsigned char*>(part.entry->output.data) + (begin - part.offset);
    }
  }
  return buffer + begin;
}

}  // namespace hvd
