/* The versioned C device ABI. Every device, built in (cpu, gpu) or loaded from a
 * plugin, fills one OAR_DeviceInterface and hands it to the runtime in an
 * OAR_DeviceRegistration. Plain C so a plugin needs no Oar headers but this one.
 *
 * Rules (after Paddle's device_ext.h and XLA's PJRT C API):
 *  - every struct crossing the boundary starts with `size_t struct_size`, set by
 *    whoever allocates the struct to sizeof() as it was compiled;
 *  - every call returns an OAR_Status; results come back through out-pointers;
 *  - slots are only ever appended, and a slot added in a minor version is optional,
 *    so a plugin built against an older minor version still loads;
 *  - a major version bump breaks the ABI; the runtime refuses other majors;
 *  - each call names its device; the plugin makes it current if it needs to;
 *  - calls never throw or longjmp across the boundary.
 *
 * A plugin is a shared library that exports OAR_INIT_PLUGIN_SYMBOL. The runtime
 * zero-fills an OAR_DeviceRegistration, sets its struct_size, and calls it; the
 * plugin sets version to OAR_DEVICE_ABI_VERSION_MAJOR/MINOR and fills device_type
 * and interface. Strings and the interface table must outlive the call (static
 * storage); the runtime copies the table. */
#ifndef OAR_DEVICE_EXT_H_
#define OAR_DEVICE_EXT_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OAR_DEVICE_ABI_VERSION_MAJOR 1
#define OAR_DEVICE_ABI_VERSION_MINOR 3

/* The name of the function a plugin exports, of type OAR_InitPluginFn. */
#define OAR_INIT_PLUGIN_SYMBOL "oar_init_plugin"

typedef enum OAR_Status {
  OAR_SUCCESS = 0,
  OAR_ERROR_INVALID_ARGUMENT = 1, /* bad pointer, size or device id */
  OAR_ERROR_OUT_OF_MEMORY = 2,    /* the runtime frees its caches and may retry */
  OAR_ERROR_UNIMPLEMENTED = 3,    /* the device cannot do this */
  OAR_ERROR_DEVICE = 4,           /* the device or its driver failed */
  OAR_ERROR_INTERNAL = 5,         /* a bug in the plugin */
  OAR_ERROR_NOT_READY = 6,        /* (1.1) query_stream/query_event: work is still queued */
} OAR_Status;

/* (1.1) Element types, shared by collectives and the C kernel API (kernel_ext.h). */
typedef enum OAR_DataType {
  OAR_DTYPE_BOOL = 0,
  OAR_DTYPE_INT8 = 1,
  OAR_DTYPE_UINT8 = 2,
  OAR_DTYPE_INT16 = 3,
  OAR_DTYPE_INT32 = 4,
  OAR_DTYPE_INT64 = 5,
  OAR_DTYPE_FLOAT16 = 6,
  OAR_DTYPE_BFLOAT16 = 7,
  OAR_DTYPE_FLOAT32 = 8,
  OAR_DTYPE_FLOAT64 = 9,
  OAR_DTYPE_COMPLEX64 = 10,  /* appended: interleaved float (real, imaginary) pairs */
  OAR_DTYPE_COMPLEX128 = 11, /* appended: interleaved double pairs */
} OAR_DataType;

/* (1.1) Reductions of the collectives (Paddle's ReduceOp). */
typedef enum OAR_ReduceOp {
  OAR_REDUCE_SUM = 0,
  OAR_REDUCE_AVG = 1,
  OAR_REDUCE_MAX = 2,
  OAR_REDUCE_MIN = 3,
  OAR_REDUCE_PROD = 4,
} OAR_ReduceOp;

/* (1.3) Flags of create_stream_with_flags, or-ed. */
typedef enum OAR_StreamFlags {
  OAR_STREAM_DEFAULT = 0,
  /* The stream's work is not waited for by the blocking calls that wait for everything
   * queued on the device (the blocking copies and memset, CUDA's legacy default stream):
   * CUDA's cudaStreamNonBlocking. synchronize_device still waits for it. */
  OAR_STREAM_NON_BLOCKING = 1,
} OAR_StreamFlags;

/* Opaque handles, created and owned by the plugin. */
typedef struct OAR_Stream_st* OAR_Stream;
typedef struct OAR_Event_st* OAR_Event;
typedef struct OAR_CCLComm_st* OAR_CCLComm; /* (1.1) a communicator of the plugin's collectives */

/* (1.1) Runs on a plugin thread once a stream reaches the point it was added at;
 * it must not call back into the plugin's stream functions. */
typedef void (*OAR_StreamCallback)(void* user_data);

typedef struct OAR_DeviceAbiVersion {
  size_t struct_size;
  int major; /* OAR_DEVICE_ABI_VERSION_MAJOR the plugin was built with */
  int minor; /* OAR_DEVICE_ABI_VERSION_MINOR the plugin was built with */
} OAR_DeviceAbiVersion;

typedef struct OAR_Device {
  size_t struct_size;
  int id;            /* 0 .. get_device_count()-1 */
  void* device_data; /* owned by the plugin; may be set by init_device */
} OAR_Device;

/* (1.1) What get_device_properties reports. The runtime zero-fills it and sets
 * struct_size; a plugin writes only the fields that fit in struct_size. */
typedef struct OAR_DeviceProperties {
  size_t struct_size;
  char name[256];               /* model name, NUL-terminated */
  size_t total_memory;          /* device memory in bytes */
  int compute_units;            /* SMs, cores, tiles: what runs work in parallel */
  int max_threads_per_block;    /* 0 where the device has no such notion */
  int compute_capability_major; /* the vendor's architecture version */
  int compute_capability_minor;
  int runtime_version; /* the vendor runtime's version, e.g. 12040 */
  int driver_version;  /* the driver's version */
  int supports_fp16;   /* nonzero: float16 kernels run natively */
  int supports_bf16;   /* nonzero: bfloat16 kernels run natively */
} OAR_DeviceProperties;

/* (1.1) One device activity recorded between profiler_start and profiler_stop. */
typedef struct OAR_TraceEvent {
  size_t struct_size;
  const char* name;            /* kernel or copy name; valid during the sink call */
  unsigned long long start_ns; /* CLOCK_MONOTONIC nanoseconds */
  unsigned long long end_ns;
  int device_id;
  int stream_id; /* the plugin's number for the stream, for the timeline's rows */
} OAR_TraceEvent;
typedef void (*OAR_TraceSink)(void* user_data, const OAR_TraceEvent* event);

typedef struct OAR_DeviceInterface {
  size_t struct_size;

  /* Runtime */
  OAR_Status (*initialize)(void);                                   /* once, at registration */
  OAR_Status (*finalize)(void);                                     /* once, at shutdown */
  OAR_Status (*init_device)(OAR_Device* device);                    /* before first use of a device */
  OAR_Status (*deinit_device)(OAR_Device* device);                  /* after last use of a device */
  OAR_Status (*set_device)(const OAR_Device* device);               /* make device current for this thread */
  OAR_Status (*get_device)(OAR_Device* device);                     /* writes the current device id */
  OAR_Status (*get_device_count)(size_t* count);                    /* number of visible devices */
  OAR_Status (*synchronize_device)(const OAR_Device* device);       /* wait for all work on device */

  /* Streams and events */
  OAR_Status (*create_stream)(const OAR_Device* device, OAR_Stream* stream);  /* new stream */
  OAR_Status (*destroy_stream)(const OAR_Device* device, OAR_Stream stream);  /* free stream */
  OAR_Status (*synchronize_stream)(const OAR_Device* device, OAR_Stream stream); /* wait for stream */
  OAR_Status (*stream_wait_event)(const OAR_Device* device, OAR_Stream stream,
                                  OAR_Event event);  /* (optional) stream waits for event */
  OAR_Status (*create_event)(const OAR_Device* device, OAR_Event* event);     /* new event */
  OAR_Status (*destroy_event)(const OAR_Device* device, OAR_Event event);     /* free event */
  OAR_Status (*record_event)(const OAR_Device* device, OAR_Stream stream,
                             OAR_Event event);  /* event fires when stream reaches here */
  OAR_Status (*synchronize_event)(const OAR_Device* device, OAR_Event event); /* wait for event */

  /* Memory; sizes are in bytes */
  OAR_Status (*device_memory_allocate)(const OAR_Device* device, void** ptr,
                                       size_t size);  /* *ptr: at least 64-byte aligned */
  OAR_Status (*device_memory_deallocate)(const OAR_Device* device, void* ptr,
                                         size_t size);  /* size as allocated */
  OAR_Status (*host_memory_allocate)(const OAR_Device* device, void** ptr,
                                     size_t size);  /* (optional) pinned host memory */
  OAR_Status (*host_memory_deallocate)(const OAR_Device* device, void* ptr,
                                       size_t size);  /* (optional) frees pinned host memory */
  OAR_Status (*memory_copy_h2d)(const OAR_Device* device, void* dst, const void* src,
                                size_t size);  /* blocking host -> device */
  OAR_Status (*memory_copy_d2h)(const OAR_Device* device, void* dst, const void* src,
                                size_t size);  /* blocking device -> host */
  OAR_Status (*memory_copy_d2d)(const OAR_Device* device, void* dst, const void* src,
                                size_t size);  /* blocking, within one device */
  OAR_Status (*async_memory_copy_h2d)(const OAR_Device* device, OAR_Stream stream, void* dst,
                                      const void* src, size_t size);  /* (optional) on stream */
  OAR_Status (*async_memory_copy_d2h)(const OAR_Device* device, OAR_Stream stream, void* dst,
                                      const void* src, size_t size);  /* (optional) on stream */
  OAR_Status (*async_memory_copy_d2d)(const OAR_Device* device, OAR_Stream stream, void* dst,
                                      const void* src, size_t size);  /* (optional) on stream */
  OAR_Status (*device_memory_stats)(const OAR_Device* device, size_t* total,
                                    size_t* free_bytes);  /* device memory in bytes */
  OAR_Status (*device_min_chunk_size)(const OAR_Device* device,
                                      size_t* size);  /* allocation granularity in bytes */

  /* ---- ABI 1.1 (every slot below may be null: a 1.0 table ends above) ---- */
  /* Non-blocking queries and host callbacks */
  OAR_Status (*query_stream)(const OAR_Device* device,
                             OAR_Stream stream); /* (optional) OAR_SUCCESS when idle, else OAR_ERROR_NOT_READY */
  OAR_Status (*query_event)(const OAR_Device* device,
                            OAR_Event event); /* (optional) OAR_SUCCESS when fired, else OAR_ERROR_NOT_READY */
  OAR_Status (*stream_add_callback)(const OAR_Device* device, OAR_Stream stream, OAR_StreamCallback callback,
                                    void* user_data); /* (optional) callback(user_data) once the stream gets here */
  /* Memory fill, peer copies, unified memory, limits */
  OAR_Status (*device_memory_set)(const OAR_Device* device, void* ptr, unsigned char value,
                                  size_t size); /* (optional) blocking memset of device memory */
  OAR_Status (*async_device_memory_set)(const OAR_Device* device, OAR_Stream stream, void* ptr, unsigned char value,
                                        size_t size); /* (optional) memset queued on stream */
  OAR_Status (*memory_copy_p2p)(const OAR_Device* dst_device, const OAR_Device* src_device, void* dst, const void* src,
                                size_t size); /* (optional) blocking, between two devices */
  OAR_Status (*async_memory_copy_p2p)(const OAR_Device* dst_device, const OAR_Device* src_device, OAR_Stream stream,
                                      void* dst, const void* src, size_t size); /* (optional) on src's stream */
  OAR_Status (*unified_memory_allocate)(const OAR_Device* device, void** ptr,
                                        size_t size); /* (optional) memory both host and device address */
  OAR_Status (*unified_memory_deallocate)(const OAR_Device* device, void* ptr,
                                          size_t size);                        /* (optional) frees unified memory */
  OAR_Status (*device_max_alloc_size)(const OAR_Device* device, size_t* size); /* (optional) largest one allocation */
  /* Properties and errors */
  OAR_Status (*get_device_properties)(const OAR_Device* device,
                                      OAR_DeviceProperties* properties); /* (optional) see OAR_DeviceProperties */
  const char* (*get_last_error_message)(void); /* (optional) why this thread's last call failed, or NULL */
  /* Profiler: device activity for paddle.profiler's timeline */
  OAR_Status (*profiler_start)(const OAR_Device* device); /* (optional) begin recording device activity */
  OAR_Status (*profiler_stop)(const OAR_Device* device);  /* (optional) stop recording */
  OAR_Status (*profiler_collect)(
      const OAR_Device* device, OAR_TraceSink sink,
      void* user_data); /* (optional) sink(user_data, e) per recorded event, then forget them */
  /* Collectives, after Paddle's XCCL group: all ccl_* slots or none (the runtime checks).
   * Each call checks its arguments, then queues the transfer on `stream`; a failure after
   * that (a dead peer, a timeout) is returned by the stream's next synchronize_stream. */
  OAR_Status (*ccl_get_unique_id_size)(size_t* size);     /* (optional) bytes of a communicator id */
  OAR_Status (*ccl_get_unique_id)(void* id, size_t size); /* (optional) rank 0 makes it; others get it out of band */
  OAR_Status (*ccl_comm_init_rank)(size_t nranks, const void* id, size_t id_size, size_t rank,
                                   OAR_CCLComm* comm); /* (optional) collective: every rank calls it */
  OAR_Status (*ccl_destroy_comm)(OAR_CCLComm comm);    /* (optional) frees a communicator */
  OAR_Status (*ccl_all_reduce)(const void* send, void* recv, size_t count, OAR_DataType dtype, OAR_ReduceOp op,
                               OAR_CCLComm comm, OAR_Stream stream); /* (optional) recv = op over ranks */
  OAR_Status (*ccl_broadcast)(void* buf, size_t count, OAR_DataType dtype, size_t root, OAR_CCLComm comm,
                              OAR_Stream stream); /* (optional) root's buf to every rank */
  OAR_Status (*ccl_reduce)(const void* send, void* recv, size_t count, OAR_DataType dtype, OAR_ReduceOp op, size_t root,
                           OAR_CCLComm comm, OAR_Stream stream); /* (optional) result on root */
  OAR_Status (*ccl_all_gather)(const void* send, void* recv, size_t count, OAR_DataType dtype, OAR_CCLComm comm,
                               OAR_Stream stream); /* (optional) recv: nranks * count, rank order */
  OAR_Status (*ccl_reduce_scatter)(const void* send, void* recv, size_t count, OAR_DataType dtype, OAR_ReduceOp op,
                                   OAR_CCLComm comm, OAR_Stream stream); /* (optional) send: nranks * count */
  OAR_Status (*ccl_all_to_all)(const void* send, void* recv, size_t count, OAR_DataType dtype, OAR_CCLComm comm,
                               OAR_Stream stream); /* (optional) count elements to and from each rank */
  OAR_Status (*ccl_send)(const void* send, size_t count, OAR_DataType dtype, size_t peer, OAR_CCLComm comm,
                         OAR_Stream stream); /* (optional) point to point */
  OAR_Status (*ccl_recv)(void* recv, size_t count, OAR_DataType dtype, size_t peer, OAR_CCLComm comm,
                         OAR_Stream stream); /* (optional) point to point */
  OAR_Status (*ccl_group_start)(void);       /* (optional) batch the following calls ... */
  OAR_Status (*ccl_group_end)(void);         /* (optional) ... and launch them together */

  /* (1.2) */
  OAR_Status (*ccl_comm_abort)(OAR_CCLComm comm); /* (optional) fail comm's pending work now; then only destroy */

  /* (1.3) */
  OAR_Status (*create_stream_with_flags)(const OAR_Device* device, unsigned int flags,
                                         OAR_Stream* stream); /* (optional) new stream; flags: OAR_StreamFlags */
  OAR_Status (*ccl_comm_get_async_error)(
      OAR_CCLComm comm); /* (optional) without waiting: OAR_SUCCESS, or the status of comm's first failed transfer
                          * (the error its stream's synchronize_stream will return; NCCL's ncclCommGetAsyncError) */
} OAR_DeviceInterface;

struct OAR_KernelApi; /* kernel_ext.h */

typedef struct OAR_DeviceRegistration {
  size_t struct_size;
  OAR_DeviceAbiVersion version;   /* set by the plugin to the version it was built with */
  const char* device_type;        /* "cpu", "gpu", "npu": the name in places ("npu:0") */
  const char* sub_device_type;    /* vendor or model, informational; may be NULL */
  OAR_DeviceInterface* interface; /* owned by the plugin; copied at registration */
  /* (1.1, optional) Registers the plugin's C kernels through api (kernel_ext.h); called
   * once the table is accepted and before the device goes live. Every kernel must
   * register, or the whole plugin is refused. */
  OAR_Status (*register_kernels)(const struct OAR_KernelApi* api);
} OAR_DeviceRegistration;

/* The plugin entry point, exported as OAR_INIT_PLUGIN_SYMBOL. */
typedef void (*OAR_InitPluginFn)(OAR_DeviceRegistration* registration);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OAR_DEVICE_EXT_H_ */
