// The collectives: import the tensors, submit, return Work handles. Inputs
// are tensors or (tensor, dtype name) pairs (see tensor_import.h).
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "horovodcpp/horovodcpp.h"
#include "module.h"
#include "tensor_import.h"
#include "work.h"

namespace hvdpy {

void keep_for_good(std::shared_ptr<void> keep) {
  static auto* orphans = new std::vector<std::shared_ptr<void>>();
  orphans->push_back(std::move(keep));
}

namespace {

using OptSet = std::optional<hvd::ProcessSet>;  // None: the global set

// CUDA tensors get `stream` (a cudaStream_t as an integer, 0: the legacy
// default stream): the core orders its reads after the work queued there so
// far and the stream's later work after the result. CPU tensors ignore it.
ImportedTensor import_on(py::handle obj, bool writable, std::uintptr_t stream) {
  ImportedTensor tensor = import_tensor(obj, writable);
  if (tensor.view.device.type == hvd::DeviceType::kCUDA) {
    tensor.view.stream = reinterpret_cast<void*>(stream);
  }
  return tensor;
}

std::vector<ImportedTensor> import_all(const std::vector<py::object>& objs, bool writable,
                                       std::uintptr_t stream) {
  std::vector<ImportedTensor> result;
  for (const py::object& obj : objs) result.push_back(import_on(obj, writable, stream));
  return result;
}

std::vector<hvd::TensorView> views(const std::vector<ImportedTensor>& tensors) {
  std::vector<hvd::TensorView> result;
  for (const ImportedTensor& t : tensors) result.push_back(t.view);
  return result;
}

// One Work per member; member i keeps inputs[i] (and outputs[i]) alive.
std::vector<Work> member_works(std::vector<hvd::Work> works,
                               const std::vector<ImportedTensor>& inputs,
                               const std::vector<ImportedTensor>& outputs = {}) {
  std::vector<Work> result;
  for (std::size_t i = 0; i < works.size(); ++i) {
    std::vector<const ImportedTensor*> used{&inputs[i]};
    if (!outputs.empty()) used.push_back(&outputs[i]);
    result.push_back(make_work(std::move(works[i]), used));
  }
  return result;
}

Work allreduce_async(py::object input, py::object output, const std::string& name, hvd::ReduceOp op,
                     double prescale, double postscale, const OptSet& ps, std::uintptr_t stream) {
  release_finished();
  if (output.is_none()) {
    ImportedTensor tensor = import_on(input, /*writable=*/true, stream);
    return make_work(hvd::allreduce_async(tensor.view, name, op, prescale, postscale, resolve(ps)),
                     {&tensor});
  }
  ImportedTensor in = import_on(input, false, stream);
  ImportedTensor out = import_on(output, true, stream);
  return make_work(
      hvd::allreduce_async(in.view, out.view, name, op, prescale, postscale, resolve(ps)),
      {&in, &out});
}

// The blocking allreduce: a lone CPU allreduce runs in the caller's own
// cycle (the core's lone blocking path), with no Work or hand-over.
void allreduce(py::object input, py::object output, const std::string& name, hvd::ReduceOp op,
               double prescale, double postscale, const OptSet& ps, std::uintptr_t stream,
               std::optional<double> timeout_seconds) {
  const hvd::ProcessSet set = resolve(ps);
  std::optional<std::chrono::milliseconds> timeout;
  if (timeout_seconds) {
    timeout = std::chrono::milliseconds(static_cast<long long>(*timeout_seconds * 1000.0));
  }
  ImportedTensor in = import_on(input, /*writable=*/output.is_none(), stream);
  std::optional<ImportedTensor> out;
  if (!output.is_none()) out = import_on(output, true, stream);
  try {
    py::gil_scoped_release release;
    hvd::allreduce(in.view, out ? out->view : in.view, name, op, prescale, postscale, set, timeout);
  } catch (const hvd::Timeout&) {
    keep_for_good(in.keep);
    if (out) keep_for_good(out->keep);
    throw;
  }
}

// dtype name ("float32", ...) -> hvd::DataType's value (set_direct_tensor_types).
py::dict dtype_codes() {
  py::dict codes;
  for (int code = 0; code < hvd::kNumDataTypes; ++code) {
    codes[py::str(hvd::dtype_name(static_cast<hvd::DataType>(code)))] = code;
  }
  return codes;
}

Work allgather_async(py::object input, const std::string& name, const OptSet& ps,
                     std::uintptr_t stream) {
  release_finished();
  ImportedTensor in = import_on(input, false, stream);
  return make_work(hvd::allgather_async(in.view, name, resolve(ps)), {&in});
}

Work broadcast_async(py::object tensor, int root_rank, const std::string& name, const OptSet& ps,
                     std::uintptr_t stream) {
  release_finished();
  ImportedTensor t = import_on(tensor, true, stream);
  return make_work(hvd::broadcast_async(t.view, root_rank, name, resolve(ps)), {&t});
}

Work alltoall_async(py::object input, const std::vector<std::int64_t>& splits,
                    const std::string& name, const OptSet& ps, std::uintptr_t stream) {
  release_finished();
  ImportedTensor in = import_on(input, false, stream);
  return make_work(hvd::alltoall_async(in.view, splits, name, resolve(ps)), {&in});
}

Work reducescatter_async(py::object input, const std::string& name, hvd::ReduceOp op,
                         double prescale, double postscale, const OptSet& ps,
                         std::uintptr_t stream) {
  release_finished();
  ImportedTensor in = import_on(input, false, stream);
  return make_work(hvd::reducescatter_async(in.view, name, op, prescale, postscale, resolve(ps)),
                   {&in});
}

std::vector<Work> allreduce_async_many(const std::vector<py::object>& inputs,
                                       const std::vector<std::string>& names, hvd::ReduceOp op,
                                       double prescale, double postscale, const OptSet& ps,
                                       std::uintptr_t stream) {
  release_finished();
  auto tensors = import_all(inputs, true, stream);
  return member_works(
      hvd::allreduce_async_many(views(tensors), names, op, prescale, postscale, resolve(ps)),
      tensors);
}

std::vector<Work> grouped_allreduce_async(const std::vector<py::object>& inputs,
                                          std::optional<std::vector<py::object>> outputs,
                                          const std::string& name, hvd::ReduceOp op,
                                          double prescale, double postscale, const OptSet& ps,
                                          std::uintptr_t stream) {
  release_finished();
  if (!outputs) {
    auto tensors = import_all(inputs, true, stream);
    return member_works(
        hvd::grouped_allreduce_async(views(tensors), name, op, prescale, postscale, resolve(ps)),
        tensors);
  }
  auto in = import_all(inputs, false, stream);
  auto out = import_all(*outputs, true, stream);
  return member_works(hvd::grouped_allreduce_async(views(in), views(out), name, op, prescale,
                                                   postscale, resolve(ps)),
                      in, out);
}

std::vector<Work> grouped_allgather_async(const std::vector<py::object>& inputs,
                                          const std::string& name, const OptSet& ps,
                                          std::uintptr_t stream) {
  release_finished();
  auto in = import_all(inputs, false, stream);
  return member_works(hvd::grouped_allgather_async(views(in), name, resolve(ps)), in);
}

std::vector<Work> grouped_reducescatter_async(const std::vector<py::object>& inputs,
                                              const std::string& name, hvd::ReduceOp op,
                                              double prescale, double postscale, const OptSet& ps,
                                              std::uintptr_t stream) {
  release_finished();
  auto in = import_all(inputs, false, stream);
  return member_works(
      hvd::grouped_reducescatter_async(views(in), name, op, prescale, postscale, resolve(ps)), in);
}

}  // namespace

void bind_ops(py::module_& m) {
  py::enum_<hvd::ReduceOp>(m, "ReduceOp")
      .value("Sum", hvd::ReduceOp::kSum)
      .value("Average", hvd::ReduceOp::kAverage)
      .value("Min", hvd::ReduceOp::kMin)
      .value("Max", hvd::ReduceOp::kMax)
      .value("Product", hvd::ReduceOp::kProduct)
      .value("Adasum", hvd::ReduceOp::kAdasum);

  const auto avg = hvd::ReduceOp::kAverage;
  const auto on = [] { return py::arg("process_set") = py::none(); };  // None: the global set
  // CUDA tensors' stream (torch.cuda.current_stream().cuda_stream); 0: default.
  const auto st = [] { return py::arg("stream") = std::uintptr_t(0); };
  m.def("allreduce_async", &allreduce_async, py::arg("input"), py::arg("output") = py::none(),
        py::arg("name") = "", py::arg("op") = avg, py::arg("prescale_factor") = 1.0,
        py::arg("postscale_factor") = 1.0, on(), st(),
        "output = postscale * reduce(prescale * input); in place when output is None.");
  m.def("allreduce", &allreduce, py::arg("input"), py::arg("output") = py::none(),
        py::arg("name") = "", py::arg("op") = avg, py::arg("prescale_factor") = 1.0,
        py::arg("postscale_factor") = 1.0, on(), st(), py::arg("timeout") = py::none(),
        "allreduce_async and wait in one call, without the GIL (a lone CPU allreduce runs in\n"
        "the caller's own cycle); raises the operation's error, or HorovodTimeoutError after\n"
        "`timeout` seconds (the operation then stays in flight).");
  m.def("dtype_codes", &dtype_codes, "dtype name -> the core's dtype code");
  m.def("allreduce_async_many", &allreduce_async_many, py::arg("inputs"), py::arg("names"),
        py::arg("op") = avg, py::arg("prescale_factor") = 1.0, py::arg("postscale_factor") = 1.0,
        on(), st(),
        "In place, inputs[i] named names[i], each its own allreduce (not a group), submitted in "
        "one call; a Work each.");
  m.def("allgather_async", &allgather_async, py::arg("input"), py::arg("name") = "", on(), st());
  m.def("broadcast_async", &broadcast_async, py::arg("tensor"), py::arg("root_rank"),
        py::arg("name") = "", on(), st(), "root_rank is a global rank, also on a process set.");
  m.def("alltoall_async", &alltoall_async, py::arg("input"),
        py::arg("splits") = std::vector<std::int64_t>{}, py::arg("name") = "", on(), st());
  m.def("reducescatter_async", &reducescatter_async, py::arg("input"), py::arg("name") = "",
        py::arg("op") = avg, py::arg("prescale_factor") = 1.0, py::arg("postscale_factor") = 1.0,
        on(), st());
  m.def("grouped_allreduce_async", &grouped_allreduce_async, py::arg("inputs"),
        py::arg("outputs") = py::none(), py::arg("name") = "", py::arg("op") = avg,
        py::arg("prescale_factor") = 1.0, py::arg("postscale_factor") = 1.0, on(), st());
  m.def("grouped_allgather_async", &grouped_allgather_async, py::arg("inputs"),
        py::arg("name") = "", on(), st());
  m.def("grouped_reducescatter_async", &grouped_reducescatter_async, py::arg("inputs"),
        py::arg("name") = "", py::arg("op") = avg, py::arg("prescale_factor") = 1.0,
        py::arg("postscale_factor") = 1.0, on(), st());
}

}  // namespace hvdpy
