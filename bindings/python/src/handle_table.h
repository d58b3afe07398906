// HandleTable: Horovod's integer handles for operations started on dense
// tensors (direct_tensor_calls.h), kept on the C++ side: the submit
// returns an int and synchronize_handle waits and hands back the result,
// with no Python Work object and no Python dictionary entry per operation
// (a training step starts a few hundred). horovodcpp.torch's own handles
// (groups, DLPack operations) take their numbers from the same counter
// (new_handle), so the two never collide.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>

#include "horovodcpp/work.h"

namespace hvdpy {

namespace py = pybind11;

// A new handle for the operation `work`, which reads `input` and writes
// `output` (the result; the same object in place): both stay alive until
// the handle is synchronized. Called with the GIL held.
std::int64_t add_handle(hvd::Work work, py::object input, py::object output);

void bind_handle_table(py::module_& m);

}  // namespace hvdpy
