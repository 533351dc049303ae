// Python exceptions of the module, and C++ -> Python error conversion for
// code that runs outside pybind11's dispatcher (the raw C API types).
#ifndef REFIMPL_BINDINGS_PY_ERRORS_H_
#define REFIMPL_BINDINGS_PY_ERRORS_H_

#include <Python.h>

namespace refimpl {
namespace bindings {

// refimpl._pjrt.PjrtError and PluginLoadError (both RuntimeError subclasses);
// created by CreateExceptionTypes() at import.
PyObject* PjrtErrorType();
PyObject* PluginLoadErrorType();
bool CreateExceptionTypes();

// Call inside a `catch (...)` block: sets the Python error matching the
// exception being handled (PjrtError with its `code`, pybind11 errors as
// themselves, std::invalid_argument -> ValueError, other std::exception ->
// RuntimeError).
void SetPythonErrorFromCurrentException();

}  // namespace bindings
}  // namespace refimpl

#endif  // REFIMPL_BINDINGS_PY_ERRORS_H_
