// A CPU backend for one-rank coordinator tests: counts the allreduces it is
// given and leaves the data as it is (at one rank the input is the result).
#pragma once

#include <atomic>
#include <cstddef>
#include <vector>

#include "core/execution/backend.h"

namespace hvd {

class CountingBackend : public Backend {
 public:
  const char* name() const override { return "counting"; }
  BackendCapabilities capabilities() const override { return {}; }
  void allreduce(void*, std::size_t, DataType, ReduceOp) override { ++allreduces; }
  void allgatherv(const void*, void*, const std::vector<std::size_t>&, DataType) override {}
  void broadcast(void*, std::size_t, DataType, int) override {}
  void alltoallv(const void*, const std::vector<std::size_t>&, void*,
                 const std::vector<std::size_t>&, DataType) override {}
  void reducescatter(void*, void*, const std::vector<std::size_t>&, DataType, ReduceOp) override {}
  std::atomic<int> allreduces{0};
};

}  // namespace hvd
