#include "numpy_capi.h"  // first: the NumPy C API symbols

#include "host_callback.h"

#include <Python.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "../native/errors.h"
#include "../native/ffi_abi.h"
#include "../native/plugin.h"
#include "numpy_interop.h"

namespace py = pybind11;

namespace refimpl {
namespace bindings {
namespace {

constexpr char kTargetName[] = "refimpl_host_callback";
// XLA's canonical name of the CPU platform (a handler registered for "cpu"
// is filed under the same name).
constexpr char kPlatformName[] = "Host";
constexpr char kIdAttribute[] = "callback_id";

// The FFI version whose call-frame layout ffi_abi.h declares: everything the
// handler reads or writes exists unchanged since XLA FFI API 0.1.
constexpr int kFfiMajor = 0;
constexpr int kFfiMinor = 1;

struct Entry {
  // A weak reference: the strong one belongs to the Python object that owns
  // the executables (host_callbacks.CallbackSet), so every reference to the
  // callable is visible to Python's garbage collector.
  PyObject* weak_callable;
  std::string name;  // "pure_callback", "debug.print", ... for messages
  // Report a failure after the run instead of failing the computation: in a
  // program with collectives, one replica stopping early leaves the others
  // waiting at a rendezvous that XLA ends by aborting the process. The
  // failed call's results are zeros; the caller takes the message
  // (host_callback_take_errors) once the computation finished, and raises.
  bool defer_errors;
};

// Deferred failures: callback id -> the first message. Guarded by the GIL.
std::unordered_map<int64_t, std::string>& Deferred() {
  static auto* deferred = new std::unordered_map<int64_t, std::string>();
  return *deferred;
}

// Callback id -> entry. Read and written only with the GIL held (the handler
// takes it before the lookup), so the GIL is its lock. Ids are never reused
// within a process: a stale id finds nothing instead of another callable.
std::unordered_map<int64_t, Entry>& Registry() {
  static auto* registry = new std::unordered_map<int64_t, Entry>();
  return *registry;
}
int64_t g_next_id = 1;

// Plugins (api tables) the handler is registered with. Guarded by the GIL.
std::set<const PJRT_Api*>& RegisteredApis() {
  static auto* apis = new std::set<const PJRT_Api*>();
  return *apis;
}

XLA_FFI_Error* MakeError(const XLA_FFI_Api* api, XLA_FFI_Error_Code code,
                         const std::string& message) {
  XLA_FFI_Error_Create_Args args;
  std::memset(&args, 0, sizeof(args));
  args.struct_size = offsetof(XLA_FFI_Error_Create_Args, errc) + sizeof(args.errc);
  args.message = message.c_str();  // copied by XLA
  args.errc = code;
  return api->XLA_FFI_Error_Create(&args);
}

XLA_FFI_Error* ReportMetadata(XLA_FFI_CallFrame* frame) {
  auto* extension = reinterpret_cast<XLA_FFI_Metadata_Extension*>(frame->extension_start);
  XLA_FFI_Metadata* metadata = extension->metadata;
  const std::size_t needed = offsetof(XLA_FFI_Metadata, traits) + sizeof(metadata->traits);
  if (metadata == nullptr || metadata->struct_size < needed) {
    return MakeError(frame->api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                     "refimpl_host_callback: XLA_FFI_Metadata is smaller than expected");
  }
  XLA_FFI_Api_Version version;
  std::memset(&version, 0, sizeof(version));
  version.struct_size = offsetof(XLA_FFI_Api_Version, minor_version) + sizeof(int);
  version.major_version = kFfiMajor;
  version.minor_version = kFfiMinor;
  metadata->api_version = version;
  // Not command-buffer compatible (a host call is not replayable); no state.
  metadata->traits = 0;
  return nullptr;
}

bool FindCallbackId(const XLA_FFI_Attrs& attrs, int64_t* id) {
  for (int64_t i = 0; i < attrs.size; ++i) {
    const XLA_FFI_ByteSpan* name = attrs.names[i];
    if (name->len != sizeof(kIdAttribute) - 1 ||
        std::memcmp(name->ptr, kIdAttribute, name->len) != 0) {
      continue;
    }
    if (attrs.types[i] != XLA_FFI_AttrType_SCALAR) return false;
    const auto* scalar = static_cast<const XLA_FFI_Scalar*>(attrs.attrs[i]);
    if (scalar->dtype != XLA_FFI_DataType_S64) return false;
    std::memcpy(id, scalar->value, sizeof(int64_t));
    return true;
  }
  return false;
}

// PJRT_Buffer_Type of an XLA data type (the two enums number types differently).
PJRT_Buffer_Type ToPjrtType(XLA_FFI_DataType type) {
  switch (type) {
    case XLA_FFI_DataType_PRED:
      return PJRT_Buffer_Type_PRED;
    case XLA_FFI_DataType_S8:
      return PJRT_Buffer_Type_S8;
    case XLA_FFI_DataType_S16:
      return PJRT_Buffer_Type_S16;
    case XLA_FFI_DataType_S32:
      return PJRT_Buffer_Type_S32;
    case XLA_FFI_DataType_S64:
      return PJRT_Buffer_Type_S64;
    case XLA_FFI_DataType_U8:
      return PJRT_Buffer_Type_U8;
    case XLA_FFI_DataType_U16:
      return PJRT_Buffer_Type_U16;
    case XLA_FFI_DataType_U32:
      return PJRT_Buffer_Type_U32;
    case XLA_FFI_DataType_U64:
      return PJRT_Buffer_Type_U64;
    case XLA_FFI_DataType_F16:
      return PJRT_Buffer_Type_F16;
    case XLA_FFI_DataType_F32:
      return PJRT_Buffer_Type_F32;
    case XLA_FFI_DataType_F64:
      return PJRT_Buffer_Type_F64;
    case XLA_FFI_DataType_BF16:
      return PJRT_Buffer_Type_BF16;
    case XLA_FFI_DataType_C64:
      return PJRT_Buffer_Type_C64;
    case XLA_FFI_DataType_C128:
      return PJRT_Buffer_Type_C128;
    default:
      return PJRT_Buffer_Type_INVALID;
  }
}

std::string ShapeText(const int64_t* dims, int64_t rank) {
  std::string text = "(";
  for (int64_t i = 0; i < rank; ++i) {
    if (i) text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + (rank == 1 ? ",)" : ")");
}

// An error the handler reports: the message is complete (names the callback kind).
struct CallbackFailure {
  std::string message;
};

// The execute stage, with the GIL held. Throws CallbackFailure, or a Python
// error (py::error_already_set) raised by the callable.
void RunWithGil(const XLA_FFI_CallFrame& frame, int64_t id) {
  auto found = Registry().find(id);
  if (found == Registry().end()) {
    throw CallbackFailure{"host callback " + std::to_string(id) +
                          " is no longer registered (its executable was released while the "
                          "computation ran)"};
  }
  const std::string name = found->second.name;
  py::object callable =
      py::reinterpret_borrow<py::object>(PyWeakref_GetObject(found->second.weak_callable));
  if (callable.is_none()) {
    throw CallbackFailure{name + ": host callback " + std::to_string(id) +
                          " was released (its executable was released while the computation ran)"};
  }

  py::tuple operands(frame.args.size);
  for (int64_t i = 0; i < frame.args.size; ++i) {
    if (frame.args.types[i] != XLA_FFI_ArgType_BUFFER) {
      throw CallbackFailure{name + ": operand " + std::to_string(i) + " is not a buffer"};
    }
    const auto* buffer = static_cast<const XLA_FFI_Buffer*>(frame.args.args[i]);
    const PJRT_Buffer_Type type = ToPjrtType(buffer->dtype);
    if (type == PJRT_Buffer_Type_INVALID) {
      throw CallbackFailure{name + ": operand " + std::to_string(i) +
                            " has an element type refimpl cannot pass to Python"};
    }
    std::vector<py::ssize_t> shape(buffer->dims, buffer->dims + buffer->rank);
    py::array array(DtypeFromElementType(type), shape);  // a copy: XLA reuses its buffers
    if (array.nbytes() > 0) {
      std::memcpy(array.mutable_data(), buffer->data, static_cast<std::size_t>(array.nbytes()));
    }
    operands[i] = std::move(array);
  }

  py::object returned = callable(*operands);
  py::list results;
  if (!returned.is_none()) results = py::list(returned);
  if (static_cast<int64_t>(results.size()) != frame.rets.size) {
    throw CallbackFailure{name + ": the callback returned " + std::to_string(results.size()) +
                          " arrays, the program expects " + std::to_string(frame.rets.size)};
  }
  for (int64_t i = 0; i < frame.rets.size; ++i) {
    if (frame.rets.types[i] != XLA_FFI_RetType_BUFFER) {
      throw CallbackFailure{name + ": result " + std::to_string(i) + " is not a buffer"};
    }
    auto* buffer = static_cast<XLA_FFI_Buffer*>(frame.rets.rets[i]);
    py::array array = py::array::ensure(results[i], py::array::c_style);
    if (!array) throw py::error_already_set();
    const std::string expected = ShapeText(buffer->dims, buffer->rank);
    bool same_shape = array.ndim() == buffer->rank;
    for (int64_t d = 0; same_shape && d < buffer->rank; ++d) {
      same_shape = array.shape(d) == buffer->dims[d];
    }
    if (!same_shape) {
      throw CallbackFailure{
          name + ": result " + std::to_string(i) + " of the callback has shape " +
          ShapeText(reinterpret_cast<const int64_t*>(array.shape()), array.ndim()) +
          ", the program expects " + expected};
    }
    const PJRT_Buffer_Type want = ToPjrtType(buffer->dtype);
    if (ElementTypeFromDtype(array.dtype()) != want) {
      throw CallbackFailure{name + ": result " + std::to_string(i) + " of the callback has dtype " +
                            py::str(array.dtype()).cast<std::string>() + ", the program expects " +
                            ElementTypeName(want)};
    }
    if (array.nbytes() > 0) {
      std::memcpy(buffer->data, array.data(), static_cast<std::size_t>(array.nbytes()));
    }
  }
}

// "ValueError: message (at file.py:12)": the exception and its innermost frame
// (the whole traceback would mostly show refimpl's and the caller's frames).
std::string DescribeError(const py::error_already_set& error) {
  try {
    std::string text = py::str(error.type().attr("__name__")).cast<std::string>();
    const std::string message = py::str(error.value()).cast<std::string>();
    if (!message.empty()) text += ": " + message;
    py::object tb = py::reinterpret_borrow<py::object>(error.trace());
    if (tb && !tb.is_none()) {
      while (!tb.attr("tb_next").is_none()) tb = tb.attr("tb_next");
      const std::string file =
          py::str(tb.attr("tb_frame").attr("f_code").attr("co_filename")).cast<std::string>();
      text += " (at " + file + ":" + py::str(tb.attr("tb_lineno")).cast<std::string>() + ")";
    }
    return text;
  } catch (...) {
    return error.what();
  }
}

// How many host callbacks of replicated programs (pmap: deferred errors)
// this thread is running. A pmap launched from one could never start: the
// plugin's threads are busy running the outer program's replicas.
// And how many host callbacks of any program: a jit called from one must
// not wait for the device running the calling program (refimpl's Python
// path then places it elsewhere, refimpl.backends.pjrt.backend).
thread_local int t_replicated_callbacks = 0;
thread_local int t_host_callbacks = 0;

struct ReplicatedCallbackScope {
  explicit ReplicatedCallbackScope(bool replicated) : replicated(replicated) {
    ++t_host_callbacks;
    if (replicated) ++t_replicated_callbacks;
  }
  ~ReplicatedCallbackScope() {
    --t_host_callbacks;
    if (replicated) --t_replicated_callbacks;
  }
  bool replicated;
};

XLA_FFI_Error* Execute(XLA_FFI_CallFrame* frame) {
  int64_t id = 0;
  if (!FindCallbackId(frame->attrs, &id)) {
    return MakeError(frame->api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                     "refimpl_host_callback: the custom call has no i64 attribute 'callback_id'");
  }
  if (!Py_IsInitialized() || _Py_IsFinalizing()) {
    return MakeError(frame->api, XLA_FFI_Error_Code_INTERNAL,
                     "host callback " + std::to_string(id) + ": the Python interpreter is gone");
  }
  std::string failure;
  PyGILState_STATE gil = PyGILState_Ensure();
  try {
    auto found = Registry().find(id);
    ReplicatedCallbackScope scope(found != Registry().end() && found->second.defer_errors);
    RunWithGil(*frame, id);
  } catch (const CallbackFailure& error) {
    failure = error.message;
  } catch (py::error_already_set& error) {
    auto found = Registry().find(id);
    const std::string name = found == Registry().end() ? "host callback" : found->second.name;
    failure = name + ": the callback raised " + DescribeError(error);
    error.restore();
    PyErr_Clear();
  } catch (const std::exception& error) {
    failure = std::string("host callback: ") + error.what();
  } catch (...) {
    failure = "host callback: unknown C++ exception";
  }
  bool defer = false;
  if (!failure.empty()) {
    auto found = Registry().find(id);
    defer = found != Registry().end() && found->second.defer_errors;
    if (defer) Deferred().emplace(id, failure);  // keeps the first
  }
  PyGILState_Release(gil);
  if (failure.empty()) return nullptr;
  if (!defer) return MakeError(frame->api, XLA_FFI_Error_Code_INTERNAL, failure);
  for (int64_t i = 0; i < frame->rets.size; ++i) {  // defined results, never read
    auto* buffer = static_cast<XLA_FFI_Buffer*>(frame->rets.rets[i]);
    std::size_t bytes = ElementByteSize(ToPjrtType(buffer->dtype));
    for (int64_t d = 0; d < buffer->rank; ++d) bytes *= static_cast<std::size_t>(buffer->dims[d]);
    if (bytes > 0 && buffer->data != nullptr) std::memset(buffer->data, 0, bytes);
  }
  return nullptr;
}

// The typed FFI handler XLA calls: the metadata query at registration, then
// every stage of every call site. Exceptions never cross into XLA.
extern "C" XLA_FFI_Error* RefimplHostCallback(XLA_FFI_CallFrame* frame) {
  if (frame->extension_start != nullptr) {
    int type = 0;  // read as an int: XLA may chain extension types we do not declare
    std::memcpy(&type,
                reinterpret_cast<const char*>(frame->extension_start) +
                    offsetof(XLA_FFI_Extension_Base, type),
                sizeof(type));
    if (type == XLA_FFI_Extension_Metadata) return ReportMetadata(frame);
  }
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return nullptr;
  return Execute(frame);
}

const PJRT_FFI_Extension* FindFfiExtension(const PJRT_Api* api) {
  for (const PJRT_Extension_Base* ext = api->extension_start; ext != nullptr; ext = ext->next) {
    // Read as an int: plugins chain extension types newer than our enum knows.
    int type = 0;
    std::memcpy(&type, reinterpret_cast<const char*>(ext) + offsetof(PJRT_Extension_Base, type),
                sizeof(type));
    if (type == PJRT_Extension_Type_FFI) {
      const std::size_t needed = offsetof(PJRT_FFI_Extension, register_handler) + sizeof(void*);
      if (ext->struct_size < needed) return nullptr;
      return reinterpret_cast<const PJRT_FFI_Extension*>(ext);
    }
  }
  return nullptr;
}

void RegisterHandler(const std::shared_ptr<Plugin>& plugin) {
  const PJRT_Api* api = plugin->api();
  if (RegisteredApis().count(api)) return;
  const PJRT_FFI_Extension* extension = FindFfiExtension(api);
  if (extension == nullptr || extension->register_handler == nullptr) {
    throw PjrtError(PJRT_Error_Code_UNIMPLEMENTED,
                    "PJRT plugin " + plugin->path() +
                        " has no FFI extension with register_handler: host callbacks "
                        "(pure_callback, debug.print) cannot run inside its programs");
  }
  PJRT_FFI_Register_Handler_Args args;
  std::memset(&args, 0, sizeof(args));
  args.struct_size = offsetof(PJRT_FFI_Register_Handler_Args, traits) + sizeof(args.traits);
  args.target_name = kTargetName;
  args.target_name_size = sizeof(kTargetName) - 1;
  args.handler = reinterpret_cast<void*>(&RefimplHostCallback);
  args.platform_name = kPlatformName;
  args.platform_name_size = sizeof(kPlatformName) - 1;
  args.traits = 0;
  CheckPjrt(api, extension->register_handler(&args), "PJRT_FFI_Register_Handler");
  RegisteredApis().insert(api);
}

}  // namespace

bool InReplicatedHostCallback() { return t_replicated_callbacks > 0; }
bool InHostCallback() { return t_host_callbacks > 0; }

void InitHostCallbacks(py::module_& m) {
  m.def("register_host_callback_handler", &RegisterHandler, py::arg("plugin"),
        "Registers the `refimpl_host_callback` FFI handler with `plugin` (once per plugin; "
        "later calls do nothing). Raises PjrtError when the plugin cannot take it.");
  m.def(
      "host_callback_add",
      [](py::object callable, const std::string& name, bool defer_errors) {
        if (!PyCallable_Check(callable.ptr())) {
          throw py::type_error("host_callback_add: callable must be callable");
        }
        PyObject* weak = PyWeakref_NewRef(callable.ptr(), nullptr);
        if (weak == nullptr) throw py::error_already_set();
        const int64_t id = g_next_id++;
        Registry().emplace(id, Entry{weak, name, defer_errors});
        return id;
      },
      py::arg("callable"), py::arg("name"), py::arg("defer_errors") = false,
      "Registers `callable` (weakly referenced: the caller keeps it alive) for "
      "host-callback custom calls; returns its callback_id, valid until "
      "host_callback_remove(id). With defer_errors a failure zeroes the call's "
      "results and is kept for host_callback_take_errors instead of failing the "
      "computation.");
  m.def(
      "host_callback_take_errors",
      [](const std::vector<int64_t>& ids) {
        std::vector<std::string> messages;
        for (int64_t id : ids) {
          auto found = Deferred().find(id);
          if (found == Deferred().end()) continue;
          messages.push_back(std::move(found->second));
          Deferred().erase(found);
        }
        return messages;
      },
      py::arg("ids"), "Removes and returns the deferred failure messages of callbacks `ids`.");
  m.def(
      "host_callback_remove",
      [](int64_t id) {
        auto found = Registry().find(id);
        if (found == Registry().end()) return false;
        PyObject* weak = found->second.weak_callable;
        Registry().erase(found);
        Deferred().erase(id);
        Py_DECREF(weak);  // after the erase: a callback on it may re-enter the registry
        return true;
      },
      py::arg("id"), "Drops callback `id`; returns whether it was registered.");
  m.def("_in_host_callback", &InHostCallback,
        "Whether this thread is running a host callback of a compiled program.");
  m.def(
      "host_callback_count", [] { return Registry().size(); },
      "Number of registered host callbacks (tests check that none leak).");
}

}  // namespace bindings
}  // namespace refimpl
