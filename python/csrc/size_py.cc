// oar.Size: what Tensor.shape returns, as in Paddle 3.3 (paddle.Size): a list subclass, so
// that code indexing, mutating or concatenating shapes as lists keeps working, which also
// compares equal to tuples, keeps its type through slicing and concatenation, prints as
// paddle.Size([2, 3]) and has numel(). It is written against the C API, not pybind11, so
// that x.shape and x.shape[0] cost what a plain list costs: item access is list's own.
#include <Python.h>

#include "python/csrc/py_convert.h"

namespace oar::python {

namespace {

PyTypeObject SizeType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject* size_of_list(PyObject* list) {  // steals `list`
  if (list == nullptr) return nullptr;
  PyObject* out = SizeType.tp_alloc(&SizeType, 0);
  if (out != nullptr && PyList_SetSlice(out, 0, 0, list) < 0) Py_CLEAR(out);
  Py_DECREF(list);
  return out;
}

PyObject* size_repr(PyObject* self) {
  PyObject* inner = PyList_Type.tp_repr(self);
  if (inner == nullptr) return nullptr;
  PyObject* out = PyUnicode_FromFormat("paddle.Size(%U)", inner);
  Py_DECREF(inner);
  return out;
}

PyObject* size_subscript(PyObject* self, PyObject* key) {
  PyObject* r = PyList_Type.tp_as_mapping->mp_subscript(self, key);
  return r != nullptr && PySlice_Check(key) ? size_of_list(r) : r;
}

// A tuple on the other side of ==, != or + is taken as the list of its items.
PyObject* as_list_if_tuple(PyObject* o) { return PyTuple_Check(o) ? PySequence_List(o) : (Py_INCREF(o), o); }

PyObject* size_richcompare(PyObject* a, PyObject* b, int op) {
  if (!PyList_Check(a) || !(PyList_Check(b) || PyTuple_Check(b))) Py_RETURN_NOTIMPLEMENTED;
  PyObject* la = as_list_if_tuple(a);
  PyObject* lb = as_list_if_tuple(b);
  PyObject* r = (la && lb) ? PyList_Type.tp_richcompare(la, lb, op) : nullptr;
  Py_XDECREF(la);
  Py_XDECREF(lb);
  return r;
}

PyObject* size_concat(PyObject* a, PyObject* b) {
  if (!PyList_Check(b) && !PyTuple_Check(b)) {
    PyErr_Format(PyExc_TypeError, "can only concatenate a list or tuple (not \"%.200s\") to paddle.Size",
                 Py_TYPE(b)->tp_name);
    return nullptr;
  }
  PyObject* lb = as_list_if_tuple(b);
  if (lb == nullptr) return nullptr;
  PyObject* r = PyList_Type.tp_as_sequence->sq_concat(a, lb);
  Py_DECREF(lb);
  return size_of_list(r);
}

PyObject* size_numel(PyObject* self, PyObject*) {
  long long n = 1;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self); ++i) {
    const long long d = PyLong_AsLongLong(PyList_GET_ITEM(self, i));
    if (d == -1 && PyErr_Occurred()) return nullptr;
    if (__builtin_mul_overflow(n, d, &n)) {
      PyErr_SetString(PyExc_OverflowError, "Size.numel: the product of the sizes overflows int64");
      return nullptr;
    }
  }
  return PyLong_FromLongLong(n);
}

// Pickles as Size(list(self)), so a pickled shape loads as a Size.
PyObject* size_reduce(PyObject* self, PyObject*) {
  PyObject* items = PySequence_List(self);
  if (items == nullptr) return nullptr;
  return Py_BuildValue("O(N)", reinterpret_cast<PyObject*>(&SizeType), items);
}

PyMethodDef size_methods[] = {{"numel", size_numel, METH_NOARGS, "The product of the sizes (1 for an empty Size)."},
                              {"__reduce__", size_reduce, METH_NOARGS, nullptr},
                              {nullptr, nullptr, 0, nullptr}};

PyMappingMethods size_as_mapping = {};
PySequenceMethods size_as_sequence = {};

}  // namespace

py::object make_size(const int64_t* dims, int rank) {
  PyObject* out = SizeType.tp_alloc(&SizeType, 0);
  if (out == nullptr) throw py::error_already_set();
  for (int i = 0; i < rank; ++i) {
    PyObject* d = PyLong_FromLongLong(dims[i]);
    if (d == nullptr || PyList_Append(out, d) < 0) {
      Py_XDECREF(d);
      Py_DECREF(out);
      throw py::error_already_set();
    }
    Py_DECREF(d);
  }
  return py::reinterpret_steal<py::object>(out);
}

void bind_size(py::module_& m) {
  size_as_mapping = *PyList_Type.tp_as_mapping;
  size_as_mapping.mp_subscript = size_subscript;
  size_as_sequence = *PyList_Type.tp_as_sequence;
  size_as_sequence.sq_concat = size_concat;
  SizeType.tp_name = "oar.Size";
  SizeType.tp_basicsize = sizeof(PyListObject);
  SizeType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_LIST_SUBCLASS;
  SizeType.tp_doc = "The shape of a Tensor (Paddle's paddle.Size): a list of ints.";
  SizeType.tp_base = &PyList_Type;
  SizeType.tp_repr = size_repr;
  SizeType.tp_richcompare = size_richcompare;
  SizeType.tp_as_mapping = &size_as_mapping;
  SizeType.tp_as_sequence = &size_as_sequence;
  SizeType.tp_methods = size_methods;
  SizeType.tp_hash = PyObject_HashNotImplemented;
  if (PyType_Ready(&SizeType) < 0) throw py::error_already_set();
  Py_INCREF(&SizeType);
  m.attr("Size") = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&SizeType));
}

}  // namespace oar::python
