// DLPack interop: oar.Tensor.__dlpack__ / __dlpack_device__, oar.utils.dlpack.
// Exports speak both protocols: a versioned capsule ("dltensor_versioned", DLPack 1.0)
// for consumers that pass max_version >= (1, 0), such as NumPy 2, and the legacy
// "dltensor" capsule otherwise. Imports take either capsule. Memory is shared both
// ways; the producer's memory lives as long as the Storage that wraps it.
#include "python/csrc/dlpack_py.h"

#include <cstring>

#include "python/csrc/dlpack_versioned.h"

namespace oar::python {

namespace {

constexpr const char* kLegacyName = "dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";

DLDataType to_dl_dtype(DataType t) {
  DLDataType d{};
  d.lanes = 1;
  d.bits = static_cast<uint8_t>(size_of(t) * 8);
  switch (t) {
    case DataType::BOOL:
      d.code = kOarDLBool;
      break;
    case DataType::INT8:
    case DataType::INT16:
    case DataType::INT32:
    case DataType::INT64:
      d.code = kDLInt;
      break;
    case DataType::UINT8:
      d.code = kDLUInt;
      break;
    case DataType::BFLOAT16:
      d.code = kDLBfloat;
      break;
    case DataType::COMPLEX64:
    case DataType::COMPLEX128:
      d.code = kDLComplex;
      break;
    default:
      d.code = kDLFloat;
      break;
  }
  return d;
}

DataType from_dl_dtype(DLDataType d) {
  OAR_ENFORCE(d.lanes == 1, InvalidType, "from_dlpack: vector dtypes (lanes=", d.lanes,
              ") are not supported");
  switch (d.code) {
    case kDLInt:
      if (d.bits == 8) return DataType::INT8;
      if (d.bits == 16) return DataType::INT16;
      if (d.bits == 32) return DataType::INT32;
      if (d.bits == 64) return DataType::INT64;
      break;
    case kDLUInt:
      if (d.bits == 8) return DataType::UINT8;
      break;
    case kDLFloat:
      if (d.bits == 16) return DataType::FLOAT16;
      if (d.bits == 32) return DataType::FLOAT32;
      if (d.bits == 64) return DataType::FLOAT64;
      break;
    case kDLBfloat:
      if (d.bits == 16) return DataType::BFLOAT16;
      break;
    case kDLComplex:
      if (d.bits == 64) return DataType::COMPLEX64;
      if (d.bits == 128) return DataType::COMPLEX128;
      break;
    case kOarDLBool:
      if (d.bits == 8) return DataType::BOOL;
      break;
    default:
      break;
  }
  OAR_THROW(InvalidType, "from_dlpack: unsupported DLPack dtype (code ", int(d.code), ", bits ",
            int(d.bits), ")");
}

// What an exported capsule owns: the storage (kept alive) and the shape arrays DLTensor
// points into. `Managed` is DLManagedTensor or DLManagedTensorVersioned.
template <typename Managed>
struct Export {
  std::shared_ptr<Storage> storage;
  std::vector<int64_t> shape, strides;
  Managed managed{};
};

template <typename Managed>
Managed* export_tensor(const DenseTensor& d) {
  auto* ctx = new Export<Managed>;
  ctx->storage = d.storage();
  ctx->shape = d.dims().vec();
  ctx->strides = d.strides().vec();
  DLTensor& dl = ctx->managed.dl_tensor;
  dl.data = ctx->storage ? ctx->storage->data() : nullptr;
  dl.device = {kDLCPU, 0};
  dl.ndim = d.rank();
  dl.dtype = to_dl_dtype(d.dtype());
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = ctx->storage ? d.offset() * size_of(d.dtype()) : 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = [](Managed* m) { delete static_cast<Export<Managed>*>(m->manager_ctx); };
  return &ctx->managed;
}

// Capsule destructors: free the tensor only when no consumer took it (a consumer
// renames the capsule "used_dltensor[_versioned]" and calls the deleter itself).
template <typename Managed>
void capsule_destructor(PyObject* cap, const char* name) {
  if (!PyCapsule_IsValid(cap, name)) return;
  auto* m = static_cast<Managed*>(PyCapsule_GetPointer(cap, name));
  if (m && m->deleter) m->deleter(m);
}
void legacy_destructor(PyObject* cap) { capsule_destructor<DLManagedTensor>(cap, kLegacyName); }
void versioned_destructor(PyObject* cap) {
  capsule_destructor<DLManagedTensorVersioned>(cap, kVersionedName);
}

// A Tensor viewing the DLTensor of `m`; the tensor's Storage calls m's deleter when it dies.
template <typename Managed>
Tensor import_tensor(Managed* m) {
  const DLTensor& dl = m->dl_tensor;
  OAR_ENFORCE(dl.device.device_type == kDLCPU, Unimplemented,
              "from_dlpack: only CPU tensors are supported yet (device type ",
              int(dl.device.device_type), ")");
  DataType dt = from_dl_dtype(dl.dtype);
  OAR_ENFORCE(dl.ndim >= 0 && dl.ndim <= kMaxRank, InvalidArgument, "from_dlpack: ndim ", dl.ndim,
              " is out of range [0, ", kMaxRank, "]");
  Dims dims(dl.shape, dl.shape + dl.ndim);
  Dims strides = dl.strides ? Dims(dl.strides, dl.strides + dl.ndim) : contiguous_strides(dims);
  const size_t esize = size_of(dt);
  OAR_ENFORCE(dl.byte_offset % esize == 0, InvalidArgument, "from_dlpack: byte_offset ",
              dl.byte_offset, " is not a multiple of the element size ", esize);
  int64_t span = 1;
  for (int i = 0; i < dims.size(); ++i) span += (dims[i] - 1) * strides[i];
  if (dims.numel() == 0) span = 0;
  auto storage = std::make_shared<Storage>(dl.data, span * esize + dl.byte_offset, CPUPlace(), [m] {
    if (m->deleter) m->deleter(m);
  });
  storage->mark_shared_out();  // the producer may write it
  DenseTensor d(dims, dt, CPUPlace());
  d.set_storage(storage, dl.byte_offset / esize);
  d.set_view(dims, strides, dl.byte_offset / esize);
  return Tensor(std::move(d));
}

}  // namespace

py::capsule tensor_to_dlpack(const Tensor& t, bool versioned, bool copy) {
  OAR_ENFORCE(t.place().is_cpu(), Unimplemented, "to_dlpack: only CPU tensors are supported yet");
  DenseTensor d = t.dense();
  if (!copy && d.storage()) d.storage()->mark_shared_out();  // the consumer may write it
  if (copy) {
    DenseTensor c(d.dims(), d.dtype(), d.place());
    c.alloc();
    copy_into(d, &c);
    d = std::move(c);
  }
  if (!versioned) {
    return py::capsule(export_tensor<DLManagedTensor>(d), kLegacyName, &legacy_destructor);
  }
  DLManagedTensorVersioned* m = export_tensor<DLManagedTensorVersioned>(d);
  m->version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
  m->flags = copy ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;  // writable: Oar has no read-only tensors
  return py::capsule(m, kVersionedName, &versioned_destructor);
}

py::object tensor_dlpack(const Tensor& t, py::handle stream, py::handle max_version,
                         py::handle dl_device, py::handle copy) {
  if (!stream.is_none()) {
    throw py::buffer_error("__dlpack__: stream must be None for CPU tensors, got " +
                           py::repr(stream).cast<std::string>());
  }
  if (!dl_device.is_none()) {
    py::tuple dev(py::reinterpret_borrow<py::object>(dl_device));  // any sequence
    if (dev.size() != 2 || dev[0].cast<int>() != kDLCPU || dev[1].cast<int>() != 0) {
      throw py::buffer_error("__dlpack__: cannot export a CPU tensor to device " +
                             py::repr(dl_device).cast<std::string>());
    }
  }
  bool versioned = false;
  if (!max_version.is_none()) {
    py::tuple v(py::reinterpret_borrow<py::object>(max_version));
    OAR_ENFORCE(v.size() == 2, InvalidArgument,
                "__dlpack__: max_version must be a (major, minor) tuple");
    versioned = v[0].cast<int>() >= 1;
  }
  return tensor_to_dlpack(t, versioned, !copy.is_none() && copy.cast<bool>());
}

Tensor tensor_from_dlpack(py::handle obj) {
  py::object cap = py::reinterpret_borrow<py::object>(obj);
  if (py::hasattr(obj, "__dlpack__")) {
    try {
      cap = obj.attr("__dlpack__")(py::arg("max_version") =
                                       py::make_tuple(DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION));
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_TypeError)) throw;  // a producer that predates max_version
      cap = obj.attr("__dlpack__")();
    }
  }
  if (PyCapsule_IsValid(cap.ptr(), kVersionedName)) {
    auto* m =
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap.ptr(), kVersionedName));
    OAR_ENFORCE(m->version.major <= DLPACK_MAJOR_VERSION, Unimplemented,
                "from_dlpack: DLPack version ", m->version.major, ".", m->version.minor,
                " is newer than the supported ", DLPACK_MAJOR_VERSION, ".", DLPACK_MINOR_VERSION);
    Tensor t = import_tensor(m);  // owns m from here on
    PyCapsule_SetName(cap.ptr(), "used_dltensor_versioned");
    if (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) {
      // Oar writes tensors in place freely, so read-only memory is copied, not shared.
      DenseTensor c(t.dims(), t.dtype(), CPUPlace());
      c.alloc();
      copy_into(t.dense(), &c);
      return Tensor(std::move(c));
    }
    return t;
  }
  OAR_ENFORCE(PyCapsule_IsValid(cap.ptr(), kLegacyName), InvalidArgument,
              "from_dlpack: expected an object with __dlpack__ or an unconsumed 'dltensor' or "
              "'dltensor_versioned' capsule, got ",
              py::repr(obj).cast<std::string>());
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), kLegacyName));
  Tensor t = import_tensor(m);
  PyCapsule_SetName(cap.ptr(), "used_dltensor");
  return t;
}

}  // namespace oar::python
