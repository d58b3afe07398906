#include "horovodcpp/tensor.h"

#include <sstream>

#include "base/check.h"

namespace hvd {
namespace {

std::int64_t product_of(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t dim : shape) {
    HVD_CHECK(dim >= 0, InvalidArgument, "negative dimension in shape " << shape_str(shape));
    n *= dim;
  }
  return n;
}

}  // namespace

std::int64_t TensorView::num_elements() const { return product_of(shape); }

std::size_t TensorView::size_bytes() const {
  return static_cast<std::size_t>(num_elements()) * dtype_size(dtype);
}

Tensor::Tensor(DataType dtype, std::vector<std::int64_t> shape)
    : dtype_(dtype), shape_(std::move(shape)) {
  auto bytes = std::make_shared<std::vector<unsigned char>>(size_bytes());
  data_ = bytes->data();
  storage_ = std::move(bytes);
}

Tensor::Tensor(DataType dtype, std::vector<std::int64_t> shape, Device device, void* data,
               std::shared_ptr<void> storage)
    : dtype_(dtype),
      shape_(std::move(shape)),
      device_(device),
      storage_(std::move(storage)),
      data_(data) {}

std::int64_t Tensor::num_elements() const { return product_of(shape_); }

std::size_t Tensor::size_bytes() const {
  return static_cast<std::size_t>(num_elements()) * dtype_size(dtype_);
}

TensorView Tensor::view() { return TensorView(data(), dtype_, shape_, device_); }

std::string shape_str(const std::vector<std::int64_t>& shape) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

}  // namespace hvd
