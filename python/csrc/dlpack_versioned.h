// DLPack 1.x declarations on top of an older <dlpack/dlpack.h>.
//
// Debian ships DLPack 0.6 headers (libdlpack-dev), which lack the versioned protocol
// that NumPy >= 2 and the Python array API use: DLManagedTensorVersioned, its flags
// (read-only, copied) and the "dltensor_versioned" capsule. No maintained Debian or
// PyPI package provides newer headers, so the few 1.x declarations live here. They
// are the stable ABI of the DLPack 1.0 spec (dlpack.h, "DLPACK_MAJOR_VERSION 1"):
// DLTensor, DLDevice and DLDataType are unchanged since 0.6, so only the new
// wrapper struct and constants are added. With a 1.x header installed this file
// declares nothing.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>

#ifndef DLPACK_MAJOR_VERSION

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

extern "C" {

/// The DLPack version a DLManagedTensorVersioned was produced with.
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

/// A DLTensor with its owner: `deleter(self)` frees it. Field order is the ABI.
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;  // DLPACK_FLAG_BITMASK_*
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

}  // extern "C"

#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)

#endif  // DLPACK_MAJOR_VERSION

// kDLBool joined DLDataTypeCode in 0.8; the code is fixed by the spec.
constexpr uint8_t kOarDLBool = 6;
