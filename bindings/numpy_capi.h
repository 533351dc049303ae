// The NumPy C API for the bindings' hot paths (array checks, dtype numbers,
// zero-copy views, conversions without going through Python).
//
// Every translation unit includes this header; exactly one (py_errors.cc)
// defines REFIMPL_NUMPY_IMPORT before it, and InitNumpyCApi() runs when the
// module is imported.
#ifndef REFIMPL_BINDINGS_NUMPY_CAPI_H_
#define REFIMPL_BINDINGS_NUMPY_CAPI_H_

#include <Python.h>

#define PY_ARRAY_UNIQUE_SYMBOL REFIMPL_PJRT_NUMPY_API
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#ifndef REFIMPL_NUMPY_IMPORT
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>

namespace refimpl {
namespace bindings {

// Imports numpy's C API table; false (with a Python error set) on failure.
bool InitNumpyCApi();

}  // namespace bindings
}  // namespace refimpl

#endif  // REFIMPL_BINDINGS_NUMPY_CAPI_H_
