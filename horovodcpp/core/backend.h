// Backend: collectives on flat buffers. One implementation per communication
// library (backend/mpi, later gloo and nccl); the core never knows which.
#pragma once

#include <cstddef>
#include <vector>

#include "horovodcpp/types.h"

namespace hvd {

struct BackendCapabilities {
  // True if allreduce Sum/Product of float16/bfloat16 accumulates in float32
  // and rounds once. If false, the core stages those through float32.
  bool half_reduction_in_float32 = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual BackendCapabilities capabilities() const = 0;

  // In-place allreduce of `count` elements. `op` is Sum, Min, Max or
  // Product (the core turns Average into Sum plus a division).
  virtual void allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) = 0;
  // Rank r contributes counts[r] elements; `output` receives all of them
  // concatenated in rank order. `input` holds counts[rank] elements.
  virtual void allgatherv(const void* input, void* output,
                          const std::vector<std::size_t>& counts, DataType dtype) = 0;
  // In-place broadcast of `count` elements from `root`.
  virtual void broadcast(void* buffer, std::size_t count, DataType dtype, int root) = 0;
};

}  // namespace hvd
