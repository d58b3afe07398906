// The parts of horovodcpp._core, each bound by its own file.
#pragma once

#include <pybind11/pybind11.h>

namespace hvdpy {

void bind_basics(pybind11::module_& m);  // module.cc
void bind_ops(pybind11::module_& m);     // ops.cc

}  // namespace hvdpy
