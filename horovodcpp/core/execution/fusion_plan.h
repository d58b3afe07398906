// Tensor fusion planning: which allreduces of one cycle share a fusion
// buffer. Every rank plans from the same agreed responses and the same
// (validated) shapes, so every rank forms the same groups in the same order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/negotiation/message.h"

namespace hvd {

struct FusionCandidate {
  bool fusable = false;  // an allreduce that negotiated without error
  // Only equal keys fuse: dtype, op, scale factors, device type (not the
  // GPU: ranks use different ones), the number of joined ranks.
  std::string key;
  std::size_t bytes = 0;  // what it takes in the fusion buffer
  // Grouped allreduce (Request::group_id; empty: none): a group's members
  // with equal keys fuse together whatever the threshold (even 0), as
  // Horovod does, and never with tensors outside the group.
  std::string group;
};

// The candidate for a tensor of `elements` elements agreed as `response`
// (its own request: `request`). `staged_in_float32`: a float16/bfloat16
// allreduce widened to float32 in the fusion buffer.
FusionCandidate fusion_candidate(const Response& response, const Request& request,
                                 std::size_t elements, bool staged_in_float32);

// Groups of candidate indices, in execution order (a group runs where its
// first member stands). A group's bytes add up to at most `threshold`; a
// candidate larger than that, or not fusable, is a group of its own.
// threshold 0 disables fusion (except within a group, see above).
std::vector<std::vector<std::size_t>> plan_fusion(const std::vector<FusionCandidate>& candidates,
                                                  std::size_t threshold);

}  // namespace hvd
