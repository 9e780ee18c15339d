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
#define OAR_DEVICE_ABI_VERSION_MINOR 0

/* The name of the function a plugin exports, of type OAR_InitPluginFn. */
#define OAR_INIT_PLUGIN_SYMBOL "oar_init_plugin"

typedef enum OAR_Status {
  OAR_SUCCESS = 0,
  OAR_ERROR_INVALID_ARGUMENT = 1, /* bad pointer, size or device id */
  OAR_ERROR_OUT_OF_MEMORY = 2,    /* the runtime frees its caches and may retry */
  OAR_ERROR_UNIMPLEMENTED = 3,    /* the device cannot do this */
  OAR_ERROR_DEVICE = 4,           /* the device or its driver failed */
  OAR_ERROR_INTERNAL = 5,         /* a bug in the plugin */
} OAR_Status;

/* Opaque handles, created and owned by the plugin. */
typedef struct OAR_Stream_st* OAR_Stream;
typedef struct OAR_Event_st* OAR_Event;

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
} OAR_DeviceInterface;

typedef struct OAR_DeviceRegistration {
  size_t struct_size;
  OAR_DeviceAbiVersion version;   /* set by the plugin to the version it was built with */
  const char* device_type;        /* "cpu", "gpu", "npu": the name in places ("npu:0") */
  const char* sub_device_type;    /* vendor or model, informational; may be NULL */
  OAR_DeviceInterface* interface; /* owned by the plugin; copied at registration */
} OAR_DeviceRegistration;

/* The plugin entry point, exported as OAR_INIT_PLUGIN_SYMBOL. */
typedef void (*OAR_InitPluginFn)(OAR_DeviceRegistration* registration);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OAR_DEVICE_EXT_H_ */
