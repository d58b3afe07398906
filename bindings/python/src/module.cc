// horovodcpp._core: the C++ library for every Python framework. Blocking
// calls release the GIL so other Python threads (data loaders) keep running.
#include "module.h"

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "completion_queue.h"
#include "direct_tensor_calls.h"
#include "errors.h"
#include "handle_table.h"
#include "horovodcpp/elastic.h"
#include "horovodcpp/horovodcpp.h"
#include "tensor_export.h"
#include "work.h"

namespace hvdpy {

namespace py = pybind11;

void bind_basics(py::module_& m) {
  const auto no_gil = py::call_guard<py::gil_scoped_release>();
  m.def(
      "init",
      [](std::optional<std::vector<std::vector<int>>> process_sets,
         std::optional<std::vector<int>> world_ranks) {
        if (world_ranks) {
          hvd::init_on_ranks(*world_ranks, process_sets.value_or(std::vector<std::vector<int>>{}));
        } else if (process_sets) {
          hvd::init(*process_sets);
        } else {
          hvd::init();
        }
      },
      py::arg("process_sets") = py::none(), py::arg("world_ranks") = py::none(), no_gil,
      "Starts the runtime (settings from HOROVODCPP_* / HOROVOD_* variables). With\n"
      "process_sets (lists of global ranks), also adds those sets (ids 1, 2, ...). With\n"
      "world_ranks (MPI_COMM_WORLD ranks), the job is those ranks, in that order.");
  m.def(
      "shutdown",
      [] {
        {
          py::gil_scoped_release release;
          hvd::shutdown();
        }
        release_all();
      },
      "Stops the runtime; operations still pending fail on every rank.");
  m.def("is_initialized", &hvd::is_initialized);
  m.def("rank", &hvd::rank);
  m.def("size", &hvd::size);
  m.def("local_rank", &hvd::local_rank);
  m.def("local_size", &hvd::local_size);
  m.def("cross_rank", &hvd::cross_rank);
  m.def("cross_size", &hvd::cross_size);
  m.def("is_homogeneous", &hvd::is_homogeneous,
        "True when every host runs the same number of ranks.");
  m.def(
      "barrier", [](std::optional<hvd::ProcessSet> ps) { hvd::barrier(resolve(ps)); },
      py::arg("process_set") = py::none(), no_gil);
  m.def("join", &hvd::join, no_gil,
        "Waits until every rank has joined; meanwhile this rank contributes zeros to the\n"
        "others' allreduces. Returns the last rank to join.");
  m.def("start_timeline", &hvd::start_timeline, py::arg("path"), py::arg("mark_cycles") = false);
  m.def("stop_timeline", &hvd::stop_timeline, no_gil);
  m.def("dump_flight_recorder", &hvd::dump_flight_recorder, py::arg("reason") = "on demand", no_gil,
        "Writes this rank's flight recorder dump now; returns its path ('' when off).");
  m.def("built_transports", &hvd::built_transports,
        "The transports of this build, in order of preference.");
  m.def("built_gpu_operations", &hvd::built_gpu_operations,
        "What HOROVODCPP_GPU_OPERATIONS may name: \"nccl\" if built, then the CPU\n"
        "transports CUDA tensors are staged through; empty without CUDA.");
  m.def("nccl_version", &hvd::nccl_version, "NCCL_VERSION_CODE of this build's NCCL, 0 without.");
  m.def("mpi_threads_supported", &hvd::mpi_threads_supported,
        "Whether MPI provides MPI_THREAD_MULTIPLE (the job must run on MPI).");
  m.def("transport", &hvd::transport, "The transport this job runs on (\"mpi\", \"gloo\").");
  m.def("backend_name", &hvd::backend_name,
        "What the global set's collectives run on (\"mpi\", \"gloo\", \"shm\", \"shm+mpi\",\n"
        "\"shm+gloo\").");
  m.def("elastic_enabled", &hvd::elastic_enabled,
        "True when hvdrun started this process as an elastic job's worker.");
  m.def("elastic_round", &hvd::elastic_round,
        "The membership round the runtime last joined (0: none / not elastic).");
  m.def("elastic_hosts_updated", &hvd::elastic_hosts_updated, no_gil,
        "True when hvdrun published a newer membership than the one joined.");
  m.attr("__version__") = hvd::version();
}

hvd::ProcessSet resolve(const std::optional<hvd::ProcessSet>& process_set) {
  return process_set ? *process_set : hvd::global_process_set();
}

void bind_process_sets(py::module_& m) {
  py::class_<hvd::ProcessSet>(m, "ProcessSet",
                              "A registered process set (made by init, add_process_set).")
      .def_property_readonly("id", &hvd::ProcessSet::id)
      .def_property_readonly("ranks", &hvd::ProcessSet::ranks, "The members' global ranks.")
      .def("size", &hvd::ProcessSet::size)
      .def("rank", &hvd::ProcessSet::rank, "This process's rank in the set, -1 outside.")
      .def("included", &hvd::ProcessSet::included)
      .def("__eq__", [](const hvd::ProcessSet& a, const hvd::ProcessSet& b) { return a == b; })
      .def("__repr__", [](const hvd::ProcessSet& ps) {
        return "ProcessSet(id=" + std::to_string(ps.id()) +
               ", ranks=" + py::repr(py::cast(ps.ranks())).cast<std::string>() + ")";
      });
  const auto no_gil = py::call_guard<py::gil_scoped_release>();
  m.def("global_process_set", &hvd::global_process_set);
  m.def("add_process_set", &hvd::add_process_set, py::arg("ranks"), no_gil,
        "Collective over every rank: registers the set of these global ranks.");
  m.def("remove_process_set", &hvd::remove_process_set, py::arg("process_set"), no_gil,
        "Collective over every rank: unregisters the set.");
  m.def("process_sets", &hvd::process_sets, "Every registered set, the global one first.");
}

}  // namespace hvdpy

PYBIND11_MODULE(_core, m) {
  m.doc() = "horovodcpp's C++ core; use horovodcpp.torch (or .tensorflow) instead.";
  hvdpy::bind_errors(m);
  hvdpy::bind_buffer(m);
  hvdpy::bind_work(m);
  hvdpy::bind_handle_table(m);
  hvdpy::bind_completion_queue(m);
  hvdpy::bind_process_sets(m);
  hvdpy::bind_basics(m);
  hvdpy::bind_ops(m);
  hvdpy::bind_direct_tensor_calls(m);
  hvdpy::bind_two_bit_codec(m);
}
