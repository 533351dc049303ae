// Host callbacks inside compiled programs: the XLA FFI handler behind the
// `refimpl_host_callback` custom call, and the registry of the Python
// callables it calls (refimpl/backends/pjrt/host_callbacks.py is the Python
// half).
#ifndef REFIMPL_BINDINGS_HOST_CALLBACK_H_
#define REFIMPL_BINDINGS_HOST_CALLBACK_H_

#include <pybind11/pybind11.h>

namespace refimpl {
namespace bindings {

// Adds register_host_callback_handler, host_callback_add,
// host_callback_remove and host_callback_count to the module.
void InitHostCallbacks(pybind11::module_& m);

// Whether this thread is inside a host callback of a replicated program (a
// pmap's): another pmap launched there would wait forever for the plugin's
// threads, all busy with the outer program's replicas.
bool InReplicatedHostCallback();
// Whether this thread is inside any host callback (the Python path places a
// jit called there away from the devices running callback programs).
bool InHostCallback();

}  // namespace bindings
}  // namespace refimpl

#endif  // REFIMPL_BINDINGS_HOST_CALLBACK_H_
