#include "client.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "buffer.h"
#include "errors.h"
#include "event.h"
#include "executable.h"
#include "pjrt_args.h"

namespace refimpl {

namespace {

// Storage that keeps PJRT_NamedValue pointers valid during Client_Create.
struct NamedValueList {
  explicit NamedValueList(const Client::Options& options) : source(options) {
    values.reserve(options.size());
    for (const auto& option : source) {
      PJRT_NamedValue value = MakeArgs<PJRT_NamedValue>();
      value.name = option.first.c_str();
      value.name_size = option.first.size();
      const NamedValue& v = option.second;
      if (const auto* s = std::get_if<std::string>(&v)) {
        value.type = PJRT_NamedValue_kString;
        value.string_value = s->c_str();
        value.value_size = s->size();
      } else if (const auto* i = std::get_if<int64_t>(&v)) {
        value.type = PJRT_NamedValue_kInt64;
        value.int64_value = *i;
        value.value_size = 1;
      } else if (const auto* list = std::get_if<std::vector<int64_t>>(&v)) {
        value.type = PJRT_NamedValue_kInt64List;
        value.int64_array_value = list->data();
        value.value_size = list->size();
      } else if (const auto* f = std::get_if<float>(&v)) {
        value.type = PJRT_NamedValue_kFloat;
        value.float_value = *f;
        value.value_size = 1;
      } else if (const auto* b = std::get_if<bool>(&v)) {
        value.type = PJRT_NamedValue_kBool;
        value.bool_value = *b;
        value.value_size = 1;
      }
      values.push_back(value);
    }
  }
  const Client::Options& source;
  std::vector<PJRT_NamedValue> values;
};

void DeleteValue(char* value) { delete[] value; }

// Turns the store's failure into the plugin's PJRT_Error (its callback_error
// contract); an unexpected exception is INTERNAL. Never lets one escape into C.
template <typename Args>
PJRT_Error* Fail(const Args* args, PJRT_Error_Code code, const char* message) {
  if (args->callback_error == nullptr) return nullptr;  // no way to report: plugin bug
  return (*args->callback_error)(code, message, std::strlen(message));
}

}  // namespace

PJRT_Error* KeyValueGetCallback(PJRT_KeyValueGetCallback_Args* args) {
  auto* store = static_cast<KeyValueStore*>(args->user_arg);
  try {
    std::string value = store->Get(std::string(args->key, args->key_size), args->timeout_in_ms);
    // The plugin copies the value, then calls the deleter (also for size 0).
    auto owned = std::make_unique<char[]>(value.size() + 1);
    std::memcpy(owned.get(), value.data(), value.size());
    args->value_size = value.size();
    args->value = owned.release();
    args->value_deleter_callback = &DeleteValue;
    return nullptr;
  } catch (const KeyValueError& e) {
    return Fail(args, e.code(), e.what());
  } catch (const std::exception& e) {
    return Fail(args, PJRT_Error_Code_INTERNAL, e.what());
  }
}

PJRT_Error* KeyValuePutCallback(PJRT_KeyValuePutCallback_Args* args) {
  auto* store = static_cast<KeyValueStore*>(args->user_arg);
  try {
    store->Put(std::string(args->key, args->key_size), std::string(args->value, args->value_size));
    return nullptr;
  } catch (const KeyValueError& e) {
    return Fail(args, e.code(), e.what());
  } catch (const std::exception& e) {
    return Fail(args, PJRT_Error_Code_INTERNAL, e.what());
  }
}

Client::Client(std::shared_ptr<Plugin> plugin, PJRT_Client* client)
    : plugin_(std::move(plugin)), client_(client) {}

std::shared_ptr<Client> Client::Create(std::shared_ptr<Plugin> plugin, const Options& options,
                                       std::shared_ptr<KeyValueStore> kv_store) {
  if (!plugin) throw std::invalid_argument("Client::Create: null plugin");
  const PJRT_Api* api = plugin->api();
  NamedValueList named(options);
  auto args = MakeArgs<PJRT_Client_Create_Args>();
  args.create_options = named.values.empty() ? nullptr : named.values.data();
  args.num_options = named.values.size();
  if (kv_store) {
    args.kv_get_callback = &KeyValueGetCallback;
    args.kv_get_user_arg = kv_store.get();
    args.kv_put_callback = &KeyValuePutCallback;
    args.kv_put_user_arg = kv_store.get();
  }
  CheckPjrt(api, api->PJRT_Client_Create(&args), "PJRT_Client_Create");
  // From here on the handle is owned by the Client object.
  std::shared_ptr<Client> client(new Client(std::move(plugin), args.client));
  client->kv_store_ = std::move(kv_store);

  auto name = MakeArgs<PJRT_Client_PlatformName_Args>();
  name.client = client->client_;
  CheckPjrt(api, api->PJRT_Client_PlatformName(&name), "PJRT_Client_PlatformName");
  client->platform_name_.assign(name.platform_name, name.platform_name_size);

  if (api->PJRT_Client_PlatformVersion != nullptr) {
    auto version = MakeArgs<PJRT_Client_PlatformVersion_Args>();
    version.client = client->client_;
    CheckPjrt(api, api->PJRT_Client_PlatformVersion(&version), "PJRT_Client_PlatformVersion");
    client->platform_version_.assign(version.platform_version, version.platform_version_size);
  }
  if (api->PJRT_Client_ProcessIndex != nullptr) {
    auto index = MakeArgs<PJRT_Client_ProcessIndex_Args>();
    index.client = client->client_;
    CheckPjrt(api, api->PJRT_Client_ProcessIndex(&index), "PJRT_Client_ProcessIndex");
    client->process_index_ = index.process_index;
  }
  client->LoadDevices();
  client->CountGlobalDevices();
  return client;
}

void Client::CountGlobalDevices() {
  const PJRT_Api* a = api();
  auto list = MakeArgs<PJRT_Client_Devices_Args>();
  list.client = client_;
  CheckPjrt(a, a->PJRT_Client_Devices(&list), "PJRT_Client_Devices");
  global_device_count_ = static_cast<int>(list.num_devices);
  std::vector<int> seen;
  for (std::size_t i = 0; i < list.num_devices; ++i) {
    int index = 0;
    if (a->PJRT_DeviceDescription_ProcessIndex != nullptr) {
      auto desc = MakeArgs<PJRT_Device_GetDescription_Args>();
      desc.device = list.devices[i];
      CheckPjrt(a, a->PJRT_Device_GetDescription(&desc), "PJRT_Device_GetDescription");
      auto proc = MakeArgs<PJRT_DeviceDescription_ProcessIndex_Args>();
      proc.device_description = desc.device_description;
      CheckPjrt(a, a->PJRT_DeviceDescription_ProcessIndex(&proc),
                "PJRT_DeviceDescription_ProcessIndex");
      index = proc.process_index;
    }
    if (std::find(seen.begin(), seen.end(), index) == seen.end()) seen.push_back(index);
  }
  process_count_ = seen.empty() ? 1 : static_cast<int>(seen.size());
}

Client::~Client() {
  if (client_ == nullptr) return;
  auto args = MakeArgs<PJRT_Client_Destroy_Args>();
  args.client = client_;
  ErrorPtr ignored(api()->PJRT_Client_Destroy(&args), ErrorDeleter{api()});
}

void Client::LoadDevices() {
  const PJRT_Api* a = api();
  auto list = MakeArgs<PJRT_Client_AddressableDevices_Args>();
  list.client = client_;
  CheckPjrt(a, a->PJRT_Client_AddressableDevices(&list), "PJRT_Client_AddressableDevices");
  devices_.clear();
  devices_.reserve(list.num_addressable_devices);
  for (std::size_t i = 0; i < list.num_addressable_devices; ++i) {
    DeviceInfo info;
    info.index = static_cast<int>(i);
    info.device = list.addressable_devices[i];

    auto desc = MakeArgs<PJRT_Device_GetDescription_Args>();
    desc.device = info.device;
    CheckPjrt(a, a->PJRT_Device_GetDescription(&desc), "PJRT_Device_GetDescription");

    auto id = MakeArgs<PJRT_DeviceDescription_Id_Args>();
    id.device_description = desc.device_description;
    CheckPjrt(a, a->PJRT_DeviceDescription_Id(&id), "PJRT_DeviceDescription_Id");
    info.id = id.id;

    auto kind = MakeArgs<PJRT_DeviceDescription_Kind_Args>();
    kind.device_description = desc.device_description;
    CheckPjrt(a, a->PJRT_DeviceDescription_Kind(&kind), "PJRT_DeviceDescription_Kind");
    info.kind.assign(kind.device_kind, kind.device_kind_size);

    if (a->PJRT_DeviceDescription_ProcessIndex != nullptr) {
      auto proc = MakeArgs<PJRT_DeviceDescription_ProcessIndex_Args>();
      proc.device_description = desc.device_description;
      CheckPjrt(a, a->PJRT_DeviceDescription_ProcessIndex(&proc),
                "PJRT_DeviceDescription_ProcessIndex");
      info.process_index = proc.process_index;
    }
    if (a->PJRT_DeviceDescription_ToString != nullptr) {
      auto text = MakeArgs<PJRT_DeviceDescription_ToString_Args>();
      text.device_description = desc.device_description;
      CheckPjrt(a, a->PJRT_DeviceDescription_ToString(&text), "PJRT_DeviceDescription_ToString");
      info.description.assign(text.to_string, text.to_string_size);
    }
    if (a->PJRT_Device_LocalHardwareId != nullptr) {
      auto hw = MakeArgs<PJRT_Device_LocalHardwareId_Args>();
      hw.device = info.device;
      CheckPjrt(a, a->PJRT_Device_LocalHardwareId(&hw), "PJRT_Device_LocalHardwareId");
      info.local_hardware_id = hw.local_hardware_id;
    }
    devices_.push_back(std::move(info));
  }
}

int Client::DeviceIndex(const PJRT_Device* device) const {
  for (const DeviceInfo& info : devices_) {
    if (info.device == device) return info.index;
  }
  return -1;
}

std::vector<std::pair<std::string, int64_t>> Client::MemoryStats(int device_index,
                                                                 bool* supported) const {
  std::vector<std::pair<std::string, int64_t>> stats;
  const PJRT_Api* a = api();
  *supported = a->PJRT_Device_MemoryStats != nullptr;
  if (!*supported) return stats;
  auto args = MakeArgs<PJRT_Device_MemoryStats_Args>();
  args.device = devices_.at(device_index).device;
  PJRT_Error* error = a->PJRT_Device_MemoryStats(&args);
  if (error != nullptr && ErrorCode(a, error) == PJRT_Error_Code_UNIMPLEMENTED) {
    ErrorPtr ignored(error, ErrorDeleter{a});
    *supported = false;
    return stats;
  }
  CheckPjrt(a, error, "PJRT_Device_MemoryStats");
  stats.emplace_back("bytes_in_use", args.bytes_in_use);
  const std::pair<const char*, std::pair<int64_t, bool>> optional[] = {
      {"peak_bytes_in_use", {args.peak_bytes_in_use, args.peak_bytes_in_use_is_set}},
      {"num_allocs", {args.num_allocs, args.num_allocs_is_set}},
      {"largest_alloc_size", {args.largest_alloc_size, args.largest_alloc_size_is_set}},
      {"bytes_limit", {args.bytes_limit, args.bytes_limit_is_set}},
      {"bytes_reserved", {args.bytes_reserved, args.bytes_reserved_is_set}},
      {"peak_bytes_reserved", {args.peak_bytes_reserved, args.peak_bytes_reserved_is_set}},
      {"bytes_reservable_limit", {args.bytes_reservable_limit, args.bytes_reservable_limit_is_set}},
      {"largest_free_block_bytes",
       {args.largest_free_block_bytes, args.largest_free_block_bytes_is_set}},
      {"pool_bytes", {args.pool_bytes, args.pool_bytes_is_set}},
      {"peak_pool_bytes", {args.peak_pool_bytes, args.peak_pool_bytes_is_set}},
  };
  for (const auto& entry : optional) {
    if (entry.second.second) stats.emplace_back(entry.first, entry.second.first);
  }
  return stats;
}

std::shared_ptr<Buffer> Client::BufferFromHost(const HostArray& array, int device_index) {
  if (device_index < 0 || device_index >= static_cast<int>(devices_.size())) {
    throw std::out_of_range("device index " + std::to_string(device_index) +
                            " out of range: the client has " + std::to_string(devices_.size()) +
                            " devices");
  }
  if (array.type == PJRT_Buffer_Type_INVALID) {
    throw std::invalid_argument("BufferFromHost: invalid element type");
  }
  if (!array.byte_strides.empty() && array.byte_strides.size() != array.dims.size()) {
    throw std::invalid_argument("BufferFromHost: byte_strides and dims differ in length");
  }
  for (int64_t d : array.dims) {
    if (d < 0) throw std::invalid_argument("BufferFromHost: negative dimension");
  }
  const PJRT_Api* a = api();
  auto args = MakeArgs<PJRT_Client_BufferFromHostBuffer_Args>();
  args.client = client_;
  args.data = array.data;
  args.type = array.type;
  args.dims = array.dims.data();
  args.num_dims = array.dims.size();
  if (!array.byte_strides.empty()) {
    args.byte_strides = array.byte_strides.data();
    args.num_byte_strides = array.byte_strides.size();
  }
  args.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes;
  args.device = devices_[device_index].device;
  CheckPjrt(a, a->PJRT_Client_BufferFromHostBuffer(&args), "PJRT_Client_BufferFromHostBuffer");
  Buffer::CountToDevice();
  // Take ownership of both outputs before anything else can throw.
  Event done(a, args.done_with_host_buffer);
  auto buffer = std::make_shared<Buffer>(shared_from_this(), args.buffer);
  done.Await("PJRT_Client_BufferFromHostBuffer (done_with_host_buffer)");
  return buffer;
}

std::shared_ptr<Buffer> Client::BufferFromHostNow(const void* data, PJRT_Buffer_Type type,
                                                  const int64_t* dims, std::size_t num_dims,
                                                  const int64_t* byte_strides, int device_index) {
  const PJRT_Api* a = api();
  auto args = MakeArgs<PJRT_Client_BufferFromHostBuffer_Args>();
  args.client = client_;
  args.data = data;
  args.type = type;
  args.dims = dims;
  args.num_dims = num_dims;
  if (byte_strides != nullptr) {
    args.byte_strides = byte_strides;
    args.num_byte_strides = num_dims;
  }
  args.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  args.device = devices_.at(device_index).device;
  CheckPjrt(a, a->PJRT_Client_BufferFromHostBuffer(&args), "PJRT_Client_BufferFromHostBuffer");
  Buffer::CountToDevice();
  Event done(a, args.done_with_host_buffer);  // already complete: destroy it
  return std::make_shared<Buffer>(shared_from_this(), args.buffer);
}

std::shared_ptr<Executable> Client::Compile(const std::string& code, const std::string& format,
                                            const std::string& compile_options) {
  const PJRT_Api* a = api();
  auto program = MakeArgs<PJRT_Program>();
  program.code = const_cast<char*>(code.data());  // not written by Compile
  program.code_size = code.size();
  program.format = format.data();
  program.format_size = format.size();

  auto args = MakeArgs<PJRT_Client_Compile_Args>();
  args.client = client_;
  args.program = &program;
  args.compile_options = compile_options.data();
  args.compile_options_size = compile_options.size();
  CheckPjrt(a, a->PJRT_Client_Compile(&args), "PJRT_Client_Compile");
  auto executable = std::make_shared<Executable>(shared_from_this(), args.executable);
  RegisterExecutable(executable);
  return executable;
}

void Client::RegisterExecutable(const std::shared_ptr<Executable>& executable) {
  std::lock_guard<std::mutex> lock(executables_mutex_);
  if (executables_.size() >= prune_at_) {  // amortized: drop the dead ones
    executables_.erase(
        std::remove_if(executables_.begin(), executables_.end(),
                       [](const std::weak_ptr<Executable>& e) { return e.expired(); }),
        executables_.end());
    prune_at_ = 2 * executables_.size() + 64;
  }
  executables_.push_back(executable);
}

std::vector<std::shared_ptr<Executable>> Client::LiveExecutables() const {
  std::lock_guard<std::mutex> lock(executables_mutex_);
  std::vector<std::shared_ptr<Executable>> live;
  for (const auto& weak : executables_) {
    if (auto executable = weak.lock()) live.push_back(std::move(executable));
  }
  return live;
}

}  // namespace refimpl
