// refimpl._pjrt.FastSharded: the C++ fast path of jit with shardings.
//
// `jit(f, in_shardings=..., out_shardings=...)` on PJRT is a FastSharded in
// front of refimpl.transforms.sharded.ShardedJit (the fallback: every call
// the C++ side does not take, with the reference checks and errors). Once
// a call has left its plan (refimpl/backends/pjrt/spmd.py `_plan`, one SPMD
// executable over the mesh's devices), the plan's PlanSpec is installed
// here as an entry. A later call hits when:
//
//   * it has no keyword arguments, the backend is pjrt (for backend=None,
//     config.backend), no trace is in progress, jit is not disabled and
//     it is not inside a host callback;
//   * the positional arguments are MeshArrays (exactly), or tuples and
//     lists of them (other pytrees go to the fallback), with the entry's
//     structure, and each MeshArray's layout key (MeshArray.layout_key():
//     one interned object per (sharding, aval)) is the entry's, by
//     identity: the signature is the structure, the x64 flag and these keys;
//   * every block is a live single-device PjrtArray on the device the
//     entry expects.
//
// The hit then runs with no Python code: the blocks' buffers are pinned
// (launch_pins.h) and passed per device to native/launch.h's
// ExecuteReplicated, the launch pmap uses (ONE execute over the devices,
// serialized with other launches of programs with collectives), and each
// output becomes a MeshArray (its __slots__ written at their offsets) of
// per-device PjrtArrays, or device 0's PjrtArray for an output whose
// sharding was left unspecified (a single output, or a flat tuple or list
// of them, is built in C++; a nested output tree by its PyTreeDef's
// unflatten). A plan of a program whose devices need nothing from each
// other (PlanSpec.local_executables: one single-device executable of the
// block program per device) runs those instead, one after another on this
// thread (native/launch.h ExecuteLocal), never with donation. Donated
// arguments are donated per block, as the Python plan does: a call where
// one storage is passed twice with a donation goes to the fallback (jit's
// ValueError); each donated block is claimed for the launch (passed
// non-donatable when another launch reads it) and its array is deleted as
// donated to "jit(f)" once the execute ran. Anything else goes to the
// fallback, unchanged.
#ifndef REFIMPL_BINDINGS_FAST_SHARDED_H_
#define REFIMPL_BINDINGS_FAST_SHARDED_H_

#include <pybind11/pybind11.h>

namespace refimpl {
namespace bindings {

void RegisterFastSharded(pybind11::module_& m);

}  // namespace bindings
}  // namespace refimpl

#endif  // REFIMPL_BINDINGS_FAST_SHARDED_H_
