// The allreduce calls horovodcpp.torch makes once per gradient, for dense
// contiguous tensors, as fast calls (fast_call.h) that read the tensor's
// address, dtype, shape and device through its Python attributes (dtype,
// is_cpu, is_cuda, layout, is_contiguous(), data_ptr(), shape,
// get_device()): no DLPack export and import, no pybind11 dispatch, no
// Python in between. A CUDA tensor goes with its device's current stream,
// as on the DLPack path. Any other tensor (sparse, non-contiguous, another
// dtype or device) gets NotImplemented back, and the caller takes the
// DLPack path.
#pragma once

#include <pybind11/pybind11.h>

namespace hvdpy {

void bind_direct_tensor_calls(pybind11::module_& m);

}  // namespace hvdpy
