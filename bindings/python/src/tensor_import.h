// Tensors arriving from Python. Any object with __dlpack__ (PyTorch, NumPy,
// JAX, CuPy, ...) or a DLPack capsule is viewed in place; other objects go
// through the buffer protocol. No framework header is needed, so one build
// serves every framework version.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "horovodcpp/tensor.h"

namespace hvdpy {

namespace py = pybind11;

struct ImportedTensor {
  hvd::TensorView view;
  // Owns what keeps the memory alive (the DLPack tensor or the Py_buffer).
  // Released with the GIL held: the producer's deleter may touch Python.
  std::shared_ptr<void> keep;
};

// `obj` is a tensor, or a (tensor, dtype name) tuple that overrides the
// element type (same element size): PyTorch 1.x exports bool as uint8.
// `writable`: the operation writes into the tensor (buffer protocol only;
// DLPack has no read-only flag before version 1.0).
ImportedTensor import_tensor(py::handle obj, bool writable);

}  // namespace hvdpy
