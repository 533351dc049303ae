// refimpl._pjrt.EagerFunction: an eager refimpl.numpy / refimpl.lax function
// whose hit path is C++.
//
// refimpl.backends.fast_functions.fast_eager wraps each public function in
// Python: a call outside any trace on PJRT arrays becomes one cached
// jit(backend="pjrt") per static key (docs/semantics.md 16.1). Once the PJRT
// backend is loaded, the exported names are replaced by an EagerFunction
// around that wrapper. Its __call__ builds the same key in C++ (PJRT arrays
// and None/bool/int/str/float/complex arguments, positional or keyword),
// looks it up in the wrapper's own cache and calls the cached FastJitted
// with the arrays: no Python frame on a hit. Every other call (a trace in
// progress, other argument kinds, a key not cached yet or taking the normal
// path, a failed call) goes to the Python wrapper, which decides as before.
#ifndef REFIMPL_BINDINGS_FAST_EAGER_H_
#define REFIMPL_BINDINGS_FAST_EAGER_H_

#include <pybind11/pybind11.h>

namespace refimpl {
namespace bindings {

void RegisterFastEager(pybind11::module_& m);

}  // namespace bindings
}  // namespace refimpl

#endif  // REFIMPL_BINDINGS_FAST_EAGER_H_
