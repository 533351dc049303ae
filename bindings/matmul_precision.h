// The default matmul precision in effect, as the fast paths' signatures see it.
//
// jax.default_matmul_precision and the jax_default_matmul_precision flag are
// part of every jit signature (a product traced under one records it), as
// JAX's. The C++ fast paths cannot call Python on a hit, so Python gives each
// distinct setting a small key (refimpl.backends.pjrt.fast_path) and tells
// this module: the flag's key (every thread's default) and, per thread, the
// key of that thread's innermost default_matmul_precision block (Python's
// threads are OS threads, so a C++ thread_local is Python's thread-local).
// A signature carries the key in effect, so a setting seen before finds its
// entry again instead of tracing anew.
#ifndef REFIMPL_BINDINGS_MATMUL_PRECISION_H_
#define REFIMPL_BINDINGS_MATMUL_PRECISION_H_

#include <pybind11/pybind11.h>

#include <cstdint>

namespace refimpl {
namespace bindings {

// The key of the setting in effect in this thread: its block's, else the flag's.
uint64_t MatmulPrecisionKey();

// refimpl._pjrt.set_matmul_precision_keys(flag_key, thread_key): thread_key
// -1 means this thread is in no block.
void RegisterMatmulPrecision(pybind11::module_& m);

}  // namespace bindings
}  // namespace refimpl

#endif  // REFIMPL_BINDINGS_MATMUL_PRECISION_H_
