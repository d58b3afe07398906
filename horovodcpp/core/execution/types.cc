#include "horovodcpp/types.h"

#include "base/check.h"
#include "core/execution/half.h"

namespace hvd {

std::size_t dtype_size(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kBool: return 1;
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kFloat16:
    case DataType::kBFloat16: return 2;
    case DataType::kInt32:
    case DataType::kFloat32: return 4;
    case DataType::kInt64:
    case DataType::kFloat64: return 8;
  }
  HVD_THROW(InvalidArgument, "unknown DataType " << static_cast<int>(dtype));
}

const char* dtype_name(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUInt16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kBool: return "bool";
  }
  HVD_THROW(InvalidArgument, "unknown DataType " << static_cast<int>(dtype));
}

bool is_floating(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64: return true;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kBool: return false;
  }
  HVD_THROW(InvalidArgument, "unknown DataType " << static_cast<int>(dtype));
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "Sum";
    case ReduceOp::kAverage: return "Average";
    case ReduceOp::kMin: return "Min";
    case ReduceOp::kMax: return "Max";
    case ReduceOp::kProduct: return "Product";
    case ReduceOp::kAdasum: return "Adasum";
  }
  HVD_THROW(InvalidArgument, "unknown ReduceOp " << static_cast<int>(op));
}

std::string Device::str() const {
  switch (type) {
    case DeviceType::kCPU: return "cpu";
    case DeviceType::kCUDA: return "cuda:" + std::to_string(index);
  }
  HVD_THROW(InvalidArgument, "unknown DeviceType " << static_cast<int>(type));
}

float16_t::float16_t(float value) : bits(float_to_half_bits(value)) {}
float16_t::operator float() const { return half_bits_to_float(bits); }

bfloat16_t::bfloat16_t(float value) : bits(float_to_bfloat16_bits(value)) {}
bfloat16_t::operator float() const { return bfloat16_bits_to_float(bits); }

}  // namespace hvd
