// DLPack export and import for oar.Tensor (see dlpack_py.cc).
#pragma once

#include "python/csrc/py_convert.h"

namespace oar::python {

/// A capsule sharing t's memory: "dltensor_versioned" (DLPack 1.0) when `versioned`,
/// else the legacy "dltensor"; `copy` exports a copy instead.
py::capsule tensor_to_dlpack(const Tensor& t, bool versioned, bool copy);
/// Tensor.__dlpack__(stream=None, max_version=None, dl_device=None, copy=None) of the
/// Python array API: versioned when max_version >= (1, 0); BufferError for a stream or
/// a device it cannot serve.
py::object tensor_dlpack(const Tensor& t, py::handle stream, py::handle max_version,
                         py::handle dl_device, py::handle copy);
/// A Tensor sharing the memory of an object with __dlpack__ (asked for a versioned
/// capsule first) or of an unconsumed capsule of either kind. Read-only memory is copied.
Tensor tensor_from_dlpack(py::handle obj);

}  // namespace oar::python
