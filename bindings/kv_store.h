// refimpl._pjrt glue for the key-value store of a multi-process client:
// a Python object (refimpl.distributed's store client) behind the native
// KeyValueStore interface that PJRT_Client_Create's callbacks call.
#ifndef REFIMPL_BINDINGS_KV_STORE_H_
#define REFIMPL_BINDINGS_KV_STORE_H_

#include <pybind11/pybind11.h>

#include <memory>

#include "../native/client.h"

namespace refimpl {
namespace bindings {

// `store` must have get(key: bytes, timeout_ms: int) -> bytes and
// put(key: bytes, value: bytes). Null for None.
std::shared_ptr<KeyValueStore> KeyValueStoreFromPython(const pybind11::object& store);

// Registers _kv_callbacks_probe (calls the C callbacks as a plugin would).
void RegisterKeyValueStore(pybind11::module_& m);

}  // namespace bindings
}  // namespace refimpl

#endif  // REFIMPL_BINDINGS_KV_STORE_H_
