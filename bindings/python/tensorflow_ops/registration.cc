#include "registration.h"

#include <cstdio>

#include "horovodcpp/errors.h"
#include "horovodcpp/horovodcpp.h"
#include "tf_tensors.h"

namespace hvdtf {

void register_op(const OpSpec& spec) {
  try {
    TF_OpDefinitionBuilder* op = TF_NewOpDefinitionBuilder(spec.name);
    for (const char* input : spec.inputs) TF_OpDefinitionBuilderAddInput(op, input);
    for (const char* output : spec.outputs) TF_OpDefinitionBuilderAddOutput(op, output);
    for (const char* attr : spec.attrs) TF_OpDefinitionBuilderAddAttr(op, attr);
    TF_OpDefinitionBuilderSetIsStateful(op, spec.stateful);
    TF_OpDefinitionBuilderSetShapeInferenceFunction(op, spec.shape_fn);
    Status op_status;
    TF_RegisterOpDefinition(op, op_status);  // takes `op`
    op_status.check(std::string("registering op ") + spec.name);

    TF_KernelBuilder* kernel =
        spec.compute_async
            ? TF_NewAsyncKernelBuilder(spec.name, "CPU", spec.create, spec.compute_async,
                                       spec.destroy)
            : TF_NewKernelBuilder(spec.name, "CPU", spec.create, spec.compute, spec.destroy);
    Status kernel_status;
    TF_RegisterKernelBuilder((std::string(spec.name) + "Kernel").c_str(), kernel, kernel_status);
    kernel_status.check(std::string("registering the kernel of ") + spec.name);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "horovodcpp: %s\n", e.what());
  }
}

void same_shapes(TF_ShapeInferenceContext* context, TF_Status* status) {
  for (int i = 0; i < TF_ShapeInferenceContextNumInputs(context); ++i) {
    TF_ShapeHandle* shape = TF_NewShapeHandle();
    TF_ShapeInferenceContextGetInput(context, i, shape, status);
    if (TF_GetCode(status) == TF_OK) TF_ShapeInferenceContextSetOutput(context, i, shape, status);
    TF_DeleteShapeHandle(shape);
    if (TF_GetCode(status) != TF_OK) return;
  }
}

void scalar_shapes(TF_ShapeInferenceContext* context, TF_Status* status) {
  TF_ShapeHandle* scalar = TF_ShapeInferenceContextScalar(context);
  TF_ShapeInferenceContextSetOutput(context, 0, scalar, status);
  TF_DeleteShapeHandle(scalar);
}

void unknown_shapes(TF_ShapeInferenceContext* context, TF_Status* status) {
  TF_ShapeInferenceContextSetUnknownShape(context, status);
}

int Attrs::integer(const char* name) {
  Status status;
  std::int32_t value = 0;
  TF_OpKernelConstruction_GetAttrInt32(context_, name, &value, status);
  status.check(std::string("attribute ") + name);
  return value;
}

double Attrs::real(const char* name) {
  Status status;
  float value = 0;
  TF_OpKernelConstruction_GetAttrFloat(context_, name, &value, status);
  status.check(std::string("attribute ") + name);
  return value;
}

std::string Attrs::string(const char* name) {
  Status status;
  std::int32_t list_size = 0, total_size = 0;
  TF_OpKernelConstruction_GetAttrSize(context_, name, &list_size, &total_size, status);
  status.check(std::string("attribute ") + name);
  std::string value(static_cast<std::size_t>(total_size), '\0');
  TF_OpKernelConstruction_GetAttrString(context_, name, value.data(), value.size(), status);
  status.check(std::string("attribute ") + name);
  return value;
}

hvd::ProcessSet process_set(int id) {
  if (id == 0) return hvd::global_process_set();
  for (const hvd::ProcessSet& set : hvd::process_sets()) {
    if (set.id() == id) return set;
  }
  throw hvd::InvalidArgument("process set " + std::to_string(id) +
                             " is not registered (removed, or from before a shutdown)");
}

void fail_construction(TF_OpKernelConstruction* context, std::exception_ptr error) {
  Status status;
  try {
    std::rethrow_exception(error);
  } catch (const TfError& e) {
    TF_SetStatus(status, e.code, e.what());
  } catch (const std::exception& e) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, e.what());
  }
  TF_OpKernelConstruction_Failure(context, status);
}

}  // namespace hvdtf
