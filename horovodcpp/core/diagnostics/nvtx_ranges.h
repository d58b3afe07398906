// NVTX ranges in the domain "horovodcpp", so that Nsight Systems (nsys
// profile) shows each collective's phases beside the CUDA kernels: the
// negotiation, the fusion buffer's copies in and out, the backend's
// transfer. Start/end ranges: one may end on another thread (a GPU
// collective's on the completion poller's). Off with
// HOROVODCPP_DISABLE_NVTX_RANGES=1 (Horovod's HOROVOD_DISABLE_NVTX_RANGES)
// and in a build without the CUDA toolkit's NVTX 3 headers: a start then
// tests one flag. With no profiler attached, NVTX itself returns at once.
#pragma once

#include <cstdint>

namespace hvd {

// Whether ranges are emitted (read once per process).
bool nvtx_ranges_enabled();
// Starts the range `name` (a string literal) now; its id, 0 when off.
std::uint64_t nvtx_range_start(const char* name);
// Ends the range `id` (0: none); any thread, once.
void nvtx_range_end(std::uint64_t id);

// A range over a scope.
class NvtxScope {
 public:
  explicit NvtxScope(const char* name) : id_(nvtx_range_start(name)) {}
  ~NvtxScope() { nvtx_range_end(id_); }
  NvtxScope(const NvtxScope&) = delete;
  NvtxScope& operator=(const NvtxScope&) = delete;

 private:
  std::uint64_t id_;
};

}  // namespace hvd
