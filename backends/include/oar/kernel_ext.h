/* The C kernel API (device ABI 1.1): a plugin's kernels in plain C, registered under
 * the names of Oar's CPU kernels so every op of the op definitions (paddle_core/ops/
 * *.yaml) runs on the plugin's device once its kernels exist.
 *
 * A kernel is an OAR_KernelFn. It reads its tensor arguments and attributes through
 * the OAR_KernelApi the runtime hands it, allocates its outputs through Oar's allocator
 * (their shapes and dtypes are already inferred), queues its work on the stream, and
 * returns an OAR_Status; on failure it may set a message with api->set_error, which
 * becomes the text of the Python exception.
 *
 * Declining: a kernel that does not serve a call (a rank, a layout, strides it does not
 * walk) returns OAR_ERROR_UNIMPLEMENTED before it writes or queues anything. Oar then
 * runs the op's CPU kernel on host copies and writes the results to the device, with a
 * warning once per (kernel, dtype) that quotes the message, as for an op the plugin has
 * no kernel for; with FLAGS_enable_api_kernel_fallback off the call fails with the
 * plugin's message instead. Any other error status fails the call.
 *
 * Registration: the plugin fills OAR_DeviceRegistration.register_kernels; the runtime
 * calls it with the api once the device table is accepted, and the plugin calls
 * api->register_kernel for each (op, dtype). The signature string is checked against
 * the op's definition: "(Tensor, Tensor, bool, bool) -> Tensor" for matmul, the
 * argument types in order (Tensor, Tensor?, Tensor[], Scalar, int, float, bool, str,
 * int[], float[], DataType, Place; names may follow the types, as in the yaml). An
 * unknown op, a wrong arity or attribute type refuses the whole plugin with a message.
 *
 * Ownership: every pointer the api returns is owned by the runtime and valid until the
 * kernel returns. Arguments are indexed in declaration order: inputs among the tensor
 * arguments, attributes among the others, outputs among the outputs. Inputs the op's
 * definition names in `host_inputs` (dyn_reshape's and dyn_expand's shape) arrive in
 * host memory, their place the CPU; every other tensor is on the kernel's device. */
#ifndef OAR_KERNEL_EXT_H_
#define OAR_KERNEL_EXT_H_

#include <stddef.h>
#include <stdint.h>

#include "device_ext.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A view of one tensor; element (i0, i1, ...) is at data + sum(ik * strides[k]) elements.
 * An input's strides are never negative: the runtime hands a kernel a contiguous copy of a
 * view that walks an axis backwards (x[::-1]). An output written in place may be such a
 * view; a kernel that does not walk it declines (OAR_ERROR_UNIMPLEMENTED, see the top). */
typedef struct OAR_Tensor {
  size_t struct_size;
  void* data;             /* the first element (offset applied); NULL: absent, or not allocated yet */
  const int64_t* dims;    /* ndim sizes */
  const int64_t* strides; /* ndim strides, in elements */
  int64_t offset;         /* elements from the start of its allocation to data */
  int ndim;               /* -1 for an absent optional input (Tensor?) */
  OAR_DataType dtype;
  const char* device_type; /* "cpu" or the plugin's type */
  int device_id;
} OAR_Tensor;

typedef struct OAR_KernelContext_st* OAR_KernelContext; /* one kernel call; runtime-owned */
struct OAR_KernelApi;

/* A kernel: OAR_SUCCESS, or an error status (after api->set_error, ideally). */
typedef OAR_Status (*OAR_KernelFn)(const struct OAR_KernelApi* api, OAR_KernelContext ctx);

typedef struct OAR_KernelApi {
  size_t struct_size; /* the runtime's sizeof(OAR_KernelApi): check before using a later slot */

  /* Registration (only inside register_kernels) */
  OAR_Status (*register_kernel)(const char* op, const char* device_type, OAR_DataType dtype, const char* signature,
                                OAR_KernelFn fn); /* see the top of this file */
  const char* (*last_registration_error)(void);   /* why the last register_kernel failed */

  /* Tensor arguments */
  size_t (*num_inputs)(OAR_KernelContext ctx);                                  /* tensor arguments */
  OAR_Status (*input)(OAR_KernelContext ctx, size_t i, OAR_Tensor* out);        /* a Tensor or Tensor? */
  OAR_Status (*input_list_size)(OAR_KernelContext ctx, size_t i, size_t* size); /* a Tensor[] */
  OAR_Status (*input_list_item)(OAR_KernelContext ctx, size_t i, size_t j, OAR_Tensor* out);

  /* Attributes (wrong index or type: OAR_ERROR_INVALID_ARGUMENT) */
  OAR_Status (*attr_bool)(OAR_KernelContext ctx, size_t i, int* value);
  OAR_Status (*attr_int)(OAR_KernelContext ctx, size_t i, int64_t* value);
  OAR_Status (*attr_float)(OAR_KernelContext ctx, size_t i, double* value);
  OAR_Status (*attr_str)(OAR_KernelContext ctx, size_t i, const char** value);
  OAR_Status (*attr_ints)(OAR_KernelContext ctx, size_t i, const int64_t** values, size_t* size);
  OAR_Status (*attr_floats)(OAR_KernelContext ctx, size_t i, const double** values, size_t* size);
  OAR_Status (*attr_dtype)(OAR_KernelContext ctx, size_t i, OAR_DataType* value);
  OAR_Status (*attr_scalar)(OAR_KernelContext ctx, size_t i, double* value); /* a Scalar, as double */

  /* Outputs: shapes and dtypes are set before the call */
  size_t (*num_outputs)(OAR_KernelContext ctx);
  OAR_Status (*output)(OAR_KernelContext ctx, size_t i, OAR_Tensor* out); /* data NULL until allocated */
  OAR_Status (*allocate_output)(OAR_KernelContext ctx, size_t i,
                                OAR_Tensor* out); /* contiguous, on the kernel's device, via Oar's allocator */
  OAR_Status (*output_list_size)(OAR_KernelContext ctx, size_t i, size_t* size);              /* a Tensor[] output */
  OAR_Status (*output_list_item)(OAR_KernelContext ctx, size_t i, size_t j, OAR_Tensor* out); /* not allocated */
  OAR_Status (*allocate_output_list_item)(OAR_KernelContext ctx, size_t i, size_t j,
                                          OAR_Tensor* out); /* as allocate_output */

  /* Where the kernel runs */
  const OAR_Device* (*device)(OAR_KernelContext ctx);
  OAR_Stream (*stream)(OAR_KernelContext ctx); /* the current stream (NULL: the device's default) */

  /* Errors */
  void (*set_error)(OAR_KernelContext ctx, const char* message); /* copied; shown in the exception */
} OAR_KernelApi;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OAR_KERNEL_EXT_H_ */
