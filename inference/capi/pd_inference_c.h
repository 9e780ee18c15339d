/* The predictor's C API, in the shape of Paddle Inference's C API (pd_inference_api.h):
 * a config, a predictor made from it, and tensor handles for its inputs and outputs.
 * Plain C, opaque handles only (no struct crosses it), so its ABI does not change with
 * Oar's C++ types.
 *
 *   PD_Config* config;  PD_Predictor* predictor;  PD_Tensor* in;  PD_Tensor* out;
 *   const char* name;
 *   PD_ConfigCreate(&config);
 *   PD_ConfigSetModel(config, "out/model.pdmodel", "out/model.pdiparams");
 *   PD_ConfigEnableCustomDevice(config, "sample", 0);        optional: a plugin device
 *   if (PD_PredictorCreate(config, &predictor) != PD_OK) puts(PD_GetLastError());
 *   PD_PredictorGetInputName(predictor, 0, &name);
 *   PD_PredictorGetInputHandle(predictor, name, &in);
 *   int64_t shape[4] = {1, 1, 28, 28};
 *   PD_TensorReshape(in, 4, shape);
 *   PD_TensorCopyFromCpuFloat(in, data);
 *   PD_PredictorRun(predictor);
 *   ... PD_PredictorGetOutputHandle, PD_TensorGetShape, PD_TensorCopyToCpuFloat ...
 *   PD_TensorDestroy(in); PD_TensorDestroy(out); PD_PredictorDestroy(predictor);
 *   PD_ConfigDestroy(config);
 *
 * Errors: every call returns a PD_Status; on anything but PD_OK, PD_GetLastError() is
 * the message (the file, input or argument and what is wrong) for the calling thread.
 * Ownership: what a *Create or *Get*Handle call hands out is the caller's, freed with
 * the matching *Destroy (NULL is accepted there). Unlike Paddle's, PD_PredictorCreate
 * does not take the config: destroy it yourself (at once is fine). A tensor handle is
 * valid while its predictor lives; names are valid while the predictor lives.
 * Link: -loar_inference_c. */
#ifndef OAR_PD_INFERENCE_C_H_
#define OAR_PD_INFERENCE_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum PD_Status {
  PD_OK = 0,
  PD_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, a bad shape, a dtype that does not match */
  PD_ERROR_NOT_FOUND = 2,        /* a missing file, input name or device type */
  PD_ERROR_OUT_OF_RANGE = 3,     /* an index past the inputs or outputs, a device id */
  PD_ERROR_RUNTIME = 4,          /* anything else: a corrupt model, a failed run */
} PD_Status;

typedef enum PD_DataType {
  PD_DATA_UNK = -1,
  PD_DATA_FLOAT32 = 0,
  PD_DATA_INT32 = 1,
  PD_DATA_INT64 = 2,
  PD_DATA_UINT8 = 3,
  PD_DATA_INT8 = 4,
  PD_DATA_FLOAT64 = 5,
  PD_DATA_BOOL = 6,
} PD_DataType;

typedef struct PD_Config PD_Config;       /* opaque */
typedef struct PD_Predictor PD_Predictor; /* opaque */
typedef struct PD_Tensor PD_Tensor;       /* opaque */

/* Why the calling thread's last failed call failed ("" when none has). */
const char* PD_GetLastError(void);

/* ---- config */
PD_Status PD_ConfigCreate(PD_Config** config);
void PD_ConfigDestroy(PD_Config* config);
/* The saved model's files (oar.jit.save / paddle.jit.save: prefix.pdmodel, prefix.pdiparams). */
PD_Status PD_ConfigSetModel(PD_Config* config, const char* prog_file, const char* params_file);
/* Runs on device `device_id` of plugin device type `device_type` (checked at PD_PredictorCreate). */
PD_Status PD_ConfigEnableCustomDevice(PD_Config* config, const char* device_type, int32_t device_id);
PD_Status PD_ConfigDisableCustomDevice(PD_Config* config);
/* Kernel threads during a run (>= 1). */
PD_Status PD_ConfigSetCpuMathLibraryNumThreads(PD_Config* config, int32_t threads);
/* The analysis passes (on by default). */
PD_Status PD_ConfigSwitchIrOptim(PD_Config* config, int32_t on);

/* ---- predictor */
PD_Status PD_PredictorCreate(const PD_Config* config, PD_Predictor** predictor);
void PD_PredictorDestroy(PD_Predictor* predictor);
PD_Status PD_PredictorGetInputNum(const PD_Predictor* predictor, size_t* num);
PD_Status PD_PredictorGetOutputNum(const PD_Predictor* predictor, size_t* num);
PD_Status PD_PredictorGetInputName(const PD_Predictor* predictor, size_t index, const char** name);
PD_Status PD_PredictorGetOutputName(const PD_Predictor* predictor, size_t index, const char** name);
PD_Status PD_PredictorGetInputHandle(PD_Predictor* predictor, const char* name, PD_Tensor** tensor);
PD_Status PD_PredictorGetOutputHandle(PD_Predictor* predictor, const char* name, PD_Tensor** tensor);
/* Runs on the data copied into the input handles. */
PD_Status PD_PredictorRun(PD_Predictor* predictor);

/* ---- tensors */
void PD_TensorDestroy(PD_Tensor* tensor);
/* Inputs: the shape of the data the next CopyFromCpu reads (ndim <= 64, dims >= 0). */
PD_Status PD_TensorReshape(PD_Tensor* tensor, size_t ndim, const int64_t* shape);
PD_Status PD_TensorGetNumDims(const PD_Tensor* tensor, size_t* ndim);
/* Writes the ndim dims into shape[0 .. capacity); capacity < ndim is an error. */
PD_Status PD_TensorGetShape(const PD_Tensor* tensor, int64_t* shape, size_t capacity);
PD_Status PD_TensorGetDataType(const PD_Tensor* tensor, PD_DataType* dtype);
PD_Status PD_TensorGetName(const PD_Tensor* tensor, const char** name);
/* Inputs: copies numel elements in (the type must be the input's). */
PD_Status PD_TensorCopyFromCpuFloat(PD_Tensor* tensor, const float* data);
PD_Status PD_TensorCopyFromCpuDouble(PD_Tensor* tensor, const double* data);
PD_Status PD_TensorCopyFromCpuInt64(PD_Tensor* tensor, const int64_t* data);
PD_Status PD_TensorCopyFromCpuInt32(PD_Tensor* tensor, const int32_t* data);
PD_Status PD_TensorCopyFromCpuUint8(PD_Tensor* tensor, const uint8_t* data);
PD_Status PD_TensorCopyFromCpuInt8(PD_Tensor* tensor, const int8_t* data);
/* Outputs after a run: copies numel elements out (the type must be the output's). */
PD_Status PD_TensorCopyToCpuFloat(const PD_Tensor* tensor, float* data);
PD_Status PD_TensorCopyToCpuDouble(const PD_Tensor* tensor, double* data);
PD_Status PD_TensorCopyToCpuInt64(const PD_Tensor* tensor, int64_t* data);
PD_Status PD_TensorCopyToCpuInt32(const PD_Tensor* tensor, int32_t* data);
PD_Status PD_TensorCopyToCpuUint8(const PD_Tensor* tensor, uint8_t* data);
PD_Status PD_TensorCopyToCpuInt8(const PD_Tensor* tensor, int8_t* data);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OAR_PD_INFERENCE_C_H_ */
