#define REFIMPL_NUMPY_IMPORT
#include "numpy_capi.h"

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "../native/errors.h"
#include "py_errors.h"

namespace py = pybind11;

namespace refimpl {
namespace bindings {

namespace {
// Created once at import and never freed.
PyObject* g_pjrt_error = nullptr;
PyObject* g_plugin_load_error = nullptr;
}  // namespace

bool InitNumpyCApi() {
  if (PyArray_API != nullptr) return true;
  if (_import_array() < 0) return false;
  return true;
}

PyObject* PjrtErrorType() { return g_pjrt_error; }
PyObject* PluginLoadErrorType() { return g_plugin_load_error; }

bool CreateExceptionTypes() {
  if (g_pjrt_error != nullptr) return true;
  PyObject* attrs = PyDict_New();
  if (attrs == nullptr || PyDict_SetItemString(attrs, "code", Py_None) < 0) {
    Py_XDECREF(attrs);
    return false;
  }
  g_pjrt_error = PyErr_NewExceptionWithDoc(
      "refimpl._pjrt.PjrtError",
      "An error reported by a PJRT plugin. `code` is the PJRT_Error_Code "
      "(absl status code: 3 INVALID_ARGUMENT, 9 FAILED_PRECONDITION, ...).",
      PyExc_RuntimeError, attrs);
  Py_DECREF(attrs);
  if (g_pjrt_error == nullptr) return false;
  g_plugin_load_error = PyErr_NewExceptionWithDoc(
      "refimpl._pjrt.PluginLoadError",
      "A PJRT plugin could not be loaded (missing file, not a plugin, or an "
      "unsupported C API version).",
      PyExc_RuntimeError, nullptr);
  return g_plugin_load_error != nullptr;
}

namespace {

void SetPjrtError(const PjrtError& error) {
  PyObject* instance = PyObject_CallFunction(g_pjrt_error, "s", error.what());
  if (instance == nullptr) return;  // that error is set instead
  PyObject* code = PyLong_FromLong(error.code());
  if (code == nullptr || PyObject_SetAttrString(instance, "code", code) < 0) {
    Py_XDECREF(code);
    Py_DECREF(instance);
    return;
  }
  Py_DECREF(code);
  PyErr_SetObject(g_pjrt_error, instance);
  Py_DECREF(instance);
}

}  // namespace

void SetPythonErrorFromCurrentException() {
  try {
    throw;
  } catch (const PjrtError& error) {
    SetPjrtError(error);
  } catch (const PluginLoadError& error) {
    PyErr_SetString(g_plugin_load_error, error.what());
  } catch (py::error_already_set& error) {
    error.restore();
  } catch (const py::builtin_exception& error) {
    error.set_error();
  } catch (const std::invalid_argument& error) {
    PyErr_SetString(PyExc_ValueError, error.what());
  } catch (const std::out_of_range& error) {
    PyErr_SetString(PyExc_IndexError, error.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_RuntimeError, error.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
  }
}

}  // namespace bindings
}  // namespace refimpl
