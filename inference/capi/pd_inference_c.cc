// The predictor's C API (pd_inference_c.h) over the C++ predictor (predictor.h): each
// call catches what the C++ side throws, keeps its message for PD_GetLastError and
// returns the status of its kind.
#include "inference/capi/pd_inference_c.h"

#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "inference/predictor/predictor.h"
#include "paddle_core/base/errors.h"

namespace inf = oar::inference;

struct PD_Config {
  inf::Config config;
};
struct PD_Predictor {
  std::shared_ptr<inf::Predictor> predictor;
  std::vector<std::string> inputs, outputs;  // the names handed out (valid while it lives)
};
struct PD_Tensor {
  std::unique_ptr<inf::Tensor> tensor;
};

namespace {
thread_local std::string t_last_error;

PD_Status fail(PD_Status status, std::string message) {
  t_last_error = std::move(message);
  return status;
}

PD_Status status_of(const oar::Error& e) {
  switch (e.kind()) {
    case oar::ErrorKind::kInvalidArgument:
    case oar::ErrorKind::kInvalidType:
    case oar::ErrorKind::kPreconditionNotMet:
      return PD_ERROR_INVALID_ARGUMENT;
    case oar::ErrorKind::kNotFound:
      return PD_ERROR_NOT_FOUND;
    case oar::ErrorKind::kOutOfRange:
      return PD_ERROR_OUT_OF_RANGE;
    default:
      return PD_ERROR_RUNTIME;
  }
}

// Runs body(), turning what it throws into a status and the thread's message.
template <typename F>
PD_Status guarded(const char* call, F body) {
  try {
    body();
    return PD_OK;
  } catch (const oar::Error& e) {
    return fail(status_of(e), std::string(call) + ": " + e.what());
  } catch (const std::out_of_range& e) {
    return fail(PD_ERROR_OUT_OF_RANGE, std::string(call) + ": " + e.what());
  } catch (const std::exception& e) {
    return fail(PD_ERROR_RUNTIME, std::string(call) + ": " + e.what());
  } catch (...) {
    return fail(PD_ERROR_RUNTIME, std::string(call) + ": unknown error");
  }
}

#define PD_CHECK_ARG(call, cond, what) \
  if (!(cond)) return fail(PD_ERROR_INVALID_ARGUMENT, std::string(call) + ": " + (what))

template <typename T>
PD_Status copy_from(const char* call, PD_Tensor* t, const T* data) {
  PD_CHECK_ARG(call, t != nullptr && t->tensor != nullptr, "tensor is null");
  PD_CHECK_ARG(call, data != nullptr, "data is null");
  return guarded(call, [&] { t->tensor->CopyFromCpu(data); });
}
template <typename T>
PD_Status copy_to(const char* call, const PD_Tensor* t, T* data) {
  PD_CHECK_ARG(call, t != nullptr && t->tensor != nullptr, "tensor is null");
  PD_CHECK_ARG(call, data != nullptr, "data is null");
  return guarded(call, [&] { t->tensor->CopyToCpu(data); });
}

PD_Status handle(const char* call, PD_Predictor* p, const char* name, PD_Tensor** out, bool input) {
  PD_CHECK_ARG(call, p != nullptr && name != nullptr && out != nullptr, "predictor, name and tensor must not be null");
  *out = nullptr;
  const std::vector<std::string>& names = input ? p->inputs : p->outputs;
  bool known = false;
  for (const std::string& n : names) known = known || n == name;
  if (!known) {
    std::string all;
    for (const std::string& n : names) all += (all.empty() ? "'" : ", '") + n + "'";
    return fail(PD_ERROR_NOT_FOUND, std::string(call) + ": the model has no " + (input ? "input" : "output") +
                                        " named '" + name + "' (it has " + all + ")");
  }
  return guarded(call, [&] {
    auto t = std::make_unique<PD_Tensor>();
    t->tensor = input ? p->predictor->GetInputHandle(name) : p->predictor->GetOutputHandle(name);
    *out = t.release();
  });
}

PD_Status name_at(const char* call, const PD_Predictor* p, size_t i, const char** name, bool input) {
  PD_CHECK_ARG(call, p != nullptr && name != nullptr, "predictor and name must not be null");
  const std::vector<std::string>& names = input ? p->inputs : p->outputs;
  if (i >= names.size()) {
    return fail(PD_ERROR_OUT_OF_RANGE, std::string(call) + ": index " + std::to_string(i) + " is past the model's " +
                                           std::to_string(names.size()) + (input ? " input(s)" : " output(s)"));
  }
  *name = names[i].c_str();
  return PD_OK;
}

PD_DataType c_type(inf::DataType t) {
  switch (t) {
    case inf::DataType::kFloat32:
      return PD_DATA_FLOAT32;
    case inf::DataType::kFloat64:
      return PD_DATA_FLOAT64;
    case inf::DataType::kInt32:
      return PD_DATA_INT32;
    case inf::DataType::kInt64:
      return PD_DATA_INT64;
    case inf::DataType::kUInt8:
      return PD_DATA_UINT8;
    case inf::DataType::kInt8:
      return PD_DATA_INT8;
    case inf::DataType::kBool:
      return PD_DATA_BOOL;
    default:
      return PD_DATA_UNK;
  }
}
}  // namespace

extern "C" {

const char* PD_GetLastError(void) { return t_last_error.c_str(); }

PD_Status PD_ConfigCreate(PD_Config** config) {
  PD_CHECK_ARG("PD_ConfigCreate", config != nullptr, "config is null");
  return guarded("PD_ConfigCreate", [&] { *config = new PD_Config(); });
}
void PD_ConfigDestroy(PD_Config* config) { delete config; }

PD_Status PD_ConfigSetModel(PD_Config* config, const char* prog_file, const char* params_file) {
  PD_CHECK_ARG("PD_ConfigSetModel", config != nullptr && prog_file != nullptr && params_file != nullptr,
               "config, prog_file and params_file must not be null");
  config->config.SetModel(prog_file, params_file);
  return PD_OK;
}
PD_Status PD_ConfigEnableCustomDevice(PD_Config* config, const char* device_type, int32_t device_id) {
  PD_CHECK_ARG("PD_ConfigEnableCustomDevice", config != nullptr && device_type != nullptr,
               "config and device_type must not be null");
  return guarded("PD_ConfigEnableCustomDevice", [&] { config->config.EnableCustomDevice(device_type, device_id); });
}
PD_Status PD_ConfigDisableCustomDevice(PD_Config* config) {
  PD_CHECK_ARG("PD_ConfigDisableCustomDevice", config != nullptr, "config is null");
  config->config.DisableCustomDevice();
  return PD_OK;
}
PD_Status PD_ConfigSetCpuMathLibraryNumThreads(PD_Config* config, int32_t threads) {
  PD_CHECK_ARG("PD_ConfigSetCpuMathLibraryNumThreads", config != nullptr, "config is null");
  return guarded("PD_ConfigSetCpuMathLibraryNumThreads", [&] { config->config.SetCpuMathLibraryNumThreads(threads); });
}
PD_Status PD_ConfigSwitchIrOptim(PD_Config* config, int32_t on) {
  PD_CHECK_ARG("PD_ConfigSwitchIrOptim", config != nullptr, "config is null");
  config->config.SwitchIrOptim(on != 0);
  return PD_OK;
}

PD_Status PD_PredictorCreate(const PD_Config* config, PD_Predictor** predictor) {
  PD_CHECK_ARG("PD_PredictorCreate", config != nullptr && predictor != nullptr,
               "config and predictor must not be null");
  *predictor = nullptr;
  PD_CHECK_ARG("PD_PredictorCreate", !config->config.prog_file().empty(), "no model set (PD_ConfigSetModel first)");
  return guarded("PD_PredictorCreate", [&] {
    auto p = std::make_unique<PD_Predictor>();
    p->predictor = inf::CreatePredictor(config->config);
    p->inputs = p->predictor->GetInputNames();
    p->outputs = p->predictor->GetOutputNames();
    *predictor = p.release();
  });
}
void PD_PredictorDestroy(PD_Predictor* predictor) { delete predictor; }

PD_Status PD_PredictorGetInputNum(const PD_Predictor* predictor, size_t* num) {
  PD_CHECK_ARG("PD_PredictorGetInputNum", predictor != nullptr && num != nullptr, "predictor and num must not be null");
  *num = predictor->inputs.size();
  return PD_OK;
}
PD_Status PD_PredictorGetOutputNum(const PD_Predictor* predictor, size_t* num) {
  PD_CHECK_ARG("PD_PredictorGetOutputNum", predictor != nullptr && num != nullptr,
               "predictor and num must not be null");
  *num = predictor->outputs.size();
  return PD_OK;
}
PD_Status PD_PredictorGetInputName(const PD_Predictor* predictor, size_t index, const char** name) {
  return name_at("PD_PredictorGetInputName", predictor, index, name, true);
}
PD_Status PD_PredictorGetOutputName(const PD_Predictor* predictor, size_t index, const char** name) {
  return name_at("PD_PredictorGetOutputName", predictor, index, name, false);
}
PD_Status PD_PredictorGetInputHandle(PD_Predictor* predictor, const char* name, PD_Tensor** tensor) {
  return handle("PD_PredictorGetInputHandle", predictor, name, tensor, true);
}
PD_Status PD_PredictorGetOutputHandle(PD_Predictor* predictor, const char* name, PD_Tensor** tensor) {
  return handle("PD_PredictorGetOutputHandle", predictor, name, tensor, false);
}
PD_Status PD_PredictorRun(PD_Predictor* predictor) {
  PD_CHECK_ARG("PD_PredictorRun", predictor != nullptr, "predictor is null");
  return guarded("PD_PredictorRun", [&] { predictor->predictor->Run(); });
}

void PD_TensorDestroy(PD_Tensor* tensor) { delete tensor; }

PD_Status PD_TensorReshape(PD_Tensor* tensor, size_t ndim, const int64_t* shape) {
  PD_CHECK_ARG("PD_TensorReshape", tensor != nullptr, "tensor is null");
  PD_CHECK_ARG("PD_TensorReshape", ndim == 0 || shape != nullptr, "shape is null");
  PD_CHECK_ARG("PD_TensorReshape", ndim <= 64, "ndim " + std::to_string(ndim) + " is over 64");
  return guarded("PD_TensorReshape", [&] { tensor->tensor->Reshape(std::vector<int64_t>(shape, shape + ndim)); });
}
PD_Status PD_TensorGetNumDims(const PD_Tensor* tensor, size_t* ndim) {
  PD_CHECK_ARG("PD_TensorGetNumDims", tensor != nullptr && ndim != nullptr, "tensor and ndim must not be null");
  return guarded("PD_TensorGetNumDims", [&] { *ndim = tensor->tensor->shape().size(); });
}
PD_Status PD_TensorGetShape(const PD_Tensor* tensor, int64_t* shape, size_t capacity) {
  PD_CHECK_ARG("PD_TensorGetShape", tensor != nullptr, "tensor is null");
  PD_CHECK_ARG("PD_TensorGetShape", capacity == 0 || shape != nullptr, "shape is null");
  std::vector<int64_t> dims;
  if (PD_Status s = guarded("PD_TensorGetShape", [&] { dims = tensor->tensor->shape(); }); s != PD_OK) return s;
  if (dims.size() > capacity) {
    return fail(PD_ERROR_INVALID_ARGUMENT, "PD_TensorGetShape: '" + tensor->tensor->name() + "' has " +
                                               std::to_string(dims.size()) + " dims, capacity is " +
                                               std::to_string(capacity));
  }
  for (size_t i = 0; i < dims.size(); ++i) shape[i] = dims[i];
  return PD_OK;
}
PD_Status PD_TensorGetDataType(const PD_Tensor* tensor, PD_DataType* dtype) {
  PD_CHECK_ARG("PD_TensorGetDataType", tensor != nullptr && dtype != nullptr, "tensor and dtype must not be null");
  return guarded("PD_TensorGetDataType", [&] { *dtype = c_type(tensor->tensor->type()); });
}
PD_Status PD_TensorGetName(const PD_Tensor* tensor, const char** name) {
  PD_CHECK_ARG("PD_TensorGetName", tensor != nullptr && name != nullptr, "tensor and name must not be null");
  *name = tensor->tensor->name().c_str();
  return PD_OK;
}

PD_Status PD_TensorCopyFromCpuFloat(PD_Tensor* t, const float* d) {
  return copy_from("PD_TensorCopyFromCpuFloat", t, d);
}
PD_Status PD_TensorCopyFromCpuDouble(PD_Tensor* t, const double* d) {
  return copy_from("PD_TensorCopyFromCpuDouble", t, d);
}
PD_Status PD_TensorCopyFromCpuInt64(PD_Tensor* t, const int64_t* d) {
  return copy_from("PD_TensorCopyFromCpuInt64", t, d);
}
PD_Status PD_TensorCopyFromCpuInt32(PD_Tensor* t, const int32_t* d) {
  return copy_from("PD_TensorCopyFromCpuInt32", t, d);
}
PD_Status PD_TensorCopyFromCpuUint8(PD_Tensor* t, const uint8_t* d) {
  return copy_from("PD_TensorCopyFromCpuUint8", t, d);
}
PD_Status PD_TensorCopyFromCpuInt8(PD_Tensor* t, const int8_t* d) {
  return copy_from("PD_TensorCopyFromCpuInt8", t, d);
}
PD_Status PD_TensorCopyToCpuFloat(const PD_Tensor* t, float* d) { return copy_to("PD_TensorCopyToCpuFloat", t, d); }
PD_Status PD_TensorCopyToCpuDouble(const PD_Tensor* t, double* d) { return copy_to("PD_TensorCopyToCpuDouble", t, d); }
PD_Status PD_TensorCopyToCpuInt64(const PD_Tensor* t, int64_t* d) { return copy_to("PD_TensorCopyToCpuInt64", t, d); }
PD_Status PD_TensorCopyToCpuInt32(const PD_Tensor* t, int32_t* d) { return copy_to("PD_TensorCopyToCpuInt32", t, d); }
PD_Status PD_TensorCopyToCpuUint8(const PD_Tensor* t, uint8_t* d) { return copy_to("PD_TensorCopyToCpuUint8", t, d); }
PD_Status PD_TensorCopyToCpuInt8(const PD_Tensor* t, int8_t* d) { return copy_to("PD_TensorCopyToCpuInt8", t, d); }

}  // extern "C"
