// refimpl._pjrt.FastJitted: what `jit(f, backend="pjrt")` returns.
//
// Its __call__ is C++ from argument inspection to PJRT execute:
//
//   args, kwargs --flatten + signature (C++)--> cache lookup (C++)
//       hit  --> inputs to buffers, execute, outputs to PjrtArrays,
//                donation, unflatten (C++; no Python code runs)
//       miss --> refimpl.backends.pjrt.fast_path.on_miss (Python, once per signature):
//                trace/lower/compile through refimpl's own Jitted, whose
//                signature cache decides (and counts) every trace; the
//                entry comes back and is inserted here
//       anything the fast path does not handle (a trace in progress,
//       unknown leaf types, deleted arrays, errors to report) --> the
//                Python Jitted itself, which produces the reference
//                behaviour and error messages.
//
// The C++ signature is never coarser than the Python one: two calls with
// equal C++ signatures have equal Python signatures (the words encode the
// tree, the per-leaf types and flags; statics and node data compare with
// the same Python equality). It may be finer (it also tells NumPy from PJRT
// inputs, and devices), which only costs a trip to on_miss, where the
// Python cache hits without tracing again. Hence trace counts equal the
// reference backend's by construction.
#ifndef REFIMPL_BINDINGS_FAST_JIT_H_
#define REFIMPL_BINDINGS_FAST_JIT_H_

#include <pybind11/pybind11.h>

namespace refimpl {
namespace bindings {

void RegisterFastJit(pybind11::module_& m);

}  // namespace bindings
}  // namespace refimpl

#endif  // REFIMPL_BINDINGS_FAST_JIT_H_
