// refimpl._pjrt: pybind11 glue over the native PJRT runtime (native/).
//
// Only argument conversion, GIL handling and exception translation live
// here; the PJRT logic is in native/.
#include "numpy_capi.h"  // first: defines the NumPy C API symbols

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../native/buffer.h"
#include "../native/client.h"
#include "../native/element_type.h"
#include "../native/errors.h"
#include "../native/executable.h"
#include "../native/pjrt_args.h"
#include "../native/plugin.h"
#include "device.h"
#include "fast_eager.h"
#include "fast_jit.h"
#include "fast_sharded.h"
#include "host_callback.h"
#include "kv_store.h"
#include "matmul_precision.h"
#include "numpy_interop.h"
#include "pjrt_array.h"
#include "py_errors.h"

namespace py = pybind11;

namespace refimpl {
namespace bindings {
namespace {

void TranslateExceptions(std::exception_ptr pending) {
  try {
    if (pending) std::rethrow_exception(pending);
  } catch (const PjrtError& error) {
    py::object type = py::reinterpret_borrow<py::object>(PjrtErrorType());
    py::object instance = type(py::str(error.what()));
    instance.attr("code") = error.code();
    PyErr_SetObject(PjrtErrorType(), instance.ptr());
  } catch (const PluginLoadError& error) {
    PyErr_SetString(PluginLoadErrorType(), error.what());
  }
}

py::object ToPython(const NamedValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return py::str(*s);
  if (const auto* i = std::get_if<int64_t>(&value)) return py::int_(*i);
  if (const auto* list = std::get_if<std::vector<int64_t>>(&value)) return py::cast(*list);
  if (const auto* f = std::get_if<float>(&value)) return py::float_(*f);
  if (const auto* b = std::get_if<bool>(&value)) return py::bool_(*b);
  return py::none();
}

NamedValue FromPython(const std::string& name, const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) return value.cast<int64_t>();
  if (py::isinstance<py::float_>(value)) return value.cast<float>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::sequence>(value)) {
    try {
      return value.cast<std::vector<int64_t>>();
    } catch (const py::cast_error&) {
    }
  }
  throw py::type_error("client option '" + name +
                       "' must be bool, int, float, str or a sequence of ints");
}

std::vector<std::shared_ptr<Buffer>> BuffersFromSequence(const py::handle& seq) {
  if (!py::isinstance<py::sequence>(seq) || py::isinstance<py::str>(seq)) {
    throw py::type_error("execute() expects a sequence of refimpl._pjrt.Buffer");
  }
  auto sequence = py::reinterpret_borrow<py::sequence>(seq);
  std::vector<std::shared_ptr<Buffer>> buffers;
  buffers.reserve(sequence.size());
  for (std::size_t i = 0; i < sequence.size(); ++i) {
    py::object item = sequence[i];
    if (!py::isinstance<Buffer>(item)) {
      throw py::type_error("execute() argument " + std::to_string(i) +
                           " is not a refimpl._pjrt.Buffer (got " +
                           py::str(py::type::of(item)).cast<std::string>() + ")");
    }
    buffers.push_back(item.cast<std::shared_ptr<Buffer>>());
  }
  return buffers;
}

py::tuple ShapeTuple(const std::vector<int64_t>& dims) {
  py::tuple shape(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) shape[i] = py::int_(dims[i]);
  return shape;
}

py::array BufferToNumpy(const Buffer& buffer) {
  py::dtype dtype = DtypeFromElementType(buffer.element_type());
  std::vector<py::ssize_t> shape(buffer.dims().begin(), buffer.dims().end());
  py::array out(dtype, shape);
  void* dst = out.mutable_data();
  const std::size_t size = static_cast<std::size_t>(out.nbytes());
  {
    py::gil_scoped_release release;
    buffer.ToHost(dst, size);
  }
  return out;
}

std::string BufferRepr(const Buffer& buffer) {
  std::string text = "Buffer(";
  text += ElementTypeName(buffer.element_type());
  text += "[";
  for (std::size_t i = 0; i < buffer.dims().size(); ++i) {
    if (i) text += ",";
    text += std::to_string(buffer.dims()[i]);
  }
  text += "]";
  if (buffer.IsDeleted()) {
    text += ", deleted";
  } else {
    text += ", device=" + std::to_string(buffer.device_index());
  }
  return text + ")";
}

py::dict AbiInfo() {
  py::dict sizes;
#define REFIMPL_SIZE_ENTRY(T) sizes[#T] = py::int_(PjrtStructSize<T>::value)
  REFIMPL_SIZE_ENTRY(PJRT_Plugin_Initialize_Args);
  REFIMPL_SIZE_ENTRY(PJRT_Plugin_Attributes_Args);
  REFIMPL_SIZE_ENTRY(PJRT_NamedValue);
  REFIMPL_SIZE_ENTRY(PJRT_Client_Create_Args);
  REFIMPL_SIZE_ENTRY(PJRT_Client_Devices_Args);
  REFIMPL_SIZE_ENTRY(PJRT_Program);
  REFIMPL_SIZE_ENTRY(PJRT_Client_Compile_Args);
  REFIMPL_SIZE_ENTRY(PJRT_Client_BufferFromHostBuffer_Args);
  REFIMPL_SIZE_ENTRY(PJRT_ExecuteOptions);
  REFIMPL_SIZE_ENTRY(PJRT_LoadedExecutable_Execute_Args);
  REFIMPL_SIZE_ENTRY(PJRT_Buffer_ToHostBuffer_Args);
  REFIMPL_SIZE_ENTRY(PJRT_Buffer_ElementType_Args);
  REFIMPL_SIZE_ENTRY(PJRT_Buffer_IsDeleted_Args);
  REFIMPL_SIZE_ENTRY(PJRT_Device_MemoryStats_Args);
#undef REFIMPL_SIZE_ENTRY
  py::dict info;
  info["api_version"] = py::make_tuple(static_cast<int>(REFIMPL_PJRT_ABI_MAJOR),
                                       static_cast<int>(REFIMPL_PJRT_ABI_MINOR));
  info["api_table_size"] = py::int_(sizeof(PJRT_Api));
  info["struct_sizes"] = sizes;
  return info;
}

}  // namespace

void Init(py::module_& m) {
  m.doc() =
      "Native PJRT runtime of refimpl: plugins, clients, device buffers and "
      "compiled executables (see native/ and refimpl/backends/pjrt/runtime.py).";

  if (!InitNumpyCApi() || !CreateExceptionTypes()) throw py::error_already_set();
  m.attr("PjrtError") = py::handle(PjrtErrorType());
  m.attr("PluginLoadError") = py::handle(PluginLoadErrorType());

  py::register_local_exception_translator(TranslateExceptions);

  m.attr("PJRT_API_VERSION") = py::make_tuple(static_cast<int>(REFIMPL_PJRT_ABI_MAJOR),
                                              static_cast<int>(REFIMPL_PJRT_ABI_MINOR));

  // ------------------------------------------------------------------ Plugin
  py::class_<Plugin, std::shared_ptr<Plugin>>(m, "Plugin",
                                              "A loaded PJRT plugin (one per path per process).")
      .def_static(
          "load",
          [](const std::string& path) {
            py::gil_scoped_release release;
            return Plugin::Load(path);
          },
          py::arg("path"),
          "Loads and initialises the PJRT plugin at `path`. Raises PluginLoadError.")
      .def_property_readonly("path", &Plugin::path)
      .def_property_readonly("api_version",
                             [](const Plugin& p) {
                               return py::make_tuple(p.api_version().first, p.api_version().second);
                             })
      .def_property_readonly("attributes",
                             [](const Plugin& p) {
                               py::dict attrs;
                               for (const Attribute& a : p.attributes()) {
                                 attrs[py::str(a.name)] = ToPython(a.value);
                               }
                               return attrs;
                             })
      .def("__repr__", [](const Plugin& p) {
        return "Plugin('" + p.path() + "', api_version=" + std::to_string(p.api_version().first) +
               "." + std::to_string(p.api_version().second) + ")";
      });

  // ------------------------------------------------------------------ Device
  py::class_<Device>(m, "Device", "An addressable device of a Client.")
      .def_property_readonly(
          "index", [](const Device& d) { return d.index; }, "Position in Client.devices().")
      .def_property_readonly("id", [](const Device& d) { return d.info().id; })
      .def_property_readonly("kind", [](const Device& d) { return d.info().kind; })
      .def_property_readonly("platform", [](const Device& d) { return d.client->platform_name(); })
      .def_property_readonly(
          "client", [](const Device& d) { return d.client; }, "The Client the device belongs to.")
      .def_property_readonly("process_index",
                             [](const Device& d) { return d.info().process_index; })
      .def_property_readonly("local_hardware_id",
                             [](const Device& d) { return d.info().local_hardware_id; })
      .def(
          "memory_stats",
          [](const Device& d) -> py::object {
            bool supported = false;
            auto pairs = d.client->MemoryStats(d.index, &supported);
            if (!supported) return py::none();
            py::dict stats;
            for (const auto& [name, value] : pairs) stats[py::str(name)] = py::int_(value);
            return stats;
          },
          "PJRT_Device_MemoryStats as a dict of byte counts (bytes_in_use, bytes_limit, ...), "
          "or None where the plugin has no allocator statistics (the CPU plugin).")
      .def("__eq__",
           [](const Device& a, const py::object& other) {
             if (!py::isinstance<Device>(other)) return false;
             const Device& b = other.cast<const Device&>();
             return a.client.get() == b.client.get() && a.index == b.index;
           })
      .def("__hash__",
           [](const Device& d) {
             return py::hash(
                 py::make_tuple(reinterpret_cast<std::uintptr_t>(d.client.get()), d.index));
           })
      .def(
          "put",
          [](const Device& d, py::array array, bool weak_type, bool committed) {
            HostArray host = DescribeHostArray(array);  // may replace `array`
            std::shared_ptr<Buffer> buffer;
            {
              py::gil_scoped_release release;
              buffer = d.client->BufferFromHost(host, d.index);
            }
            const ArrayMeta* meta =
                InternArrayMeta(host.type, host.dims.data(), host.dims.size(), weak_type);
            PyObject* made = MakePjrtArray(std::move(buffer), meta, d.index, committed);
            if (made == nullptr) throw py::error_already_set();
            return py::reinterpret_steal<py::object>(made);
          },
          py::arg("array"), py::arg("weak_type"), py::arg("committed"),
          "device_put of a NumPy array onto this device: a new PjrtArray (one C++ call).")
      .def("__repr__", [](const Device& d) {
        const std::string& text = d.info().description;
        return text.empty() ? d.client->platform_name() + ":" + std::to_string(d.info().id) : text;
      });

  // ------------------------------------------------------------------ Client
  py::class_<Client, std::shared_ptr<Client>>(m, "Client", "A PJRT client of one plugin.")
      .def(py::init([](std::shared_ptr<Plugin> plugin, std::optional<int64_t> cpu_device_count,
                       std::optional<py::dict> options, const py::object& kv_store) {
             if (!plugin) throw py::type_error("Client() needs a Plugin");
             Client::Options opts;
             if (cpu_device_count.has_value()) {
               if (*cpu_device_count < 1) {
                 throw py::value_error("cpu_device_count must be >= 1");
               }
               opts.emplace_back("cpu_device_count", *cpu_device_count);
             }
             if (options.has_value()) {
               for (auto item : *options) {
                 std::string name = py::str(item.first).cast<std::string>();
                 opts.emplace_back(name, FromPython(name, item.second));
               }
             }
             std::shared_ptr<KeyValueStore> store = KeyValueStoreFromPython(kv_store);
             // Released: a multi-process plugin calls the store (which takes
             // the GIL) from Client_Create while it exchanges topologies.
             py::gil_scoped_release release;
             return Client::Create(std::move(plugin), opts, std::move(store));
           }),
           py::arg("plugin"), py::arg("cpu_device_count") = py::none(),
           py::arg("options") = py::none(), py::arg("kv_store") = py::none(),
           "Creates a client. `cpu_device_count` sets the CPU plugin's named "
           "create option of that name; `options` passes other named options; "
           "`kv_store` (get(key, timeout_ms) -> bytes, put(key, value)) becomes "
           "the kv_get/kv_put callbacks of a multi-process client.")
      .def_property_readonly("plugin", &Client::plugin)
      .def_property_readonly("platform_name", &Client::platform_name)
      .def_property_readonly("platform_version", &Client::platform_version)
      .def_property_readonly("process_index", &Client::process_index)
      .def_property_readonly("global_device_count", &Client::global_device_count)
      .def_property_readonly("process_count", &Client::process_count)
      .def("live_executables", &Client::LiveExecutables,
           "The executables of this client still alive (JAX's client.live_executables()): "
           "each holds memory mappings of the process while it lives.")
      .def("devices",
           [](const std::shared_ptr<Client>& c) {
             std::vector<Device> devices;
             for (const DeviceInfo& info : c->devices()) devices.push_back(Device{c, info.index});
             return devices;
           })
      .def(
          "buffer_from_numpy",
          [](const std::shared_ptr<Client>& c, const py::object& value, int device_index) {
            py::module_ numpy = py::module_::import("numpy");
            py::array array;
            if (py::isinstance(value, numpy.attr("ndarray"))) {
              array = py::reinterpret_borrow<py::array>(value);
            } else if (py::isinstance(value, numpy.attr("generic"))) {
              array = py::reinterpret_steal<py::array>(numpy.attr("asarray")(value).release());
            } else {
              throw py::type_error("buffer_from_numpy() expects a numpy.ndarray, got " +
                                   py::str(py::type::of(value)).cast<std::string>());
            }
            HostArray host = DescribeHostArray(array);  // may replace `array`
            py::gil_scoped_release release;
            return c->BufferFromHost(host, device_index);
          },
          py::arg("array"), py::arg("device_index") = 0,
          "Copies a NumPy array to device `device_index` (blocks until the host "
          "memory is no longer needed).")
      .def(
          "compile",
          [](const std::shared_ptr<Client>& c, const py::object& code,
             const py::bytes& compile_options, const std::string& format) {
            std::string program;
            if (py::isinstance<py::bytes>(code)) {
              program = code.cast<std::string>();
            } else if (py::isinstance<py::str>(code)) {
              program = code.cast<std::string>();
            } else {
              throw py::type_error("compile() expects the program as bytes or str");
            }
            std::string options = compile_options;
            py::gil_scoped_release release;
            return c->Compile(program, format, options);
          },
          py::arg("mlir"), py::arg("compile_options"), py::arg("format") = "mlir",
          "Compiles a StableHLO module (portable artifact bytes or text) with "
          "serialized xla CompileOptions.")
      .def(
          "deserialize_executable",
          [](const std::shared_ptr<Client>& c, const py::bytes& data) {
            std::string bytes = data;
            py::gil_scoped_release release;
            return Executable::DeserializeAndLoad(c, bytes);
          },
          py::arg("data"),
          "Loads an executable from Executable.serialize() bytes of the same plugin "
          "build (PJRT_Executable_DeserializeAndLoad).")
      .def("__repr__", [](const Client& c) {
        return "Client(platform='" + c.platform_name() +
               "', devices=" + std::to_string(c.devices().size()) + ")";
      });

  // ------------------------------------------------------------------ Buffer
  py::class_<Buffer, std::shared_ptr<Buffer>>(m, "Buffer", "An array in device memory.")
      .def_property_readonly("shape", [](const Buffer& b) { return ShapeTuple(b.dims()); })
      .def_property_readonly("dtype",
                             [](const Buffer& b) { return DtypeFromElementType(b.element_type()); })
      .def_property_readonly(
          "element_type", [](const Buffer& b) { return ElementTypeName(b.element_type()); },
          "XLA's name of the element type, e.g. 'f32'.")
      .def_property_readonly("ndim", [](const Buffer& b) { return b.dims().size(); })
      .def_property_readonly("size", [](const Buffer& b) { return b.num_elements(); })
      .def_property_readonly("nbytes", &Buffer::host_size_in_bytes)
      .def_property_readonly("device_index", &Buffer::device_index)
      .def_property_readonly("device",
                             [](const Buffer& b) { return Device{b.client(), b.device_index()}; })
      .def_property_readonly("client", &Buffer::client)
      .def("to_numpy", &BufferToNumpy, "Copies the buffer into a new NumPy array (blocking).")
      .def(
          "__array__",
          [](const Buffer& b, py::object dtype, py::object copy) {
            if (!copy.is_none() && !copy.cast<bool>()) {
              throw py::value_error("a device Buffer cannot be viewed without a copy");
            }
            py::object result = BufferToNumpy(b);
            if (!dtype.is_none()) result = result.attr("astype")(dtype, py::arg("copy") = false);
            return result;
          },
          py::arg("dtype") = py::none(), py::arg("copy") = py::none())
      .def("delete", &Buffer::Delete, "Frees the device memory now.")
      .def("is_deleted", &Buffer::IsDeleted)
      .def("unsafe_buffer_pointer", &Buffer::UnsafePointer)
      .def("on_device_size", &Buffer::OnDeviceSizeInBytes)
      .def("block_until_ready", &Buffer::BlockUntilReady, py::call_guard<py::gil_scoped_release>())
      .def("__repr__", &BufferRepr);

  // -------------------------------------------------------------- Executable
  py::class_<Executable, std::shared_ptr<Executable>>(m, "Executable",
                                                      "A compiled, loaded program.")
      .def_property_readonly("num_outputs", &Executable::num_outputs)
      .def_property_readonly("name", &Executable::name)
      .def_property_readonly("device_indices", &Executable::device_indices)
      .def_property_readonly("client", &Executable::client)
      .def(
          "serialize",
          [](const Executable& e) {
            std::string bytes;
            {
              py::gil_scoped_release release;
              bytes = e.Serialize();
            }
            return py::bytes(bytes);
          },
          "The plugin's serialization of the executable (PJRT_Executable_Serialize).")
      .def(
          "cost_analysis",
          [](const Executable& e) -> py::object {
            bool supported = false;
            auto pairs = e.CostAnalysis(&supported);
            if (!supported) return py::none();
            py::dict out;
            for (const auto& [name, value] : pairs) out[py::str(name)] = value;
            return out;
          },
          "PJRT_Executable_GetCostAnalysis as a dict, or None if the plugin lacks it.")
      .def(
          "memory_stats",
          [](const Executable& e) -> py::object {
            bool supported = false;
            auto pairs = e.MemoryStats(&supported);
            if (!supported) return py::none();
            py::dict out;
            for (const auto& [name, value] : pairs) out[py::str(name)] = value;
            return out;
          },
          "PJRT_Executable_GetCompiledMemoryStats as a dict, or None if the plugin lacks it.")
      .def(
          "execute",
          [](const Executable& e, const py::handle& args) {
            std::vector<std::shared_ptr<Buffer>> owned = BuffersFromSequence(args);
            std::vector<const Buffer*> raw(owned.size());
            for (std::size_t i = 0; i < owned.size(); ++i) raw[i] = owned[i].get();
            py::gil_scoped_release release;
            return e.Execute(raw);
          },
          py::arg("args"),
          "Runs the program on its device and returns the output buffers. "
          "Arguments aliased to outputs (tf.aliasing_output) are donated and "
          "become deleted.")
      .def(
          "execute_sharded",
          [](const Executable& e, const py::handle& per_device) {
            std::vector<std::vector<std::shared_ptr<Buffer>>> owned;
            for (const py::handle& args : per_device) owned.push_back(BuffersFromSequence(args));
            std::vector<std::vector<const Buffer*>> raw(owned.size());
            for (std::size_t d = 0; d < owned.size(); ++d) {
              for (const auto& b : owned[d]) raw[d].push_back(b.get());
            }
            py::gil_scoped_release release;
            return e.ExecuteSharded(raw);
          },
          py::arg("per_device_args"),
          "Runs a program compiled for N replicas on its N devices in one "
          "Execute: one argument list per device (device_indices order); "
          "returns one output list per device.")
      .def("__repr__", [](const Executable& e) {
        return "Executable('" + e.name() + "', num_outputs=" + std::to_string(e.num_outputs()) +
               ")";
      });

  RegisterPjrtArray(m);
  RegisterFastJit(m);
  RegisterFastSharded(m);
  RegisterFastEager(m);
  InitHostCallbacks(m);
  RegisterKeyValueStore(m);
  RegisterMatmulPrecision(m);

  m.def("live_buffer_count", &Buffer::LiveCount, "Number of Buffer objects alive in this process.");
  m.def("abi_info", &AbiInfo,
        "Version and struct sizes of the compiled-in PJRT declarations "
        "(native/pjrt_abi.h), for cross-checking with cffi.");
}

}  // namespace bindings
}  // namespace refimpl

PYBIND11_MODULE(_pjrt, m) { refimpl::bindings::Init(m); }
