#include "tf_tensors.h"

#include "horovodcpp/errors.h"

namespace hvdtf {

void Status::check(const std::string& what) {
  if (TF_GetCode(status_) != TF_OK) {
    throw TfError(TF_GetCode(status_), what + ": " + TF_Message(status_));
  }
}

hvd::DataType core_dtype(TF_DataType dtype) {
  switch (dtype) {
    case TF_UINT8: return hvd::DataType::kUInt8;
    case TF_INT8: return hvd::DataType::kInt8;
    case TF_UINT16: return hvd::DataType::kUInt16;
    case TF_INT16: return hvd::DataType::kInt16;
    case TF_INT32: return hvd::DataType::kInt32;
    case TF_INT64: return hvd::DataType::kInt64;
    case TF_HALF: return hvd::DataType::kFloat16;
    case TF_BFLOAT16: return hvd::DataType::kBFloat16;
    case TF_FLOAT: return hvd::DataType::kFloat32;
    case TF_DOUBLE: return hvd::DataType::kFloat64;
    case TF_BOOL: return hvd::DataType::kBool;
  }
  throw hvd::InvalidArgument("horovodcpp does not support TensorFlow dtype " +
                             std::to_string(static_cast<int>(dtype)));
}

TF_DataType tf_dtype(hvd::DataType dtype) {
  switch (dtype) {
    case hvd::DataType::kUInt8: return TF_UINT8;
    case hvd::DataType::kInt8: return TF_INT8;
    case hvd::DataType::kUInt16: return TF_UINT16;
    case hvd::DataType::kInt16: return TF_INT16;
    case hvd::DataType::kInt32: return TF_INT32;
    case hvd::DataType::kInt64: return TF_INT64;
    case hvd::DataType::kFloat16: return TF_HALF;
    case hvd::DataType::kBFloat16: return TF_BFLOAT16;
    case hvd::DataType::kFloat32: return TF_FLOAT;
    case hvd::DataType::kFloat64: return TF_DOUBLE;
    case hvd::DataType::kBool: return TF_BOOL;
  }
  throw hvd::InvalidArgument("no TensorFlow dtype for horovodcpp dtype " +
                             std::to_string(static_cast<int>(dtype)));
}

std::vector<std::int64_t> shape_of(const TF_Tensor* tensor) {
  std::vector<std::int64_t> shape(TF_NumDims(tensor));
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) shape[i] = TF_Dim(tensor, i);
  return shape;
}

hvd::TensorView view_of(const TF_Tensor* tensor) {
  return hvd::TensorView(TF_TensorData(tensor), core_dtype(TF_TensorType(tensor)),
                         shape_of(tensor));
}

}  // namespace hvdtf
