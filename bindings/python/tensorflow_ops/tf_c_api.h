// The part of TensorFlow's C API that horovodcpp's TensorFlow ops use,
// declared here so that building them needs no TensorFlow: the C API is
// TensorFlow's stable ABI (tensorflow/c/kernels.h, ops.h, tf_tensor.h,
// tf_status.h, tf_datatype.h; enum values from types.proto and
// error_codes.proto). The symbols are resolved when TensorFlow loads the
// library (tf.load_op_library), from the libtensorflow_framework.so.2 it has
// already loaded.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

typedef struct TF_Status TF_Status;
typedef struct TF_Tensor TF_Tensor;
typedef struct TF_KernelBuilder TF_KernelBuilder;
typedef struct TF_OpKernelConstruction TF_OpKernelConstruction;
typedef struct TF_OpKernelContext TF_OpKernelContext;
typedef struct TF_AsyncOpKernelDoneCallback TF_AsyncOpKernelDoneCallback;
typedef struct TF_OpDefinitionBuilder TF_OpDefinitionBuilder;
typedef struct TF_ShapeInferenceContext TF_ShapeInferenceContext;
typedef struct TF_ShapeHandle TF_ShapeHandle;

typedef enum TF_DataType {
  TF_FLOAT = 1,
  TF_DOUBLE = 2,
  TF_INT32 = 3,
  TF_UINT8 = 4,
  TF_INT16 = 5,
  TF_INT8 = 6,
  TF_INT64 = 9,
  TF_BOOL = 10,
  TF_BFLOAT16 = 14,
  TF_UINT16 = 17,
  TF_HALF = 19,
} TF_DataType;

typedef enum TF_Code {
  TF_OK = 0,
  TF_UNKNOWN = 2,
  TF_INVALID_ARGUMENT = 3,
  TF_DEADLINE_EXCEEDED = 4,
  TF_FAILED_PRECONDITION = 9,
  TF_ABORTED = 10,
  TF_INTERNAL = 13,
} TF_Code;

// tf_status.h
TF_Status* TF_NewStatus(void);
void TF_DeleteStatus(TF_Status*);
void TF_SetStatus(TF_Status* s, TF_Code code, const char* msg);
TF_Code TF_GetCode(const TF_Status* s);
const char* TF_Message(const TF_Status* s);

// tf_tensor.h
TF_DataType TF_TensorType(const TF_Tensor*);
int TF_NumDims(const TF_Tensor*);
int64_t TF_Dim(const TF_Tensor* tensor, int dim_index);
size_t TF_TensorByteSize(const TF_Tensor*);
void* TF_TensorData(const TF_Tensor*);
int64_t TF_TensorElementCount(const TF_Tensor* tensor);
void TF_DeleteTensor(TF_Tensor*);

// kernels.h
TF_KernelBuilder* TF_NewKernelBuilder(const char* op_name, const char* device_name,
                                      void* (*create_func)(TF_OpKernelConstruction*),
                                      void (*compute_func)(void*, TF_OpKernelContext*),
                                      void (*delete_func)(void*));
TF_KernelBuilder* TF_NewAsyncKernelBuilder(
    const char* op_name, const char* device_name, void* (*create_func)(TF_OpKernelConstruction*),
    void (*compute_async_func)(void*, TF_OpKernelContext*, TF_AsyncOpKernelDoneCallback* done),
    void (*delete_func)(void*));
void TF_RegisterKernelBuilder(const char* kernel_name, TF_KernelBuilder* builder,
                              TF_Status* status);
void TF_RunAsyncOpKernelDoneCallback(TF_AsyncOpKernelDoneCallback*);
void TF_OpKernelConstruction_GetAttrInt32(TF_OpKernelConstruction* ctx, const char* attr_name,
                                          int32_t* val, TF_Status* status);
void TF_OpKernelConstruction_GetAttrFloat(TF_OpKernelConstruction* ctx, const char* attr_name,
                                          float* val, TF_Status* status);
void TF_OpKernelConstruction_GetAttrSize(TF_OpKernelConstruction* ctx, const char* attr_name,
                                         int32_t* list_size, int32_t* total_size,
                                         TF_Status* status);
void TF_OpKernelConstruction_GetAttrString(TF_OpKernelConstruction* ctx, const char* attr_name,
                                           char* val, size_t max_length, TF_Status* status);
void TF_OpKernelConstruction_Failure(TF_OpKernelConstruction* ctx, TF_Status* status);
int TF_NumInputs(TF_OpKernelContext* ctx);
int TF_NumOutputs(TF_OpKernelContext* ctx);
void TF_GetInput(TF_OpKernelContext* ctx, int i, TF_Tensor** tensor, TF_Status* status);
TF_Tensor* TF_AllocateOutput(TF_OpKernelContext* context, int index, TF_DataType dtype,
                             const int64_t* dims, int num_dims, size_t len, TF_Status* status);
void TF_OpKernelContext_Failure(TF_OpKernelContext* ctx, TF_Status* status);

// ops.h
TF_OpDefinitionBuilder* TF_NewOpDefinitionBuilder(const char* op_name);
void TF_RegisterOpDefinition(TF_OpDefinitionBuilder* builder, TF_Status* status);
void TF_OpDefinitionBuilderAddInput(TF_OpDefinitionBuilder* builder, const char* input_spec);
void TF_OpDefinitionBuilderAddOutput(TF_OpDefinitionBuilder* builder, const char* output_spec);
void TF_OpDefinitionBuilderAddAttr(TF_OpDefinitionBuilder* builder, const char* attr_spec);
void TF_OpDefinitionBuilderSetIsStateful(TF_OpDefinitionBuilder* builder, bool is_stateful);
void TF_OpDefinitionBuilderSetShapeInferenceFunction(
    TF_OpDefinitionBuilder* builder,
    void (*shape_inference_func)(TF_ShapeInferenceContext* ctx, TF_Status* status));
int64_t TF_ShapeInferenceContextNumInputs(TF_ShapeInferenceContext* ctx);
TF_ShapeHandle* TF_NewShapeHandle();
void TF_DeleteShapeHandle(TF_ShapeHandle* handle);
TF_ShapeHandle* TF_ShapeInferenceContextScalar(TF_ShapeInferenceContext* ctx);
void TF_ShapeInferenceContextGetInput(TF_ShapeInferenceContext* ctx, int i, TF_ShapeHandle* handle,
                                      TF_Status* status);
void TF_ShapeInferenceContextSetOutput(TF_ShapeInferenceContext* ctx, int i, TF_ShapeHandle* handle,
                                       TF_Status* status);
void TF_ShapeInferenceContextSetUnknownShape(TF_ShapeInferenceContext* ctx, TF_Status* status);

}  // extern "C"
