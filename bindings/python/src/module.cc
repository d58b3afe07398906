// horovodcpp._core: the C++ library for every Python framework. Blocking
// calls release the GIL so other Python threads (data loaders) keep running.
#include "module.h"

#include <pybind11/stl.h>

#include "errors.h"
#include "horovodcpp/horovodcpp.h"
#include "tensor_export.h"
#include "work.h"

namespace hvdpy {

namespace py = pybind11;

void bind_basics(py::module_& m) {
  const auto no_gil = py::call_guard<py::gil_scoped_release>();
  m.def("init", [] { hvd::init(); }, no_gil,
        "Starts the runtime (settings from HOROVODCPP_* / HOROVOD_* variables).");
  m.def("shutdown", [] {
    {
      py::gil_scoped_release release;
      hvd::shutdown();
    }
    release_all();
  }, "Stops the runtime; operations still pending fail on every rank.");
  m.def("is_initialized", &hvd::is_initialized);
  m.def("rank", &hvd::rank);
  m.def("size", &hvd::size);
  m.def("local_rank", &hvd::local_rank);
  m.def("local_size", &hvd::local_size);
  m.def("cross_rank", &hvd::cross_rank);
  m.def("cross_size", &hvd::cross_size);
  m.def("barrier", [] { hvd::barrier(); }, no_gil);
  m.def("join", &hvd::join, no_gil,
        "Waits until every rank has joined; meanwhile this rank contributes zeros to the\n"
        "others' Sum/Average allreduces. Returns the last rank to join.");
  m.def("start_timeline", &hvd::start_timeline, py::arg("path"), py::arg("mark_cycles") = false);
  m.def("stop_timeline", &hvd::stop_timeline, no_gil);
  m.def("built_transports", [] {
    std::vector<std::string> names;
    if (HVD_BUILT_MPI) names.emplace_back("mpi");
    if (HVD_BUILT_GLOO) names.emplace_back("gloo");
    return names;
  }, "The transports of this build, in order of preference.");
  m.attr("__version__") = hvd::version();
}

}  // namespace hvdpy

PYBIND11_MODULE(_core, m) {
  m.doc() = "horovodcpp's C++ core; use horovodcpp.torch (or .tensorflow) instead.";
  hvdpy::bind_errors(m);
  hvdpy::bind_buffer(m);
  hvdpy::bind_work(m);
  hvdpy::bind_basics(m);
  hvdpy::bind_ops(m);
}
