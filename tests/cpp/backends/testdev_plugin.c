/* A test device plugin in plain C, built against backends/include/oar/ only: device
 * memory is ordinary host memory, work runs synchronously, and a few C-API kernels
 * (add, relu, matmul, unstack for float32) compute on it. One source, many libraries: the
 * TESTDEV_* macros build the broken variants the loader must refuse
 * (tests/cpp/backends/CMakeLists.txt and tests/python/device/test_plugin_*.py build them).
 *
 *   TESTDEV_NAME          the device type (default "testdev")
 *   TESTDEV_ABI_MAJOR     the major version it claims (default: the header's)
 *   TESTDEV_ABI_10        a 1.0 plugin: table and version of ABI 1.0, no kernels
 *   TESTDEV_ABI_11        a 1.1 plugin: its table ends at ccl_group_end (no ccl_comm_abort)
 *   TESTDEV_NEWER_MINOR   a plugin of a later 1.x: a longer table with unknown slots
 *   TESTDEV_NO_ENTRY      exports no oar_init_plugin
 *   TESTDEV_SHORT_TABLE   interface struct_size too small
 *   TESTDEV_MISSING_SLOT  memory_copy_d2h left null
 *   TESTDEV_INIT_FAILS    initialize fails, with a message
 *   TESTDEV_HALF_CCL      fills only some collective slots
 *   TESTDEV_BAD_KERNEL    1: an unknown op, 2: wrong arity, 3: wrong attribute type,
 *                         4: an optimizer update kernel with the wrong signature
 *
 * At run time: TESTDEV_MAX_ALLOC (bytes) makes larger allocations fail with a message;
 * TESTDEV_FAIL_COPY=1 makes host<->device copies fail; TESTDEV_FAIL_RELU=1 makes the
 * relu kernel fail. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oar/device_ext.h"
#include "oar/kernel_ext.h"

#ifndef TESTDEV_NAME
#define TESTDEV_NAME "testdev"
#endif
#ifndef TESTDEV_ABI_MAJOR
#define TESTDEV_ABI_MAJOR OAR_DEVICE_ABI_VERSION_MAJOR
#endif

static __thread char g_error[256];
static size_t g_max_alloc = (size_t)-1;
static int g_fail_copy = 0;
static int g_fail_relu = 0;

static OAR_Status fail(OAR_Status status, const char* message) {
  snprintf(g_error, sizeof(g_error), "%s", message);
  return status;
}
static const char* last_error(void) { return g_error; }

static OAR_Status initialize(void) {
  const char* max_alloc = getenv("TESTDEV_MAX_ALLOC");
  if (max_alloc != NULL) g_max_alloc = (size_t)strtoull(max_alloc, NULL, 10);
  g_fail_copy = getenv("TESTDEV_FAIL_COPY") != NULL;
  g_fail_relu = getenv("TESTDEV_FAIL_RELU") != NULL;
#ifdef TESTDEV_INIT_FAILS
  return fail(OAR_ERROR_DEVICE, TESTDEV_NAME ": no device found (driver not loaded)");
#else
  return OAR_SUCCESS;
#endif
}
static OAR_Status ok_void(void) { return OAR_SUCCESS; }
static OAR_Status ok_dev(OAR_Device* d) { return d != NULL && d->id == 0 ? OAR_SUCCESS : OAR_ERROR_INVALID_ARGUMENT; }
static OAR_Status ok_cdev(const OAR_Device* d) {
  return d != NULL && d->id == 0 ? OAR_SUCCESS : OAR_ERROR_INVALID_ARGUMENT;
}
static OAR_Status get_device(OAR_Device* d) {
  d->id = 0;
  return OAR_SUCCESS;
}
static OAR_Status get_device_count(size_t* n) {
  *n = 1;
  return OAR_SUCCESS;
}
/* Streams and events are counters: work is synchronous, so everything is always done. */
static OAR_Status create_stream(const OAR_Device* d, OAR_Stream* s) {
  (void)d;
  *s = (OAR_Stream)malloc(1);
  return OAR_SUCCESS;
}
static OAR_Status destroy_stream(const OAR_Device* d, OAR_Stream s) {
  (void)d;
  free(s);
  return OAR_SUCCESS;
}
static OAR_Status stream_op(const OAR_Device* d, OAR_Stream s) {
  (void)s;
  return ok_cdev(d);
}
static OAR_Status create_event(const OAR_Device* d, OAR_Event* e) {
  (void)d;
  *e = (OAR_Event)malloc(1);
  return OAR_SUCCESS;
}
static OAR_Status destroy_event(const OAR_Device* d, OAR_Event e) {
  (void)d;
  free(e);
  return OAR_SUCCESS;
}
static OAR_Status record_event(const OAR_Device* d, OAR_Stream s, OAR_Event e) {
  (void)s;
  (void)e;
  return ok_cdev(d);
}
static OAR_Status event_op(const OAR_Device* d, OAR_Event e) {
  (void)e;
  return ok_cdev(d);
}
static OAR_Status allocate(const OAR_Device* d, void** ptr, size_t size) {
  (void)d;
  char msg[128];
  if (size > g_max_alloc) {
    snprintf(msg, sizeof(msg), TESTDEV_NAME ": cannot allocate %zu bytes: over the test limit of %zu bytes", size,
             g_max_alloc);
    return fail(OAR_ERROR_OUT_OF_MEMORY, msg);
  }
  if (posix_memalign(ptr, 64, size == 0 ? 64 : size) != 0) {
    snprintf(msg, sizeof(msg), TESTDEV_NAME ": cannot allocate %zu bytes: out of host memory", size);
    return fail(OAR_ERROR_OUT_OF_MEMORY, msg);
  }
  return OAR_SUCCESS;
}
static OAR_Status deallocate(const OAR_Device* d, void* ptr, size_t size) {
  (void)d;
  (void)size;
  free(ptr);
  return OAR_SUCCESS;
}
static OAR_Status copy(const OAR_Device* d, void* dst, const void* src, size_t size) {
  (void)d;
  if (g_fail_copy) return fail(OAR_ERROR_DEVICE, TESTDEV_NAME ": injected copy failure (TESTDEV_FAIL_COPY)");
  if (size != 0) memcpy(dst, src, size);
  return OAR_SUCCESS;
}
static OAR_Status memory_stats(const OAR_Device* d, size_t* total, size_t* free_bytes) {
  (void)d;
  *total = (size_t)1 << 30;
  *free_bytes = (size_t)1 << 30;
  return OAR_SUCCESS;
}
static OAR_Status min_chunk(const OAR_Device* d, size_t* size) {
  (void)d;
  *size = 64;
  return OAR_SUCCESS;
}
static OAR_Status properties(const OAR_Device* d, OAR_DeviceProperties* p) {
  (void)d;
  snprintf(p->name, sizeof(p->name), "%s", TESTDEV_NAME " host emulation");
  p->total_memory = (size_t)1 << 30;
  p->compute_units = 1;
  p->supports_fp16 = 0;
  return OAR_SUCCESS;
}
static OAR_Status query(const OAR_Device* d, OAR_Stream s) {
  (void)s;
  return ok_cdev(d);
}
#ifdef TESTDEV_HALF_CCL
static OAR_Status ccl_group(void) { return OAR_SUCCESS; }
#endif

/* ---- kernels (float32) */

#define CHECK(call)                      \
  do {                                   \
    OAR_Status s_ = (call);              \
    if (s_ != OAR_SUCCESS) return s_;    \
  } while (0)

/* Offset, in elements, of output element `linear` in `t`, broadcasting t against dims. */
static int64_t broadcast_offset(const OAR_Tensor* t, const int64_t* dims, int ndim, int64_t linear) {
  int64_t off = 0;
  for (int k = ndim - 1; k >= 0; --k) {
    const int64_t idx = linear % dims[k];
    linear /= dims[k];
    const int tk = k - (ndim - t->ndim);
    if (tk >= 0 && t->dims[tk] != 1) off += idx * t->strides[tk];
  }
  return off;
}

static int64_t numel(const OAR_Tensor* t) {
  int64_t n = 1;
  for (int k = 0; k < t->ndim; ++k) n *= t->dims[k];
  return n;
}

static OAR_Status add_f32(const OAR_KernelApi* api, OAR_KernelContext ctx) {
  OAR_Tensor x, y, out;
  CHECK(api->input(ctx, 0, &x));
  CHECK(api->input(ctx, 1, &y));
  CHECK(api->allocate_output(ctx, 0, &out));
  const float* xp = (const float*)x.data;
  const float* yp = (const float*)y.data;
  float* op = (float*)out.data;
  const int64_t n = numel(&out);
  for (int64_t i = 0; i < n; ++i)
    op[i] = xp[broadcast_offset(&x, out.dims, out.ndim, i)] + yp[broadcast_offset(&y, out.dims, out.ndim, i)];
  return OAR_SUCCESS;
}

static OAR_Status relu_f32(const OAR_KernelApi* api, OAR_KernelContext ctx) {
  OAR_Tensor x, out;
  if (g_fail_relu) {
    api->set_error(ctx, TESTDEV_NAME " relu: injected kernel failure (TESTDEV_FAIL_RELU)");
    return OAR_ERROR_DEVICE;
  }
  CHECK(api->input(ctx, 0, &x));
  CHECK(api->allocate_output(ctx, 0, &out));
  const float* xp = (const float*)x.data;
  float* op = (float*)out.data;
  const int64_t n = numel(&out);
  for (int64_t i = 0; i < n; ++i) {
    const float v = xp[broadcast_offset(&x, out.dims, out.ndim, i)];
    op[i] = v > 0 ? v : 0;
  }
  return OAR_SUCCESS;
}

/* 2-D only; anything else is declined with a message (Oar runs the CPU kernel instead). */
static OAR_Status matmul_f32(const OAR_KernelApi* api, OAR_KernelContext ctx) {
  OAR_Tensor x, y, out;
  int tx = 0, ty = 0;
  CHECK(api->input(ctx, 0, &x));
  CHECK(api->input(ctx, 1, &y));
  CHECK(api->attr_bool(ctx, 0, &tx));
  CHECK(api->attr_bool(ctx, 1, &ty));
  if (x.ndim != 2 || y.ndim != 2) {
    api->set_error(ctx, TESTDEV_NAME " matmul: only 2-D inputs");
    return OAR_ERROR_UNIMPLEMENTED;
  }
  CHECK(api->allocate_output(ctx, 0, &out));
  const int64_t m = out.dims[0], n = out.dims[1], k = tx ? x.dims[0] : x.dims[1];
  const float* xp = (const float*)x.data;
  const float* yp = (const float*)y.data;
  float* op = (float*)out.data;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        const float a = tx ? xp[p * x.strides[0] + i * x.strides[1]] : xp[i * x.strides[0] + p * x.strides[1]];
        const float b = ty ? yp[j * y.strides[0] + p * y.strides[1]] : yp[p * y.strides[0] + j * y.strides[1]];
        acc += a * b;
      }
      op[i * n + j] = acc;
    }
  }
  return OAR_SUCCESS;
}

/* A Tensor[] output (unstack): piece j is x's slice j along `axis`, that axis removed. */
static OAR_Status unstack_f32(const OAR_KernelApi* api, OAR_KernelContext ctx) {
  OAR_Tensor x, piece;
  int64_t axis = 0;
  size_t pieces = 0;
  CHECK(api->input(ctx, 0, &x));
  CHECK(api->attr_int(ctx, 0, &axis));
  CHECK(api->output_list_size(ctx, 0, &pieces));
  if (axis < 0) axis += x.ndim;
  for (size_t j = 0; j < pieces; ++j) {
    CHECK(api->allocate_output_list_item(ctx, 0, j, &piece));
    const float* xp = (const float*)x.data;
    float* op = (float*)piece.data;
    const int64_t n = numel(&piece);
    for (int64_t i = 0; i < n; ++i) {
      int64_t linear = i, off = (int64_t)j * x.strides[axis];
      for (int k = piece.ndim - 1; k >= 0; --k) { /* piece dim k is x's dim k, or k + 1 past the axis */
        off += (linear % piece.dims[k]) * x.strides[k < axis ? k : k + 1];
        linear /= piece.dims[k];
      }
      op[i] = xp[off];
    }
  }
  return OAR_SUCCESS;
}

static OAR_Status register_kernels(const OAR_KernelApi* api) {
  CHECK(api->register_kernel("add", TESTDEV_NAME, OAR_DTYPE_FLOAT32, "(Tensor x, Tensor y) -> Tensor(out)", add_f32));
  CHECK(api->register_kernel("relu", TESTDEV_NAME, OAR_DTYPE_FLOAT32, "Tensor -> Tensor", relu_f32));
  CHECK(api->register_kernel("matmul", TESTDEV_NAME, OAR_DTYPE_FLOAT32, "Tensor, Tensor, bool, bool -> Tensor",
                             matmul_f32));
  CHECK(api->register_kernel("unstack", TESTDEV_NAME, OAR_DTYPE_FLOAT32, "(Tensor x, int axis, int num) -> Tensor[](out)",
                             unstack_f32));
#if TESTDEV_BAD_KERNEL == 1
  CHECK(api->register_kernel("no_such_op", TESTDEV_NAME, OAR_DTYPE_FLOAT32, "Tensor -> Tensor", relu_f32));
#elif TESTDEV_BAD_KERNEL == 2
  CHECK(api->register_kernel("subtract", TESTDEV_NAME, OAR_DTYPE_FLOAT32, "Tensor -> Tensor", relu_f32));
#elif TESTDEV_BAD_KERNEL == 4
  CHECK(api->register_kernel("adam_update", TESTDEV_NAME, OAR_DTYPE_FLOAT32,
                             "(Tensor[] params, Tensor[] grads, float[] lrs) -> ()", relu_f32));
#elif TESTDEV_BAD_KERNEL == 3
  CHECK(api->register_kernel("matmul", TESTDEV_NAME, OAR_DTYPE_FLOAT64, "Tensor, Tensor, int, bool -> Tensor",
                             matmul_f32));
#endif
  return OAR_SUCCESS;
}

/* ---- the table */

/* A later 1.x table: this one's slots, then slots this runtime has never heard of. */
typedef struct NewerInterface {
  OAR_DeviceInterface known;
  void* future_slots[4];
} NewerInterface;

static NewerInterface g_table;

#ifndef TESTDEV_NO_ENTRY
__attribute__((visibility("default"))) void oar_init_plugin(OAR_DeviceRegistration* reg) {
  OAR_DeviceInterface* t = &g_table.known;
  memset(&g_table, 0, sizeof(g_table));
  t->struct_size = sizeof(OAR_DeviceInterface);
  t->initialize = initialize;
  t->finalize = ok_void;
  t->init_device = ok_dev;
  t->deinit_device = ok_dev;
  t->set_device = ok_cdev;
  t->get_device = get_device;
  t->get_device_count = get_device_count;
  t->synchronize_device = ok_cdev;
  t->create_stream = create_stream;
  t->destroy_stream = destroy_stream;
  t->synchronize_stream = stream_op;
  t->create_event = create_event;
  t->destroy_event = destroy_event;
  t->record_event = record_event;
  t->synchronize_event = event_op;
  t->device_memory_allocate = allocate;
  t->device_memory_deallocate = deallocate;
  t->memory_copy_h2d = copy;
  t->memory_copy_d2h = copy;
  t->memory_copy_d2d = copy;
  t->device_memory_stats = memory_stats;
  t->device_min_chunk_size = min_chunk;
  /* 1.1 */
  t->query_stream = query;
  t->query_event = event_op;
  t->get_device_properties = properties;
  t->get_last_error_message = last_error;
  reg->version.struct_size = sizeof(OAR_DeviceAbiVersion);
  reg->version.major = TESTDEV_ABI_MAJOR;
  reg->version.minor = OAR_DEVICE_ABI_VERSION_MINOR;
  reg->device_type = TESTDEV_NAME;
  reg->sub_device_type = "host emulation";
  reg->interface = t;
  reg->register_kernels = register_kernels;
#ifdef TESTDEV_ABI_10
  /* What a plugin compiled against the 1.0 header hands over: its table ends at
   * device_min_chunk_size, and its registration has no register_kernels. */
  t->struct_size = offsetof(OAR_DeviceInterface, device_min_chunk_size) + sizeof(void*);
  reg->version.minor = 0;
  reg->register_kernels = NULL;
#endif
#ifdef TESTDEV_ABI_11
  /* What a plugin compiled against the 1.1 header hands over: its table ends at
   * ccl_group_end. The 1.2 slot after it holds garbage the runtime must not read. */
  t->struct_size = offsetof(OAR_DeviceInterface, ccl_group_end) + sizeof(void*);
  t->ccl_comm_abort = (OAR_Status(*)(OAR_CCLComm))(uintptr_t)0xdead;
  reg->version.minor = 1;
#endif
#ifdef TESTDEV_NEWER_MINOR
  t->struct_size = sizeof(NewerInterface);
  reg->version.minor = OAR_DEVICE_ABI_VERSION_MINOR + 8;
  for (int i = 0; i < 4; ++i) g_table.future_slots[i] = (void*)(uintptr_t)0xdead;
#endif
#ifdef TESTDEV_SHORT_TABLE
  t->struct_size = 16;
#endif
#ifdef TESTDEV_MISSING_SLOT
  t->memory_copy_d2h = NULL;
#endif
#ifdef TESTDEV_HALF_CCL
  t->ccl_group_start = ccl_group;
  t->ccl_group_end = ccl_group;
#endif
}
#else
__attribute__((visibility("default"))) int not_an_oar_plugin(void) { return 0; }
#endif
