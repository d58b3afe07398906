// The allreduce calls horovodcpp.torch makes once per gradient, for dense
// contiguous CPU tensors, as fast calls (fast_call.h) that read the
// tensor's address, dtype and shape through its Python attributes (dtype,
// is_cpu, layout, is_contiguous(), data_ptr(), shape): no DLPack export and
// import, no pybind11 dispatch, no Python in between. Any other tensor
// (CUDA, sparse, non-contiguous, another dtype) gets NotImplemented back,
// and the caller takes the DLPack path.
#pragma once

#include <pybind11/pybind11.h>

namespace hvdpy {

void bind_cpu_tensor_calls(pybind11::module_& m);

}  // namespace hvdpy
