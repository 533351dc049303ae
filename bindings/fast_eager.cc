#include "fast_eager.h"

#include <structmember.h>

#include <cstddef>

namespace py = pybind11;

namespace refimpl {
namespace bindings {

namespace {

// An EagerFunction's fields. Every Python reference is a py::object
// constructed in tp_new (InitFields) and destroyed in tp_dealloc
// (DestroyFields); tp_clear empties them.
struct EagerFunctionObject {
  PyObject_HEAD vectorcallfunc vectorcall;
  py::object fallback;    // the Python wrapper (fast_functions.fast_eager): every other call
  py::object cache;       // its dict: static key -> (FastJitted, specialized) or a marker
  py::object array_type;  // the PJRT array type: the dynamic arguments
  py::object marker;      // fast_functions._ARRAY: a dynamic argument's place in a key
  py::object make_jit;    // the factory registered for array_type: the key's last item
  py::object stack;       // tracing._stack (a threading.local): eager only while .traces is empty
  py::object builders;    // tracing._builders: every thread's active traces (empty: none anywhere)
  py::object s_traces;    // interned "traces"
  py::object dict;        // the instance __dict__ (tp_dictoffset)
  PyObject* weakrefs;     // the weak-reference list (tp_weaklistoffset): not a reference
  uint64_t hits;
  uint64_t fallbacks;
};
static_assert(sizeof(py::object) == sizeof(PyObject*),
              "CPython reads and writes the __dict__ slot as a PyObject*");

// At most this many dynamic arguments on the hit path (more: the Python wrapper).
constexpr Py_ssize_t kMaxDynamic = 8;

// The key part of a static argument as fast_functions._static_key makes it
// for the common scalar kinds: (type, value) for None, bool, int and str,
// (type, bytes of the value) for float and complex -- the bits, as
// struct.pack("d") / struct.pack("dd", real, imag) make them, because repr
// merges NaNs of either sign. Null (no error set) for any other kind: the
// Python wrapper keys (or refuses) it.
PyObject* ScalarKeyPart(PyObject* value) {
  PyTypeObject* kind = Py_TYPE(value);
  if (value == Py_None || kind == &PyBool_Type || kind == &PyLong_Type || kind == &PyUnicode_Type) {
    return PyTuple_Pack(2, reinterpret_cast<PyObject*>(kind), value);
  }
  PyObject* bits = nullptr;
  if (kind == &PyFloat_Type) {
    const double number = PyFloat_AS_DOUBLE(value);
    bits = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(&number), sizeof(number));
  } else if (kind == &PyComplex_Type) {
    const double parts[2] = {PyComplex_RealAsDouble(value), PyComplex_ImagAsDouble(value)};
    bits = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(parts), sizeof(parts));
  } else {
    return nullptr;
  }
  if (bits == nullptr) return nullptr;
  PyObject* part = PyTuple_Pack(2, reinterpret_cast<PyObject*>(kind), bits);
  Py_DECREF(bits);
  return part;
}

// True when some trace is active on this thread (the wrapper calls the
// plain function then), or when that cannot be read (the wrapper decides).
// The process-wide list is read first: empty, no thread traces, and the
// per-thread stack (a threading.local lookup) need not be consulted.
bool Tracing(EagerFunctionObject* fn) {
  PyObject* builders = fn->builders.ptr();
  if (PyList_CheckExact(builders) && PyList_GET_SIZE(builders) == 0) return false;
  PyObject* traces = PyObject_GetAttr(fn->stack.ptr(), fn->s_traces.ptr());
  if (traces == nullptr) {
    PyErr_Clear();
    return true;
  }
  bool busy = PyList_CheckExact(traces) ? PyList_GET_SIZE(traces) != 0 : true;
  Py_DECREF(traces);
  return busy;
}

// The wrapper's key for these arguments (same tuple, same order), with the
// dynamic arguments in `dynamic`; null without an error set when the
// arguments are not all PJRT arrays and keyable scalars.
PyObject* BuildKey(EagerFunctionObject* fn, PyObject* const* args, Py_ssize_t nargs,
                   PyObject* kwnames, PyObject** dynamic, Py_ssize_t* num_dynamic) {
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  PyObject* key = PyTuple_New(nargs + nkw + 1);
  if (key == nullptr) return nullptr;
  PyObject* array_type = fn->array_type.ptr();
  Py_ssize_t count = 0;
  for (Py_ssize_t i = 0; i < nargs + nkw; ++i) {
    PyObject* value = args[i];
    PyObject* part;
    if (reinterpret_cast<PyObject*>(Py_TYPE(value)) == array_type) {
      if (count == kMaxDynamic) {
        Py_DECREF(key);
        return nullptr;
      }
      dynamic[count++] = value;
      part = fn->marker.inc_ref().ptr();
    } else {
      part = ScalarKeyPart(value);
      if (part == nullptr) {
        Py_DECREF(key);
        return nullptr;
      }
    }
    if (i >= nargs) {  // a keyword argument: (name, part)
      PyObject* pair = PyTuple_Pack(2, PyTuple_GET_ITEM(kwnames, i - nargs), part);
      Py_DECREF(part);
      if (pair == nullptr) {
        Py_DECREF(key);
        return nullptr;
      }
      part = pair;
    }
    PyTuple_SET_ITEM(key, i, part);
  }
  if (count == 0) {
    Py_DECREF(key);
    return nullptr;
  }
  PyTuple_SET_ITEM(key, nargs + nkw, fn->make_jit.inc_ref().ptr());
  *num_dynamic = count;
  return key;
}

PyObject* Fallback(EagerFunctionObject* fn, PyObject* const* args, size_t nargsf,
                   PyObject* kwnames) {
  ++fn->fallbacks;
  return PyObject_Vectorcall(fn->fallback.ptr(), args, nargsf, kwnames);
}

// The hit path of fast_functions.fast_eager's wrapper, without a Python
// frame: key the arguments, find the cached jit, call it on the PJRT
// arrays. Anything else (a trace, other argument kinds, a key not cached
// yet or marked for the normal path, an error) is the wrapper's, which
// repeats the lookup and decides; a failed jit call changed nothing, so
// the wrapper may run it again.
PyObject* EagerCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* fn = reinterpret_cast<EagerFunctionObject*>(self);
  if (!fn->fallback) {
    PyErr_SetString(PyExc_RuntimeError, "EagerFunction: cleared by the garbage collector");
    return nullptr;
  }
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if (!fn->cache || Tracing(fn)) return Fallback(fn, args, nargsf, kwnames);
  PyObject* dynamic[kMaxDynamic];
  Py_ssize_t num_dynamic = 0;
  PyObject* key = BuildKey(fn, args, nargs, kwnames, dynamic, &num_dynamic);
  if (key == nullptr) {
    if (PyErr_Occurred()) return nullptr;
    return Fallback(fn, args, nargsf, kwnames);
  }
  PyObject* entry = PyDict_GetItemWithError(fn->cache.ptr(), key);  // borrowed
  Py_DECREF(key);
  if (entry == nullptr) {
    if (PyErr_Occurred()) return nullptr;
    return Fallback(fn, args, nargsf, kwnames);
  }
  if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2) {
    return Fallback(fn, args, nargsf, kwnames);  // the normal-path marker
  }
  PyObject* jitted = PyTuple_GET_ITEM(entry, 0);
  Py_INCREF(jitted);  // the cache may change during the call
  PyObject* result = PyObject_Vectorcall(jitted, dynamic, num_dynamic, nullptr);
  Py_DECREF(jitted);
  if (result != nullptr) {
    ++fn->hits;
    return result;
  }
  if (!PyErr_ExceptionMatches(PyExc_Exception)) return nullptr;  // KeyboardInterrupt, ...
  PyErr_Clear();
  return Fallback(fn, args, nargsf, kwnames);
}

void InitFields(EagerFunctionObject* fn) {
  new (&fn->fallback) py::object();
  new (&fn->cache) py::object();
  new (&fn->array_type) py::object();
  new (&fn->marker) py::object();
  new (&fn->make_jit) py::object();
  new (&fn->stack) py::object();
  new (&fn->builders) py::object();
  new (&fn->s_traces) py::object();
  new (&fn->dict) py::object();
}

int EagerTraverse(PyObject* self, visitproc visit, void* arg) {
  auto* fn = reinterpret_cast<EagerFunctionObject*>(self);
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(fn->fallback.ptr());
  Py_VISIT(fn->cache.ptr());
  Py_VISIT(fn->array_type.ptr());
  Py_VISIT(fn->marker.ptr());
  Py_VISIT(fn->make_jit.ptr());
  Py_VISIT(fn->stack.ptr());
  Py_VISIT(fn->builders.ptr());
  Py_VISIT(fn->dict.ptr());
  return 0;
}

int EagerClear(PyObject* self) {
  auto* fn = reinterpret_cast<EagerFunctionObject*>(self);
  fn->fallback = py::object();
  fn->cache = py::object();
  fn->array_type = py::object();
  fn->marker = py::object();
  fn->make_jit = py::object();
  fn->stack = py::object();
  fn->builders = py::object();
  fn->dict = py::object();
  return 0;
}

void EagerDealloc(PyObject* self) {
  auto* fn = reinterpret_cast<EagerFunctionObject*>(self);
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  if (fn->weakrefs != nullptr) PyObject_ClearWeakRefs(self);
  EagerClear(self);
  fn->s_traces.~object();
  fn->dict.~object();
  fn->builders.~object();
  fn->stack.~object();
  fn->make_jit.~object();
  fn->marker.~object();
  fn->array_type.~object();
  fn->cache.~object();
  fn->fallback.~object();
  type->tp_free(self);
  Py_DECREF(type);
}

PyObject* EagerNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* names[] = {"fallback", "cache", "array_type", "marker",
                                "make_jit", "stack", "builders",   nullptr};
  PyObject *fallback, *cache, *array_type, *marker, *make_jit, *stack, *builders;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!O!OOOO!:EagerFunction",
                                   const_cast<char**>(names), &fallback, &PyDict_Type, &cache,
                                   &PyType_Type, &array_type, &marker, &make_jit, &stack,
                                   &PyList_Type, &builders)) {
    return nullptr;
  }
  if (!PyCallable_Check(fallback)) {
    PyErr_SetString(PyExc_TypeError, "EagerFunction: fallback must be callable");
    return nullptr;
  }
  PyObject* traces = PyUnicode_InternFromString("traces");
  if (traces == nullptr) return nullptr;
  auto* fn = reinterpret_cast<EagerFunctionObject*>(type->tp_alloc(type, 0));
  if (fn == nullptr) {
    Py_DECREF(traces);
    return nullptr;
  }
  InitFields(fn);
  fn->vectorcall = EagerCall;
  fn->weakrefs = nullptr;
  fn->hits = 0;
  fn->fallbacks = 0;
  fn->fallback = py::reinterpret_borrow<py::object>(fallback);
  fn->cache = py::reinterpret_borrow<py::object>(cache);
  fn->array_type = py::reinterpret_borrow<py::object>(array_type);
  fn->marker = py::reinterpret_borrow<py::object>(marker);
  fn->make_jit = py::reinterpret_borrow<py::object>(make_jit);
  fn->stack = py::reinterpret_borrow<py::object>(stack);
  fn->builders = py::reinterpret_borrow<py::object>(builders);
  fn->s_traces = py::reinterpret_steal<py::object>(traces);
  return reinterpret_cast<PyObject*>(fn);
}

PyObject* EagerRepr(PyObject* self) {
  auto* fn = reinterpret_cast<EagerFunctionObject*>(self);
  if (!fn->fallback) return PyUnicode_FromString("<EagerFunction (cleared)>");
  return PyUnicode_FromFormat("<EagerFunction of %R>", fn->fallback.ptr());
}

PyObject* EagerStats(PyObject* self, PyObject*) {
  auto* fn = reinterpret_cast<EagerFunctionObject*>(self);
  return Py_BuildValue("{sKsK}", "hits", static_cast<unsigned long long>(fn->hits), "fallbacks",
                       static_cast<unsigned long long>(fn->fallbacks));
}

PyObject* GetFallback(PyObject* self, void*) {
  const py::object& fallback = reinterpret_cast<EagerFunctionObject*>(self)->fallback;
  if (!fallback) Py_RETURN_NONE;
  return fallback.inc_ref().ptr();
}

PyMethodDef kEagerMethods[] = {
    {"_eager_stats", EagerStats, METH_NOARGS,
     "{'hits': calls served in C++, 'fallbacks': calls handed to the Python wrapper}."},
    {nullptr, nullptr, 0, nullptr},
};

PyMemberDef kEagerMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(EagerFunctionObject, vectorcall), READONLY,
     nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(EagerFunctionObject, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(EagerFunctionObject, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyGetSetDef kEagerGetSet[] = {
    {"_fallback", GetFallback, nullptr, "The Python wrapper that handles every other call.",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

}  // namespace

void RegisterFastEager(py::module_& m) {
  static PyType_Slot slots[] = {
      {Py_tp_doc,
       const_cast<char*>("An eager refimpl.numpy / refimpl.lax function on PJRT arrays: the hit "
                         "path of refimpl.backends.fast_functions.fast_eager in C++ (see "
                         "bindings/fast_eager.h).")},
      {Py_tp_new, reinterpret_cast<void*>(EagerNew)},
      {Py_tp_dealloc, reinterpret_cast<void*>(EagerDealloc)},
      {Py_tp_traverse, reinterpret_cast<void*>(EagerTraverse)},
      {Py_tp_clear, reinterpret_cast<void*>(EagerClear)},
      {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
      {Py_tp_repr, reinterpret_cast<void*>(EagerRepr)},
      {Py_tp_methods, kEagerMethods},
      {Py_tp_members, kEagerMembers},
      {Py_tp_getset, kEagerGetSet},
      {0, nullptr},
  };
  static PyType_Spec spec = {
      "refimpl._pjrt.EagerFunction",
      sizeof(EagerFunctionObject),
      0,
      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
      slots,
  };
  PyObject* type = PyType_FromSpec(&spec);
  if (type == nullptr) throw py::error_already_set();
  m.add_object("EagerFunction", py::handle(type));
  Py_DECREF(type);  // the module holds it
}

}  // namespace bindings
}  // namespace refimpl
