// FusedLayout: the order and the chunks in which a pipelined fused
// allreduce (fusion_pipeline.h) takes its tensors. The tensors under
// kOwnChunksBytes come first, packed in the group's order and cut by
// FusionPipeline::chunk_bounds; each larger one follows in chunks of its
// own, as few equal ones as hold kMostChunkBytes each (a large tensor
// still keeps both lanes busy; where it is not in place, the copies that
// cannot be hidden, the first chunk's in and the last one's out, stay
// short). Where it is reduced in place (its input is its output, with no
// prescale) it is reduced in its own memory: never copied into the fusion
// buffer and back. The chunks depend on the tensors' sizes alone, which
// every rank agreed on: every rank cuts them alike, whichever of its
// tensors it reduces in place.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/negotiation/tensor_queue.h"

namespace hvd {

class FusedLayout {
 public:
  static constexpr std::size_t kOwnChunksBytes = std::size_t{1} << 20;
  static constexpr std::size_t kMostChunkBytes = std::size_t{8} << 20;

  // One tensor's bytes in the layout: [offset, offset + bytes).
  struct Part {
    const TensorEntry* entry;
    std::size_t offset;
    std::size_t bytes;
    bool in_own_memory;  // reduced where it is, not in the fusion buffer
  };

  FusedLayout(const std::vector<const TensorEntry*>& group, std::size_t element_size);

  // The chunks' offsets, the layout's bytes last (FusionPipeline::run). No
  // chunk spans two tensors that are reduced in their own memory.
  const std::vector<std::size_t>& bounds() const { return bounds_; }
  // fn(part, byte offset in the tensor, bytes) for each tensor's share of
  // the layout's bytes [begin, end).
  template <typename Fn>
  void for_each_part(std::size_t begin, std::size_t end, Fn fn) const {
    for (const Part& part : parts_) {
      const std::size_t from = std::max(begin, part.offset);
      const std::size_t to = std::min(end, part.offset + part.bytes);
      if (from < to) fn(part, from - part.offset, to - from);
    }
  }
  // Where the chunk starting at `begin` is reduced: in the fusion buffer
  // `buffer` at `begin`, or in its tensor's own memory.
  unsigned char* reduced_at(std::size_t begin, unsigned char* buffer) const;

 private:
  std::vector<Part> parts_;
  std::vector<std::size_t> bounds_;
};

}  // namespace hvd
