#include "kv_store.h"

#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "../native/pjrt_args.h"

namespace py = pybind11;

namespace refimpl {
namespace bindings {
namespace {

// The PJRT error code a plugin should see for the store's Python exception:
// a timeout is DEADLINE_EXCEEDED (what XLA's own store reports), a lost
// coordinator UNAVAILABLE, a missing key NOT_FOUND.
PJRT_Error_Code CodeOf(const py::error_already_set& error) {
  if (error.matches(PyExc_TimeoutError)) return PJRT_Error_Code_DEADLINE_EXCEEDED;
  if (error.matches(PyExc_ConnectionError)) return PJRT_Error_Code_UNAVAILABLE;
  if (error.matches(PyExc_KeyError)) return PJRT_Error_Code_NOT_FOUND;
  if (error.matches(PyExc_ValueError)) return PJRT_Error_Code_INVALID_ARGUMENT;
  return PJRT_Error_Code_INTERNAL;
}

class PythonKeyValueStore : public KeyValueStore {
 public:
  explicit PythonKeyValueStore(py::object store) : store_(std::move(store)) {}

  // The plugin may destroy its client (and so this) on any thread, with or
  // without the GIL: take it to drop the Python reference.
  ~PythonKeyValueStore() override {
    if (!Py_IsInitialized()) {
      store_.release();  // interpreter gone: leak rather than touch it
      return;
    }
    py::gil_scoped_acquire gil;
    store_ = py::object();
  }

  // Called on a plugin thread that holds no lock of ours; the GIL is taken
  // only for the Python call and the copy of its result.
  std::string Get(const std::string& key, int timeout_ms) override {
    py::gil_scoped_acquire gil;
    try {
      py::object value = store_.attr("get")(py::bytes(key), timeout_ms);
      return value.cast<std::string>();
    } catch (py::error_already_set& error) {
      throw KeyValueError(CodeOf(error), error.what());
    }
  }

  void Put(const std::string& key, const std::string& value) override {
    py::gil_scoped_acquire gil;
    try {
      store_.attr("put")(py::bytes(key), py::bytes(value));
    } catch (py::error_already_set& error) {
      throw KeyValueError(CodeOf(error), error.what());
    }
  }

 private:
  py::object store_;
};

// What the probe's stand-in callback_error saw: a plugin would build a
// PJRT_Error from it; the probe returns a non-null dummy instead.
thread_local std::optional<std::pair<int, std::string>> probe_error;

PJRT_Error* ProbeCallbackError(PJRT_Error_Code code, const char* message, size_t size) {
  probe_error.emplace(static_cast<int>(code), std::string(message, size));
  static char dummy;
  return reinterpret_cast<PJRT_Error*>(&dummy);
}

// Calls the native get/put callback exactly as a plugin does (struct sizes,
// user_arg, the value deleter) and returns (error_code, result): code 0 and
// the value (get) or None (put); else the code and message the callback
// passed to callback_error. The CPU plugin never calls the callbacks, so this
// is how the C path is tested.
py::tuple ProbeCallbacks(const py::object& store, const std::string& op, const py::bytes& key,
                         const py::bytes& value, int timeout_ms) {
  std::shared_ptr<KeyValueStore> native = KeyValueStoreFromPython(store);
  std::string key_text = key;
  std::string value_text = value;
  probe_error.reset();
  if (op == "get") {
    auto args = MakeArgs<PJRT_KeyValueGetCallback_Args>();
    args.key = key_text.data();
    args.key_size = key_text.size();
    args.timeout_in_ms = timeout_ms;
    args.callback_error = &ProbeCallbackError;
    args.user_arg = native.get();
    PJRT_Error* error = nullptr;
    {
      py::gil_scoped_release release;  // as on a plugin thread
      error = KeyValueGetCallback(&args);
    }
    if (error != nullptr) return py::make_tuple(probe_error->first, probe_error->second);
    py::bytes result(args.value, args.value_size);
    args.value_deleter_callback(args.value);
    return py::make_tuple(0, result);
  }
  if (op == "put") {
    auto args = MakeArgs<PJRT_KeyValuePutCallback_Args>();
    args.key = key_text.data();
    args.key_size = key_text.size();
    args.value = value_text.data();
    args.value_size = value_text.size();
    args.callback_error = &ProbeCallbackError;
    args.user_arg = native.get();
    PJRT_Error* error = nullptr;
    {
      py::gil_scoped_release release;
      error = KeyValuePutCallback(&args);
    }
    if (error != nullptr) return py::make_tuple(probe_error->first, probe_error->second);
    return py::make_tuple(0, py::none());
  }
  throw py::value_error("op must be 'get' or 'put'");
}

}  // namespace

std::shared_ptr<KeyValueStore> KeyValueStoreFromPython(const py::object& store) {
  if (store.is_none()) return nullptr;
  return std::make_shared<PythonKeyValueStore>(store);
}

void RegisterKeyValueStore(py::module_& m) {
  m.def("_kv_callbacks_probe", &ProbeCallbacks, py::arg("store"), py::arg("op"), py::arg("key"),
        py::arg("value") = py::bytes(), py::arg("timeout_ms") = 1000,
        "Test hook: calls the PJRT kv_get/kv_put callback over `store` as a plugin "
        "would; returns (pjrt_error_code, value or message).");
}

}  // namespace bindings
}  // namespace refimpl
