/* Runs a saved model through the predictor's C API (inference/capi/pd_inference_c.h),
 * plain C with no Python and no C++ in this file; tests/python/inference/test_capi.py
 * checks it against the Python predictor.
 *
 *   oar_run_model_c <prefix> <input.bin> <d0,d1,...> <output.bin> [TYPE:ID]
 *
 * input.bin holds the float32 input of the given shape; the first output is written to
 * output.bin as float32 and its shape printed ("shape: 4,10"). TYPE:ID runs it on a
 * plugin device (PD_ConfigEnableCustomDevice). Before running, it checks the API's
 * errors (printing "errors ok"): a bad input name, index and dtype, and null arguments,
 * each a status and a PD_GetLastError message. Exits 1 on any failure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oar/pd_inference_c.h>  /* oar.sysconfig.get_include() */

#define CHECK(call)                                                                   \
  do {                                                                                \
    PD_Status s_ = (call);                                                            \
    if (s_ != PD_OK) {                                                                \
      fprintf(stderr, "%s failed (status %d): %s\n", #call, (int)s_, PD_GetLastError()); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

#define EXPECT_ERROR(call, status, text)                                                         \
  do {                                                                                           \
    PD_Status s_ = (call);                                                                       \
    if (s_ != (status) || strstr(PD_GetLastError(), (text)) == NULL) {                           \
      fprintf(stderr, "%s: expected status %d naming '%s', got %d: %s\n", #call, (int)(status), \
              (text), (int)s_, PD_GetLastError());                                               \
      return 1;                                                                                  \
    }                                                                                            \
  } while (0)

static int check_errors(PD_Predictor* predictor, PD_Tensor* input) {
  PD_Tensor* t = NULL;
  const char* name = NULL;
  double d = 0.0;
  EXPECT_ERROR(PD_PredictorGetInputHandle(predictor, "no_such_input", &t), PD_ERROR_NOT_FOUND, "no_such_input");
  EXPECT_ERROR(PD_PredictorGetInputName(predictor, 99, &name), PD_ERROR_OUT_OF_RANGE, "index 99");
  EXPECT_ERROR(PD_TensorCopyFromCpuDouble(input, &d), PD_ERROR_INVALID_ARGUMENT, "float32");
  EXPECT_ERROR(PD_TensorReshape(input, 1, NULL), PD_ERROR_INVALID_ARGUMENT, "shape is null");
  EXPECT_ERROR(PD_PredictorRun(NULL), PD_ERROR_INVALID_ARGUMENT, "predictor is null");
  EXPECT_ERROR(PD_PredictorCreate(NULL, NULL), PD_ERROR_INVALID_ARGUMENT, "PD_PredictorCreate");
  {
    int64_t bad[1] = {-3};
    EXPECT_ERROR(PD_TensorReshape(input, 1, bad), PD_ERROR_INVALID_ARGUMENT, "negative size -3");
  }
  {
    PD_Config* c = NULL;
    PD_Predictor* p = NULL;
    CHECK(PD_ConfigCreate(&c));
    CHECK(PD_ConfigSetModel(c, "/nonexistent/model.pdmodel", "/nonexistent/model.pdiparams"));
    if (PD_PredictorCreate(c, &p) == PD_OK || p != NULL || strstr(PD_GetLastError(), "/nonexistent/model") == NULL) {
      fprintf(stderr, "a missing model file: %s\n", PD_GetLastError());
      return 1;
    }
    PD_ConfigDestroy(c);
  }
  printf("errors ok\n");
  return 0;
}

static size_t parse_dims(const char* s, int64_t* dims, size_t cap) {
  size_t n = 0;
  while (*s != '\0' && n < cap) {
    char* end = NULL;
    dims[n++] = strtoll(s, &end, 10);
    s = *end == ',' ? end + 1 : end;
    if (end == s && *s != '\0') break;
  }
  return n;
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s <prefix> <input.bin> <d0,d1,...> <output.bin> [TYPE:ID]\n", argv[0]);
    return 2;
  }
  char prog[4096], params[4096];
  snprintf(prog, sizeof(prog), "%s.pdmodel", argv[1]);
  snprintf(params, sizeof(params), "%s.pdiparams", argv[1]);
  int64_t dims[16];
  const size_t ndim = parse_dims(argv[3], dims, 16);
  size_t numel = 1;
  for (size_t i = 0; i < ndim; ++i) numel *= (size_t)dims[i];
  float* in = malloc(numel * sizeof(float) + 1);
  FILE* f = fopen(argv[2], "rb");
  if (f == NULL || in == NULL || fread(in, sizeof(float), numel, f) != numel) {
    fprintf(stderr, "cannot read %zu floats from %s\n", numel, argv[2]);
    return 1;
  }
  fclose(f);

  PD_Config* config = NULL;
  PD_Predictor* predictor = NULL;
  PD_Tensor* input = NULL;
  PD_Tensor* output = NULL;
  const char* in_name = NULL;
  const char* out_name = NULL;
  size_t n_in = 0, n_out = 0;
  CHECK(PD_ConfigCreate(&config));
  CHECK(PD_ConfigSetModel(config, prog, params));
  if (argc > 5) {
    char type[256];
    const char* colon = strchr(argv[5], ':');
    const size_t len = colon != NULL ? (size_t)(colon - argv[5]) : strlen(argv[5]);
    snprintf(type, sizeof(type), "%.*s", (int)len, argv[5]);
    CHECK(PD_ConfigEnableCustomDevice(config, type, colon != NULL ? atoi(colon + 1) : 0));
  }
  CHECK(PD_PredictorCreate(config, &predictor));
  PD_ConfigDestroy(config); /* the predictor keeps its own copy */
  CHECK(PD_PredictorGetInputNum(predictor, &n_in));
  CHECK(PD_PredictorGetOutputNum(predictor, &n_out));
  CHECK(PD_PredictorGetInputName(predictor, 0, &in_name));
  CHECK(PD_PredictorGetOutputName(predictor, 0, &out_name));
  printf("inputs: %zu (%s) outputs: %zu (%s)\n", n_in, in_name, n_out, out_name);
  CHECK(PD_PredictorGetInputHandle(predictor, in_name, &input));
  if (check_errors(predictor, input) != 0) return 1;

  CHECK(PD_TensorReshape(input, ndim, dims));
  CHECK(PD_TensorCopyFromCpuFloat(input, in));
  CHECK(PD_PredictorRun(predictor));
  CHECK(PD_PredictorGetOutputHandle(predictor, out_name, &output));
  PD_DataType dtype = PD_DATA_UNK;
  CHECK(PD_TensorGetDataType(output, &dtype));
  if (dtype != PD_DATA_FLOAT32) {
    fprintf(stderr, "output dtype %d, expected float32\n", (int)dtype);
    return 1;
  }
  size_t out_ndim = 0;
  int64_t out_dims[16];
  CHECK(PD_TensorGetNumDims(output, &out_ndim));
  CHECK(PD_TensorGetShape(output, out_dims, 16));
  size_t out_numel = 1;
  printf("shape: ");
  for (size_t i = 0; i < out_ndim; ++i) {
    out_numel *= (size_t)out_dims[i];
    printf(i ? ",%lld" : "%lld", (long long)out_dims[i]);
  }
  printf("\n");
  float* out = malloc(out_numel * sizeof(float) + 1);
  CHECK(PD_TensorCopyToCpuFloat(output, out));
  f = fopen(argv[4], "wb");
  if (f == NULL || fwrite(out, sizeof(float), out_numel, f) != out_numel) {
    fprintf(stderr, "cannot write %s\n", argv[4]);
    return 1;
  }
  fclose(f);
  PD_TensorDestroy(input);
  PD_TensorDestroy(output);
  PD_PredictorDestroy(predictor);
  free(in);
  free(out);
  return 0;
}
