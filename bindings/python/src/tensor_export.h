// Results the library allocated (allgather, alltoall, reducescatter) handed
// to Python as a DLPack producer: torch.utils.dlpack.from_dlpack(buffer) or
// numpy.from_dlpack(buffer) wrap the memory without a copy. Results of CUDA
// tensors are device memory on the input's GPU (kDLCUDA).
#pragma once

#include <pybind11/pybind11.h>

#include "horovodcpp/tensor.h"

namespace hvdpy {

namespace py = pybind11;

class Buffer {
 public:
  explicit Buffer(hvd::Tensor tensor) : tensor_(std::move(tensor)) {}

  // A "dltensor" capsule sharing this buffer's memory. bool is exported as
  // uint8: PyTorch < 2.0 and NumPy < 1.25 cannot import DLPack's bool, so
  // frontends reinterpret it using dtype().
  py::capsule dlpack() const;
  const hvd::Tensor& tensor() const { return tensor_; }

 private:
  hvd::Tensor tensor_;
};

void bind_buffer(py::module_& m);

}  // namespace hvdpy
