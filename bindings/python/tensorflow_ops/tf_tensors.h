// TensorFlow tensors as horovodcpp sees them: dtypes, shapes and views, and
// the TF_Status that the C API reports through.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "horovodcpp/tensor.h"
#include "tf_c_api.h"

namespace hvdtf {

// An error TensorFlow's C API reported, with its code.
class TfError : public std::runtime_error {
 public:
  TfError(TF_Code code, const std::string& message) : std::runtime_error(message), code(code) {}
  TF_Code code;
};

// A TF_Status for one call; check() throws TfError if the call failed.
class Status {
 public:
  Status() : status_(TF_NewStatus()) {}
  ~Status() { TF_DeleteStatus(status_); }
  Status(const Status&) = delete;
  Status& operator=(const Status&) = delete;
  operator TF_Status*() { return status_; }
  void check(const std::string& what);

 private:
  TF_Status* status_;
};

struct TensorDeleter {
  void operator()(TF_Tensor* tensor) const { TF_DeleteTensor(tensor); }
};
// A TF_Tensor the C API handed over (an input or an output): it holds a
// reference to the tensor's memory until deleted.
using TensorPtr = std::unique_ptr<TF_Tensor, TensorDeleter>;

// InvalidArgument for the dtypes horovodcpp cannot reduce (the Python side
// moves those as bytes where that is enough).
hvd::DataType core_dtype(TF_DataType dtype);
TF_DataType tf_dtype(hvd::DataType dtype);
std::vector<std::int64_t> shape_of(const TF_Tensor* tensor);
// The tensor's host memory (TensorFlow hands CPU kernels host tensors).
hvd::TensorView view_of(const TF_Tensor* tensor);

}  // namespace hvdtf
