// Conversions between Python objects and Oar's C++ types, used by the generated
// op bindings (oar_generated/ops_py_*.cc) and the hand-written ones. Every
// converter names the op and argument in its error.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "paddle_core/tensor/scalar.h"
#include "paddle_core/tensor/tensor.h"

namespace py = pybind11;

namespace oar::python {

using PyTensorClass = py::class_<TensorImpl, std::shared_ptr<TensorImpl>>;

/// The Python type object of oar.Tensor (set once at module init).
PyTypeObject* tensor_type();

bool is_tensor(py::handle h);
Tensor py_to_tensor(py::handle h, const char* op, const char* arg);
/// A Tensor, or a Python number turned into a 0-D tensor whose dtype follows Paddle's
/// scalar rules relative to `peer` (the other operand): float scalars keep a float
/// peer's dtype, and so on.
Tensor py_to_tensor_or_scalar(py::handle h, py::handle peer, const char* op, const char* arg);
Tensor py_to_optional_tensor(py::handle h, const char* op, const char* arg);
std::vector<Tensor> py_to_tensor_list(py::handle h, const char* op, const char* arg);
int64_t py_to_int(py::handle h, const char* op, const char* arg);
double py_to_double(py::handle h, const char* op, const char* arg);
bool py_to_bool(py::handle h, const char* op, const char* arg);
std::string py_to_string(py::handle h, const char* op, const char* arg);
std::vector<int64_t> py_to_int_list(py::handle h, const char* op, const char* arg);
std::vector<double> py_to_double_list(py::handle h, const char* op, const char* arg);
DataType py_to_dtype(py::handle h, const char* op, const char* arg);
/// The DataType's Python object, oar.float32 and friends themselves (Note [One Python object
/// per dtype]).
py::object dtype_object(DataType t);
/// One Python object per place, made on first use, for the same reason.
py::object place_object(const Place& p);
Scalar py_to_scalar(py::handle h, const char* op, const char* arg);
Place py_to_place(py::handle h, const char* op, const char* arg);

/// The place creation ops use when none is given (oar.set_device).
Place& current_place();

py::object wrap(const Tensor& t);
inline py::object wrap_result(const Tensor& t) { return wrap(t); }
py::object wrap_result(const std::vector<Tensor>& ts);
template <typename... Ts>
py::object wrap_result(const std::tuple<Ts...>& ts) {
  return std::apply([](const auto&... t) { return py::make_tuple(wrap(t)...); }, ts);
}
/// In-place ops return the very Python object they modified.
inline py::object wrap_inplace(py::handle self, const Tensor&) {
  return py::reinterpret_borrow<py::object>(self);
}

/// Tensor from a NumPy array / nested list / number (copying), with optional dtype.
Tensor tensor_from_python(py::handle data, DataType dtype, const char* op);
/// `t` itself on the CPU; else a host copy made after the device's queued work (how the
/// host reads a device tensor: numpy(), item(), scalar arguments). No autograd.
DenseTensor on_host(const Tensor& t);
/// Waits for the asynchronous device-to-host copies still writing `d`'s pinned memory
/// (Note [Pinned memory]); one atomic load when there are none.
void wait_host_writes(const DenseTensor& d);

}  // namespace oar::python
