// The parts of horovodcpp._core, each bound by its own file.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>

#include "horovodcpp/process_set.h"

namespace hvdpy {

void bind_process_sets(pybind11::module_& m);   // module.cc
void bind_basics(pybind11::module_& m);         // module.cc
void bind_ops(pybind11::module_& m);            // ops.cc
void bind_two_bit_codec(pybind11::module_& m);  // two_bit_codec.cc

// The set an operation runs on: None means the global set.
hvd::ProcessSet resolve(const std::optional<hvd::ProcessSet>& process_set);

// What a blocking call that timed out still has in flight, with no handle
// to wait for: kept for good (a timed-out job is ending), never freed under
// the core (nor released, so no GIL is needed). ops.cc.
void keep_for_good(std::shared_ptr<void> keep);

}  // namespace hvdpy
