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
    // Cut as a buffer of its own: 1 MiB edges keep two chunks on the
    // network at once (two lanes) from its start to its end.
    const std::vector<std::size_t> chunks = FusionPipeline::chunk_bounds(bytes);
    for (std::size_t c = 1; c < chunks.size(); ++c) bounds_.push_back(offset + chunks[c]);
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
