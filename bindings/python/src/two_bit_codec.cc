// Compression.twobit's encoder and decoder for CPU tensors (two_bit.py has
// the format and the same in torch operations, used for CUDA tensors): one
// pass over the data each, where the torch operations take about eight,
// which on a slow link is the difference between paying and not.
#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "horovodcpp/horovodcpp.h"
#include "module.h"
#include "tensor_import.h"

namespace hvdpy {
namespace {

const void* cpu_data(const ImportedTensor& t, const char* what) {
  if (t.view.device.type != hvd::DeviceType::kCPU) {
    throw py::value_error(std::string("two_bit codec: ") + what + " must be a CPU tensor");
  }
  return t.view.data;
}

void check_float(const ImportedTensor& t, const char* what) {
  if (t.view.dtype != hvd::DataType::kFloat32 && t.view.dtype != hvd::DataType::kFloat64) {
    throw py::value_error(std::string("two_bit codec: ") + what + " must be float32 or float64");
  }
}

void check_dtype(const ImportedTensor& t, hvd::DataType dtype, const char* what) {
  if (t.view.dtype != dtype) {
    throw py::value_error(std::string("two_bit codec: ") + what + " must be " +
                          hvd::dtype_name(dtype) + ", not " + hvd::dtype_name(t.view.dtype));
  }
}

// residual = prescale * gradient (+ residual when add_residual); each element
// sent as code 1 (>= threshold), 2 (<= -threshold) or 0 and taken out of the
// residual; four codes per byte, the first in the lowest bits.
template <typename T>
void encode(const T* gradient, T* residual, std::int64_t n, double prescale_factor,
            bool add_residual, double threshold_value, std::uint8_t* codes) {
  const T prescale = static_cast<T>(prescale_factor);
  const T threshold = static_cast<T>(threshold_value);
  std::memset(codes, 0, static_cast<std::size_t>((n + 3) / 4));
  for (std::int64_t i = 0; i < n; ++i) {
    T v = gradient[i] * prescale + (add_residual ? residual[i] : T(0));
    std::uint8_t code = 0;
    if (v >= threshold) {
      code = 1;
      v -= threshold;
    } else if (v <= -threshold) {
      code = 2;
      v += threshold;
    }
    residual[i] = v;
    codes[i / 4] |= static_cast<std::uint8_t>(code << (2 * (i % 4)));
  }
}

// out = scale * the sum over rows of the sent values in threshold units.
template <typename T>
void decode_sum(const std::uint8_t* rows, std::int64_t row_count, std::int64_t row_bytes,
                std::int64_t offset, std::int64_t n, double scale, T* out) {
  static const std::array<std::array<std::int8_t, 4>, 256> kValues = [] {
    std::array<std::array<std::int8_t, 4>, 256> table{};
    for (int byte = 0; byte < 256; ++byte) {
      for (int k = 0; k < 4; ++k) {
        const int code = (byte >> (2 * k)) & 3;
        table[byte][k] = static_cast<std::int8_t>(code == 1 ? 1 : code == 2 ? -1 : 0);
      }
    }
    return table;
  }();
  std::memset(out, 0, static_cast<std::size_t>(n) * sizeof(T));
  for (std::int64_t r = 0; r < row_count; ++r) {
    const std::uint8_t* codes = rows + r * row_bytes + offset;
    for (std::int64_t i = 0; i < n; ++i) out[i] += kValues[codes[i / 4]][i % 4];
  }
  const T factor = static_cast<T>(scale);
  for (std::int64_t i = 0; i < n; ++i) out[i] *= factor;
}

void encode_py(py::object gradient_obj, py::object residual_obj, py::object codes_obj,
               double prescale, bool add_residual, double threshold) {
  ImportedTensor gradient = import_tensor(gradient_obj, false);
  ImportedTensor residual = import_tensor(residual_obj, true);
  ImportedTensor codes = import_tensor(codes_obj, true);
  const std::int64_t n = gradient.view.num_elements();
  check_float(gradient, "gradient");
  check_dtype(residual, gradient.view.dtype, "residual");
  check_dtype(codes, hvd::DataType::kUInt8, "codes");
  if (residual.view.num_elements() != n || codes.view.num_elements() != (n + 3) / 4) {
    throw py::value_error("two_bit codec: residual or codes of the wrong size");
  }
  const void* g = cpu_data(gradient, "gradient");
  void* res = const_cast<void*>(cpu_data(residual, "residual"));
  auto* out = static_cast<std::uint8_t*>(const_cast<void*>(cpu_data(codes, "codes")));
  py::gil_scoped_release unlocked;
  if (gradient.view.dtype == hvd::DataType::kFloat32) {
    encode(static_cast<const float*>(g), static_cast<float*>(res), n, prescale, add_residual,
           threshold, out);
  } else {
    encode(static_cast<const double*>(g), static_cast<double*>(res), n, prescale, add_residual,
           threshold, out);
  }
}

void decode_sum_py(py::object rows_obj, std::int64_t offset, double scale, py::object out_obj) {
  ImportedTensor rows = import_tensor(rows_obj, false);
  ImportedTensor out = import_tensor(out_obj, true);
  check_dtype(rows, hvd::DataType::kUInt8, "rows");
  check_float(out, "out");
  if (rows.view.shape.size() != 2) throw py::value_error("two_bit codec: rows must be 2-D");
  const std::int64_t n = out.view.num_elements();
  const std::int64_t row_count = rows.view.shape[0], row_bytes = rows.view.shape[1];
  if (offset < 0 || offset + (n + 3) / 4 > row_bytes) {
    throw py::value_error("two_bit codec: rows too short for the output");
  }
  const auto* r = static_cast<const std::uint8_t*>(cpu_data(rows, "rows"));
  void* o = const_cast<void*>(cpu_data(out, "out"));
  py::gil_scoped_release unlocked;
  if (out.view.dtype == hvd::DataType::kFloat32) {
    decode_sum(r, row_count, row_bytes, offset, n, scale, static_cast<float*>(o));
  } else {
    decode_sum(r, row_count, row_bytes, offset, n, scale, static_cast<double*>(o));
  }
}

}  // namespace

void bind_two_bit_codec(py::module_& m) {
  m.def("two_bit_encode", &encode_py, py::arg("gradient"), py::arg("residual"), py::arg("codes"),
        py::arg("prescale"), py::arg("add_residual"), py::arg("threshold"),
        "residual = prescale * gradient (+ residual); packs each element's 2-bit code into "
        "codes and leaves what was not sent in residual (CPU float32/float64).");
  m.def("two_bit_decode_sum", &decode_sum_py, py::arg("rows"), py::arg("offset"), py::arg("scale"),
        py::arg("out"),
        "out = scale * the sum over the rows of 2-bit codes (from byte `offset` of each row) "
        "in threshold units.");
}

}  // namespace hvdpy
