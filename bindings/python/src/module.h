// The parts of horovodcpp._core, each bound by its own file.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>

#include "horovodcpp/process_set.h"

namespace hvdpy {

void bind_process_sets(pybind11::module_& m);   // module.cc
void bind_basics(pybind11::module_& m);         // module.cc
void bind_ops(pybind11::module_& m);            // ops.cc
void bind_two_bit_codec(pybind11::module_& m);  // two_bit_codec.cc

// The set an operation runs on: None means the global set.
hvd::ProcessSet resolve(const std::optional<hvd::ProcessSet>& process_set);

}  // namespace hvdpy
