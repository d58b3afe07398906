// The process-set ids that backends take for their own sub-transports
// (ProcessSetChannel::create_transport). User sets are 1, 2, ...; each use
// here owns a negative range of its own, so no two sub-transports (nor
// Gloo's "process_set.<id>" store prefixes) can share an id.
#pragma once

namespace hvd {

// The first id of each range; a range counts down from it (first - index).
// kInternalSetRange ids each: more hosts, or ranks per host, than any job has.
constexpr int kInternalSetRange = 100000;
constexpr int kShmHostSetId = -1;        // - h: the ranks of host h (two-level CPU backend)
constexpr int kShmCrossSetId = -100001;  // - l: the l-th rank of every host (likewise)
constexpr int kGpuHostSetId = -200001;   // - h: the ranks of host h (NCCL hierarchical allreduce)
constexpr int kGpuCrossSetId = -300001;  // - l: the l-th rank of every host (likewise)

static_assert(kShmCrossSetId == kShmHostSetId - kInternalSetRange &&
                  kGpuHostSetId == kShmCrossSetId - kInternalSetRange &&
                  kGpuCrossSetId == kGpuHostSetId - kInternalSetRange,
              "the internal ranges must not overlap");

}  // namespace hvd
