#include "python/csrc/py_convert.h"

#include <pybind11/numpy.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "backends/runtime/pinned_allocator.h"
#include "oar_generated/ops_api.h"
#include "paddle_core/base/errors.h"

namespace oar::python {

namespace {
PyTypeObject* g_tensor_type = nullptr;

std::string type_name(py::handle h) { return py::str(py::type::handle_of(h).attr("__name__")); }

// Whether v is a value of the integer dtype dt (INT64: every int64).
bool int_fits(int64_t v, DataType dt) {
  switch (dt) {
    case DataType::INT8:
      return v >= INT8_MIN && v <= INT8_MAX;
    case DataType::UINT8:
      return v >= 0 && v <= UINT8_MAX;
    case DataType::INT16:
      return v >= INT16_MIN && v <= INT16_MAX;
    case DataType::INT32:
      return v >= INT32_MIN && v <= INT32_MAX;
    default:
      return true;
  }
}

// A Python bool, int, float or complex.
bool is_python_number(py::handle h) {
  return PyBool_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()) || PyComplex_Check(h.ptr());
}

bool is_py_number(py::handle h) {
  return is_python_number(h) || py::isinstance(h, py::module_::import("numpy").attr("generic"));
}
}  // namespace

PyTypeObject* tensor_type() { return g_tensor_type; }
void set_tensor_type(PyTypeObject* t) { g_tensor_type = t; }

bool is_tensor(py::handle h) {
  return g_tensor_type != nullptr && PyObject_TypeCheck(h.ptr(), g_tensor_type);
}

namespace {
// pybind11's record of the bound TensorImpl, looked up once. py::cast looks it up on every
// call (get_type_info: the C++ type's name hashed into a map of every bound type, ~100
// instructions), four times per binary op's call from Python (callgrind, bench_builds'
// add_1elem_us); the two paths below use the cached record instead.
const py::detail::type_info* tensor_type_info() {
  static const py::detail::type_info* info = py::detail::get_type_info(typeid(TensorImpl), /*throw_if_missing=*/true);
  return info;
}

// The TensorImpl an oar.Tensor (is_tensor(h)) holds, as h.cast<shared_ptr<TensorImpl>>()
// gives it; an instance whose holder was never built (a Python subclass whose __init__
// skipped Tensor's) takes pybind11's own path and its error.
std::shared_ptr<TensorImpl> impl_of(py::handle h) {
  auto* inst = reinterpret_cast<py::detail::instance*>(h.ptr());
  py::detail::value_and_holder vh = inst->get_value_and_holder(tensor_type_info(), /*throw_if_missing=*/false);
  if (!vh || !vh.holder_constructed()) return h.cast<std::shared_ptr<TensorImpl>>();
  return vh.holder<std::shared_ptr<TensorImpl>>();
}
}  // namespace

Tensor py_to_tensor(py::handle h, const char* op, const char* arg) {
  if (is_tensor(h)) return Tensor(impl_of(h));
  OAR_THROW(InvalidType, op, ": argument '", arg, "' must be a Tensor, got ",
            h.is_none() ? std::string("None") : type_name(h));
}

Tensor py_to_optional_tensor(py::handle h, const char* op, const char* arg) {
  if (h.is_none()) return Tensor();
  return py_to_tensor(h, op, arg);
}

Tensor py_to_tensor_or_scalar(py::handle h, py::handle peer, const char* op, const char* arg) {
  if (is_tensor(h)) return Tensor(impl_of(h));
  // Made on the peer's place: a kernel reads all its inputs on one device.
  const Place place = is_tensor(peer) ? Tensor(impl_of(peer)).place() : CPUPlace();
  // A NumPy scalar (np.int32(3), np.float64(x.shape[-1]) ** 0.5) is a Python number here, as
  // in Paddle: uint8 + np.int32(3) stays uint8, not an int32 0-d tensor that widens it.
  // numpy.number, looked up once and held for the process (a static py::object would be
  // released after the interpreter is gone).
  static PyObject* const np_number = py::object(py::module_::import("numpy").attr("number")).release().ptr();
  py::object item;
  if (!is_python_number(h) && is_tensor(peer) && PyObject_IsInstance(h.ptr(), np_number) > 0) {
    item = h.attr("item")();
    if (is_python_number(item)) h = item;
  }
  if (is_python_number(h)) {
    Scalar s = py_to_scalar(h, op, arg);
    DataType dt = s.natural_dtype();
    if (is_tensor(peer)) {
      DataType pt = Tensor(impl_of(peer)).dtype();
      // Paddle: a Python scalar does not widen a tensor of the same kind.
      if (s.kind() == Scalar::Kind::kComplex) {  // float32 tensor + 1j -> complex64
        dt = real_to_complex(is_floating(pt) || is_complex(pt) ? pt : default_float_dtype());
      } else if (s.kind() == Scalar::Kind::kFloat) {
        dt = is_floating(pt) || is_complex(pt) ? pt : default_float_dtype();
      } else if (s.kind() == Scalar::Kind::kInt) {
        // Note [Python ints out of a tensor's range]: an int the tensor's integer dtype
        // cannot hold keeps its value as int64 and the op promotes (numpy 1's value-based
        // rule). Cast to the tensor's dtype it wrapped: int32 / 2**40 gave inf, uint8 / -2
        // 0.0039, int32 < 2**40 False (Paddle 3.3 gives those too, but for the division).
        dt = pt == DataType::BOOL || !int_fits(s.to_int(), pt) ? DataType::INT64 : pt;
      } else {
        dt = pt;
      }
    }
    return ops::full({}, s, dt, place);
  }
  if (py::isinstance<py::array>(h) || py::isinstance<py::list>(h) ||
      py::isinstance<py::tuple>(h) || is_py_number(h)) {
    Tensor t = tensor_from_python(h, DataType::UNDEFINED, op);
    return t.place() == place ? t : ops::copy_to(t, place, true);
  }
  OAR_THROW(InvalidType, op, ": argument '", arg, "' must be a Tensor or a number, got ",
            h.is_none() ? std::string("None") : type_name(h));
}

std::vector<Tensor> py_to_tensor_list(py::handle h, const char* op, const char* arg) {
  OAR_ENFORCE(py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h), InvalidType, op,
              ": argument '", arg, "' must be a list or tuple of Tensors, got ", type_name(h));
  std::vector<Tensor> out;
  for (py::handle item : h) out.push_back(py_to_tensor(item, op, arg));
  return out;
}

int64_t py_to_int(py::handle h, const char* op, const char* arg) {
  if (is_tensor(h)) {
    Tensor t = py_to_tensor(h, op, arg);
    OAR_ENFORCE(t.numel() == 1 && is_integral(t.dtype(), true), InvalidType, op, ": argument '",
                arg, "' must be an integer (or a 1-element integer Tensor)");
    return on_host(ops::cast(t, DataType::INT64)).data<int64_t>()[0];
  }
  OAR_ENFORCE(!PyFloat_Check(h.ptr()) && PyIndex_Check(h.ptr()), InvalidType, op, ": argument '",
              arg, "' must be an int, got ", h.is_none() ? std::string("None") : type_name(h));
  // __index__ may fail (a NumPy array of more than one element has one that raises) or
  // give more than 64 bits: both are the caller's error, not a null or wrapped value.
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(h.ptr()));
  if (!index) {
    PyErr_Clear();
    OAR_THROW(InvalidType, op, ": argument '", arg, "' must be an int, got ", type_name(h));
  }
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  OAR_ENFORCE(overflow == 0, InvalidArgument, op, ": argument '", arg, "' = ", py::str(index).cast<std::string>(),
              " does not fit in int64");
  return v;
}

double py_to_double(py::handle h, const char* op, const char* arg) {
  if (is_tensor(h)) {
    Tensor t = py_to_tensor(h, op, arg);
    OAR_ENFORCE(t.numel() == 1, InvalidArgument, op, ": argument '", arg,
                "' must be a number or a 1-element Tensor, got shape ", t.dims());
    return on_host(ops::cast(t, DataType::FLOAT64)).data<double>()[0];
  }
  double v = PyFloat_AsDouble(h.ptr());
  if (v == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    OAR_THROW(InvalidType, op, ": argument '", arg, "' must be a number, got ", type_name(h));
  }
  return v;
}

bool py_to_bool(py::handle h, const char* op, const char* arg) {
  if (is_tensor(h)) return py_to_double(h, op, arg) != 0.0;
  int r = PyObject_IsTrue(h.ptr());
  if (r < 0) {
    PyErr_Clear();
    OAR_THROW(InvalidType, op, ": argument '", arg, "' must be a bool");
  }
  return r != 0;
}

std::string py_to_string(py::handle h, const char* op, const char* arg) {
  OAR_ENFORCE(py::isinstance<py::str>(h), InvalidType, op, ": argument '", arg,
              "' must be a str, got ", type_name(h));
  return h.cast<std::string>();
}

std::vector<int64_t> py_to_int_list(py::handle h, const char* op, const char* arg) {
  std::vector<int64_t> out;
  if (is_tensor(h)) {
    Tensor t = ops::cast(py_to_tensor(h, op, arg), DataType::INT64);
    OAR_ENFORCE(t.rank() <= 1, InvalidArgument, op, ": argument '", arg,
                "' must be a 1-D integer Tensor, got shape ", t.dims());
    DenseTensor c = contiguous(on_host(t));
    const int64_t* p = c.data<int64_t>();
    out.assign(p, p + c.numel());
    return out;
  }
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    for (py::handle item : h) out.push_back(py_to_int(item, op, arg));
    return out;
  }
  if (!h.is_none() && PyIndex_Check(h.ptr()) && !PyFloat_Check(h.ptr())) {
    out.push_back(py_to_int(h, op, arg));
    return out;
  }
  OAR_THROW(InvalidType, op, ": argument '", arg, "' must be an int or a list/tuple of ints, got ",
            h.is_none() ? std::string("None") : type_name(h));
}

std::vector<double> py_to_double_list(py::handle h, const char* op, const char* arg) {
  std::vector<double> out;
  if (py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h)) {
    for (py::handle item : h) out.push_back(py_to_double(item, op, arg));
  } else {
    out.push_back(py_to_double(h, op, arg));
  }
  return out;
}

DataType py_to_dtype(py::handle h, const char* op, const char* arg) {
  if (h.is_none()) return DataType::UNDEFINED;
  if (py::isinstance<DataType>(h)) return h.cast<DataType>();
  if (py::isinstance<py::str>(h)) return dtype_from_name(h.cast<std::string>());
  // numpy dtypes and scalar types (np.float32, np.dtype('float32'))
  py::module_ np = py::module_::import("numpy");
  try {
    std::string name = py::str(np.attr("dtype")(h).attr("name"));
    return dtype_from_name(name);
  } catch (const py::error_already_set&) {
  }
  OAR_THROW(InvalidType, op, ": argument '", arg, "' is not a dtype: ", py::str(h).cast<std::string>());
}

// Note [One Python object per dtype]
// pybind11 returns an enum by making a new Python object for it, which made `x.dtype` cost
// 220 ns, as much as half a small op, in every Python composition that looks at a dtype.
// Returning the enum's own members costs an incref, and `x.dtype is oar.float32` holds. The
// array is never freed: a static py::object would be released after the interpreter is gone.
py::object dtype_object(DataType t) {
  static PyObject* const* objects = [] {
    auto** o = new PyObject*[kNumDataTypes];
    py::object cls = py::type::of(py::cast(DataType::FLOAT32));
    for (int i = 0; i < kNumDataTypes; ++i) {
      o[i] = py::object(cls.attr(dtype_name(static_cast<DataType>(i)))).release().ptr();
    }
    return o;
  }();
  return py::reinterpret_borrow<py::object>(objects[static_cast<int>(t)]);
}

py::object place_object(const Place& p) {
  static auto* cache = new std::vector<std::pair<Place, PyObject*>>();  // a few places at most
  for (const auto& [q, o] : *cache) {
    if (q == p) return py::reinterpret_borrow<py::object>(o);
  }
  PyObject* o = py::cast(p).release().ptr();
  cache->emplace_back(p, o);
  return py::reinterpret_borrow<py::object>(o);
}

Scalar py_to_scalar(py::handle h, const char* op, const char* arg) {
  if (PyBool_Check(h.ptr())) return Scalar(h.ptr() == Py_True);
  if (PyLong_Check(h.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    OAR_ENFORCE(overflow == 0, InvalidArgument, op, ": argument '", arg,
                "' does not fit in int64");
    return Scalar(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(h.ptr())) return Scalar(PyFloat_AsDouble(h.ptr()));
  if (PyComplex_Check(h.ptr())) {
    return Scalar(std::complex<double>(PyComplex_RealAsDouble(h.ptr()), PyComplex_ImagAsDouble(h.ptr())));
  }
  if (is_tensor(h)) {
    Tensor t = py_to_tensor(h, op, arg);
    if (is_complex(t.dtype())) {
      OAR_ENFORCE(t.numel() == 1, InvalidArgument, op, ": argument '", arg,
                  "' must be a number or a 1-element Tensor, got shape ", t.dims());
      DenseTensor c = on_host(ops::cast(t, DataType::COMPLEX128));
      return Scalar(c.data<std::complex<double>>()[0]);
    }
    if (is_integral(t.dtype())) return Scalar(py_to_int(h, op, arg));
    if (t.dtype() == DataType::BOOL) return Scalar(py_to_bool(h, op, arg));
    return Scalar(py_to_double(h, op, arg));
  }
  if (PyIndex_Check(h.ptr())) return Scalar(py_to_int(h, op, arg));
  return Scalar(py_to_double(h, op, arg));
}

void wait_host_writes(const DenseTensor& d) {
  if (!d.storage() || !backends::pinned_writes_pending()) return;  // one atomic load
  py::gil_scoped_release nogil;
  backends::pinned_wait_writes(d.storage()->data());
}

DenseTensor on_host(const Tensor& t) {
  const DenseTensor& d = t.dense();
  if (d.place().is_cpu()) {
    wait_host_writes(d);  // pinned memory an async device-to-host copy still has to fill
    return d;
  }
  DenseTensor h(d.dims(), d.dtype(), CPUPlace());
  h.alloc();
  py::gil_scoped_release nogil;  // the device may be busy for a while
  // The blocking copy runs after the work queued on the device's blocking streams, and
  // reports a kernel's failure; not after a non-blocking stream's (a process group's
  // pending send to a peer that is itself reading a tensor: Note [Non-blocking streams]).
  copy_into(d, &h);
  return h;
}

Place& current_place() {
  static Place p = CPUPlace();
  return p;
}

Place py_to_place(py::handle h, const char* op, const char* arg) {
  if (h.is_none()) return current_place();
  if (py::isinstance<Place>(h)) return h.cast<Place>();
  if (py::isinstance<py::str>(h)) return parse_place(h.cast<std::string>());
  OAR_THROW(InvalidType, op, ": argument '", arg, "' must be a Place or a device string");
}

py::object wrap(const Tensor& t) {
  if (!t.defined()) return py::none();
  // py::cast(t.impl()) without its type lookup: the Python object already wrapping this
  // TensorImpl if there is one, else a new one sharing ownership (TensorImpl is not
  // polymorphic, so no most-derived type to find).
  static_assert(!std::is_polymorphic_v<TensorImpl>, "wrap() would have to find the most-derived type");
  const std::shared_ptr<TensorImpl>& impl = t.impl();
  return py::reinterpret_steal<py::object>(py::detail::type_caster_generic::cast(
      impl.get(), py::return_value_policy::take_ownership, py::handle(), tensor_type_info(), nullptr, nullptr, &impl));
}

py::object wrap_result(const std::vector<Tensor>& ts) {
  py::list l;
  for (const auto& t : ts) l.append(wrap(t));
  return std::move(l);
}

namespace {
DataType numpy_to_dtype(const py::dtype& dt) {
  // Read through Python attributes: pybind11 < 2.12 reads itemsize from the NumPy 1.x
  // descriptor layout, which NumPy 2 changed (float32 arrays came in as float64).
  const char kind = dt.attr("kind").cast<std::string>()[0];
  const size_t size = dt.attr("itemsize").cast<size_t>();
  switch (kind) {
    case 'b': return DataType::BOOL;
    case 'i':
      return size == 1 ? DataType::INT8 : size == 2 ? DataType::INT16
             : size == 4 ? DataType::INT32 : DataType::INT64;
    case 'u':
      OAR_ENFORCE(size == 1, InvalidType, "to_tensor: unsigned integers wider than 8 bits (uint",
                  size * 8, ") are not supported");
      return DataType::UINT8;
    case 'f':
      return size == 2 ? DataType::FLOAT16 : size == 4 ? DataType::FLOAT32 : DataType::FLOAT64;
    case 'c':
      OAR_ENFORCE(size == 8 || size == 16, InvalidType, "to_tensor: complex", size * 8,
                  " is not supported (complex64 and complex128 are)");
      return size == 8 ? DataType::COMPLEX64 : DataType::COMPLEX128;
    default: break;
  }
  OAR_THROW(InvalidType, "to_tensor: unsupported numpy dtype kind '", kind, "' of size ", size);
}
}  // namespace

Tensor tensor_from_python(py::handle data, DataType dtype, const char* op) {
  if (is_tensor(data)) {
    Tensor t = py_to_tensor(data, op, "data");
    Tensor c = ops::assign(t);
    c.set_stop_gradient(true);
    return dtype == DataType::UNDEFINED || dtype == c.dtype() ? c : ops::cast(c, dtype);
  }
  py::module_ np = py::module_::import("numpy");
  py::array arr;
  bool from_python_floats = false;
  if (py::isinstance<py::array>(data)) {
    arr = py::reinterpret_borrow<py::array>(data);
  } else {
    arr = np.attr("asarray")(data);
    // Python floats become the default float dtype (float32), as in Paddle; so do NumPy
    // float scalars not of float64 (np.float32(2.5)), read as float64 like the others:
    // their buffer holds fewer bytes than a float64 (copying 8 of them read past it and
    // gave garbage, 0 for 2.5).
    from_python_floats = arr.dtype().kind() == 'f';
    if (from_python_floats && arr.dtype().itemsize() != 8) arr = arr.attr("astype")(np.attr("float64"));
  }
  OAR_ENFORCE(arr.dtype().kind() != 'O' && arr.dtype().kind() != 'U', InvalidType, op,
              ": cannot convert data of numpy dtype ", py::str(arr.dtype()).cast<std::string>(),
              " (ragged nested lists or non-numeric values?)");
  // Python complex numbers become complex64 with the default float32, as in Paddle.
  const bool from_python_complex = !py::isinstance<py::array>(data) && arr.dtype().kind() == 'c';
  DataType src = from_python_floats ? DataType::FLOAT64 : numpy_to_dtype(arr.dtype());
  // Shape first: ascontiguousarray returns at least 1-D, and a Python number is 0-D.
  std::vector<int64_t> shape(arr.shape(), arr.shape() + arr.ndim());
  arr = np.attr("ascontiguousarray")(arr);
  DenseTensor d(Dims(shape), src, CPUPlace());
  void* p = d.alloc();
  if (d.numel() > 0) std::memcpy(p, arr.data(), d.numel() * size_of(src));
  Tensor t(std::move(d));
  DataType target = dtype;
  if (target == DataType::UNDEFINED && from_python_floats) target = default_float_dtype();
  if (target == DataType::UNDEFINED && from_python_complex) target = real_to_complex(default_float_dtype());
  if (target != DataType::UNDEFINED && target != src) t = ops::cast(t, target);
  return t;
}

}  // namespace oar::python
