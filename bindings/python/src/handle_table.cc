#include "handle_table.h"

#include <unordered_map>
#include <utility>

#include "fast_call.h"
#include "work.h"

namespace hvdpy {
namespace {

struct Entry {
  hvd::Work work;
  py::object input;
  py::object output;
};

// Only touched with the GIL held, which also serialises access. Never
// destroyed: its Python objects must not be released after the
// interpreter has finalised.
std::unordered_map<std::int64_t, Entry>& table() {
  static auto* entries = new std::unordered_map<std::int64_t, Entry>();
  return *entries;
}

std::int64_t g_next_handle = 0;

// synchronize_handle(handle): the handle's result once its operation is
// done (raising its error), or None for a handle that is not in the table.
// A fast call: a training step makes one per gradient.
py::object synchronize_handle(PyObject* const* args, Py_ssize_t nargs) {
  expect_arguments("synchronize_handle", nargs, 1);
  const std::int64_t handle = PyLong_AsLongLong(args[0]);
  if (handle == -1 && PyErr_Occurred()) throw py::error_already_set();
  auto it = table().find(handle);
  if (it == table().end()) return py::none();
  const hvd::Work work = it->second.work;
  try {
    wait_without_gil(work);
  } catch (...) {
    table().erase(handle);  // done, even if failed: its tensors may go
    throw;
  }
  // Looked up again: another Python thread may have changed the table meanwhile.
  it = table().find(handle);
  if (it == table().end()) return py::none();
  py::object output = std::move(it->second.output);
  table().erase(it);
  return output;
}

// True/False once/while the handle's operation runs; None for a handle
// that is not in the table.
py::object poll_handle(std::int64_t handle) {
  auto it = table().find(handle);
  if (it == table().end()) return py::none();
  return py::bool_(it->second.work.poll());
}

}  // namespace

std::int64_t add_handle(hvd::Work work, py::object input, py::object output) {
  const std::int64_t handle = g_next_handle++;
  table().emplace(handle, Entry{std::move(work), std::move(input), std::move(output)});
  return handle;
}

void bind_handle_table(py::module_& m) {
  m.def(
      "new_handle", [] { return g_next_handle++; },
      "A handle number that no operation of the table has (for handles kept in Python).");
  def_fast(m, "synchronize_handle", &fast_call<synchronize_handle>,
           "synchronize_handle(handle): waits (without the GIL) for the handle's operation and\n"
           "returns its result, raising its error; None for a handle not in the table\n"
           "(unknown or already synchronized).");
  m.def("poll_handle", &poll_handle, py::arg("handle"),
        "Whether the handle's operation is done; None for a handle not in the table.");
}

}  // namespace hvdpy
