#include "executable.h"

#include <stdexcept>
#include <string>

#include "buffer.h"
#include "client.h"
#include "errors.h"
#include "pjrt_args.h"

namespace refimpl {

namespace {

// Owner of the PJRT_Executable view obtained from a loaded executable.
class ExecutableView {
 public:
  ExecutableView(const PJRT_Api* api, PJRT_LoadedExecutable* loaded) : api_(api) {
    auto args = MakeArgs<PJRT_LoadedExecutable_GetExecutable_Args>();
    args.loaded_executable = loaded;
    CheckPjrt(api_, api_->PJRT_LoadedExecutable_GetExecutable(&args),
              "PJRT_LoadedExecutable_GetExecutable");
    executable_ = args.executable;
  }
  ~ExecutableView() {
    if (executable_ == nullptr) return;
    auto args = MakeArgs<PJRT_Executable_Destroy_Args>();
    args.executable = executable_;
    ErrorPtr ignored(api_->PJRT_Executable_Destroy(&args), ErrorDeleter{api_});
  }
  ExecutableView(const ExecutableView&) = delete;
  ExecutableView& operator=(const ExecutableView&) = delete;
  PJRT_Executable* get() const { return executable_; }

 private:
  const PJRT_Api* api_;
  PJRT_Executable* executable_ = nullptr;
};

}  // namespace

Executable::Executable(std::shared_ptr<Client> client, PJRT_LoadedExecutable* executable)
    : client_(std::move(client)), executable_(executable) {
  if (executable_ == nullptr) throw std::invalid_argument("Executable: null executable");
  const PJRT_Api* api = client_->api();
  try {
    ExecutableView view(api, executable_);
    auto outputs = MakeArgs<PJRT_Executable_NumOutputs_Args>();
    outputs.executable = view.get();
    CheckPjrt(api, api->PJRT_Executable_NumOutputs(&outputs), "PJRT_Executable_NumOutputs");
    num_outputs_ = outputs.num_outputs;
    if (api->PJRT_Executable_Name != nullptr) {
      auto name = MakeArgs<PJRT_Executable_Name_Args>();
      name.executable = view.get();
      CheckPjrt(api, api->PJRT_Executable_Name(&name), "PJRT_Executable_Name");
      name_.assign(name.executable_name, name.executable_name_size);
    }
    if (api->PJRT_LoadedExecutable_AddressableDevices != nullptr) {
      auto devices = MakeArgs<PJRT_LoadedExecutable_AddressableDevices_Args>();
      devices.executable = executable_;
      CheckPjrt(api, api->PJRT_LoadedExecutable_AddressableDevices(&devices),
                "PJRT_LoadedExecutable_AddressableDevices");
      for (std::size_t i = 0; i < devices.num_addressable_devices; ++i) {
        device_indices_.push_back(client_->DeviceIndex(devices.addressable_devices[i]));
      }
    }
  } catch (...) {
    auto args = MakeArgs<PJRT_LoadedExecutable_Destroy_Args>();
    args.executable = executable_;
    ErrorPtr ignored(api->PJRT_LoadedExecutable_Destroy(&args), ErrorDeleter{api});
    throw;
  }
}

Executable::~Executable() {
  const PJRT_Api* api = client_->api();
  auto args = MakeArgs<PJRT_LoadedExecutable_Destroy_Args>();
  args.executable = executable_;
  ErrorPtr ignored(api->PJRT_LoadedExecutable_Destroy(&args), ErrorDeleter{api});
}

std::vector<std::shared_ptr<Buffer>> Executable::Execute(
    const std::vector<const Buffer*>& args) const {
  const PJRT_Api* api = client_->api();
  std::vector<PJRT_Buffer*> inputs(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == nullptr) {
      throw std::invalid_argument("execute: argument " + std::to_string(i) + " is null");
    }
    if (args[i]->client().get() != client_.get()) {
      throw std::invalid_argument("execute: argument " + std::to_string(i) +
                                  " belongs to a different PJRT client");
    }
    inputs[i] = args[i]->raw();
  }
  std::vector<PJRT_Buffer*> outputs(num_outputs_, nullptr);
  PJRT_Buffer* const* argument_list = inputs.data();
  PJRT_Buffer** output_list = outputs.data();

  auto options = MakeArgs<PJRT_ExecuteOptions>();
  auto exec = MakeArgs<PJRT_LoadedExecutable_Execute_Args>();
  exec.executable = executable_;
  exec.options = &options;
  exec.argument_lists = &argument_list;
  exec.num_devices = 1;
  exec.num_args = inputs.size();
  exec.output_lists = &output_list;
  CheckPjrt(api, api->PJRT_LoadedExecutable_Execute(&exec), "PJRT_LoadedExecutable_Execute");

  // Wrap every returned handle at once so none leaks if one is missing.
  std::vector<std::shared_ptr<Buffer>> results;
  results.reserve(outputs.size());
  bool missing = false;
  for (PJRT_Buffer* out : outputs) {
    if (out == nullptr) {
      missing = true;
      continue;
    }
    results.push_back(std::make_shared<Buffer>(client_, out));
  }
  if (missing) {
    throw PjrtError(PJRT_Error_Code_INTERNAL,
                    "INTERNAL: PJRT_LoadedExecutable_Execute returned a null output buffer");
  }
  return results;
}

std::vector<std::vector<std::shared_ptr<Buffer>>> Executable::ExecuteSharded(
    const std::vector<std::vector<const Buffer*>>& args) const {
  const PJRT_Api* api = client_->api();
  const std::size_t num_devices = args.size();
  if (num_devices == 0) throw std::invalid_argument("execute_sharded: no devices");
  const std::size_t num_args = args[0].size();
  std::vector<std::vector<PJRT_Buffer*>> inputs(num_devices);
  for (std::size_t d = 0; d < num_devices; ++d) {
    if (args[d].size() != num_args) {
      throw std::invalid_argument("execute_sharded: device " + std::to_string(d) + " has " +
                                  std::to_string(args[d].size()) + " arguments, device 0 has " +
                                  std::to_string(num_args));
    }
    inputs[d].resize(num_args);
    for (std::size_t i = 0; i < num_args; ++i) {
      const Buffer* arg = args[d][i];
      if (arg == nullptr || arg->client().get() != client_.get()) {
        throw std::invalid_argument("execute_sharded: argument " + std::to_string(i) +
                                    " of device " + std::to_string(d) +
                                    " is null or of another client");
      }
      inputs[d][i] = arg->raw();
    }
  }
  std::vector<std::vector<PJRT_Buffer*>> outputs(num_devices,
                                                 std::vector<PJRT_Buffer*>(num_outputs_, nullptr));
  std::vector<PJRT_Buffer* const*> argument_lists(num_devices);
  std::vector<PJRT_Buffer**> output_lists(num_devices);
  for (std::size_t d = 0; d < num_devices; ++d) {
    argument_lists[d] = inputs[d].data();
    output_lists[d] = outputs[d].data();
  }
  auto options = MakeArgs<PJRT_ExecuteOptions>();
  auto exec = MakeArgs<PJRT_LoadedExecutable_Execute_Args>();
  exec.executable = executable_;
  exec.options = &options;
  exec.argument_lists = argument_lists.data();
  exec.num_devices = num_devices;
  exec.num_args = num_args;
  exec.output_lists = output_lists.data();
  CheckPjrt(api, api->PJRT_LoadedExecutable_Execute(&exec), "PJRT_LoadedExecutable_Execute");

  std::vector<std::vector<std::shared_ptr<Buffer>>> results(num_devices);
  bool missing = false;
  for (std::size_t d = 0; d < num_devices; ++d) {
    for (PJRT_Buffer* out : outputs[d]) {
      if (out == nullptr) {
        missing = true;
        continue;
      }
      results[d].push_back(std::make_shared<Buffer>(client_, out));
    }
  }
  if (missing) {
    throw PjrtError(PJRT_Error_Code_INTERNAL,
                    "INTERNAL: PJRT_LoadedExecutable_Execute returned a null output buffer");
  }
  return results;
}

void Executable::ExecuteInto(PJRT_Buffer* const* args, std::size_t num_args, PJRT_Buffer** outputs,
                             const int64_t* non_donatable, std::size_t num_non_donatable) const {
  ExecuteReplicatedInto(&args, 1, num_args, &outputs, non_donatable, num_non_donatable);
}

void Executable::ExecuteReplicatedInto(PJRT_Buffer* const* const* argument_lists,
                                       std::size_t num_devices, std::size_t num_args,
                                       PJRT_Buffer** const* output_lists,
                                       const int64_t* non_donatable,
                                       std::size_t num_non_donatable) const {
  const PJRT_Api* api = client_->api();
  auto options = MakeArgs<PJRT_ExecuteOptions>();
  options.non_donatable_input_indices = non_donatable;
  options.num_non_donatable_input_indices = num_non_donatable;
  auto exec = MakeArgs<PJRT_LoadedExecutable_Execute_Args>();
  exec.executable = executable_;
  exec.options = &options;
  exec.argument_lists = argument_lists;
  exec.num_devices = num_devices;
  exec.num_args = num_args;
  exec.output_lists = output_lists;
  CheckPjrt(api, api->PJRT_LoadedExecutable_Execute(&exec), "PJRT_LoadedExecutable_Execute");
  bool missing = false;
  for (std::size_t d = 0; d < num_devices; ++d) {
    for (std::size_t i = 0; i < num_outputs_; ++i)
      missing = missing || output_lists[d][i] == nullptr;
  }
  if (!missing) return;
  for (std::size_t d = 0; d < num_devices; ++d) {  // all or none: release what came back
    for (std::size_t i = 0; i < num_outputs_; ++i) {
      if (output_lists[d][i] == nullptr) continue;
      auto destroy = MakeArgs<PJRT_Buffer_Destroy_Args>();
      destroy.buffer = output_lists[d][i];
      ErrorPtr ignored(api->PJRT_Buffer_Destroy(&destroy), ErrorDeleter{api});
      output_lists[d][i] = nullptr;
    }
  }
  throw PjrtError(PJRT_Error_Code_INTERNAL,
                  "INTERNAL: PJRT_LoadedExecutable_Execute returned a null output buffer");
}

namespace {

// Owner of the bytes PJRT_Executable_Serialize hands back.
class SerializedBytes {
 public:
  SerializedBytes() = default;
  ~SerializedBytes() {
    if (owner_ != nullptr && deleter_ != nullptr) deleter_(owner_);
  }
  SerializedBytes(const SerializedBytes&) = delete;
  SerializedBytes& operator=(const SerializedBytes&) = delete;
  void Take(PJRT_SerializedExecutable* owner, void (*deleter)(PJRT_SerializedExecutable*)) {
    owner_ = owner;
    deleter_ = deleter;
  }

 private:
  PJRT_SerializedExecutable* owner_ = nullptr;
  void (*deleter_)(PJRT_SerializedExecutable*) = nullptr;
};

}  // namespace

std::string Executable::Serialize() const {
  const PJRT_Api* api = client_->api();
  if (api->PJRT_Executable_Serialize == nullptr) {
    throw std::runtime_error("this PJRT plugin does not provide PJRT_Executable_Serialize");
  }
  ExecutableView view(api, executable_);
  auto args = MakeArgs<PJRT_Executable_Serialize_Args>();
  args.executable = view.get();
  CheckPjrt(api, api->PJRT_Executable_Serialize(&args), "PJRT_Executable_Serialize");
  SerializedBytes owner;
  owner.Take(args.serialized_executable, args.serialized_executable_deleter);
  return std::string(args.serialized_bytes, args.serialized_bytes_size);
}

std::shared_ptr<Executable> Executable::DeserializeAndLoad(std::shared_ptr<Client> client,
                                                           const std::string& bytes) {
  const PJRT_Api* api = client->api();
  if (api->PJRT_Executable_DeserializeAndLoad == nullptr) {
    throw std::runtime_error(
        "this PJRT plugin does not provide PJRT_Executable_DeserializeAndLoad");
  }
  auto args = MakeArgs<PJRT_Executable_DeserializeAndLoad_Args>();
  args.client = client->raw();
  args.serialized_executable = bytes.data();
  args.serialized_executable_size = bytes.size();
  CheckPjrt(api, api->PJRT_Executable_DeserializeAndLoad(&args),
            "PJRT_Executable_DeserializeAndLoad");
  auto executable = std::make_shared<Executable>(client, args.loaded_executable);
  client->RegisterExecutable(executable);
  return executable;
}

std::vector<std::pair<std::string, double>> Executable::CostAnalysis(bool* supported) const {
  const PJRT_Api* api = client_->api();
  std::vector<std::pair<std::string, double>> out;
  *supported = api->PJRT_Executable_GetCostAnalysis != nullptr;
  if (!*supported) return out;
  ExecutableView view(api, executable_);
  auto args = MakeArgs<PJRT_Executable_GetCostAnalysis_Args>();
  args.executable = view.get();
  CheckPjrt(api, api->PJRT_Executable_GetCostAnalysis(&args), "PJRT_Executable_GetCostAnalysis");
  // The properties live as long as the view: copy them out now.
  for (std::size_t i = 0; i < args.num_properties; ++i) {
    const PJRT_NamedValue& v = args.properties[i];
    std::string name(v.name, v.name_size);
    switch (v.type) {
      case PJRT_NamedValue_kFloat:
        out.emplace_back(name, static_cast<double>(v.float_value));
        break;
      case PJRT_NamedValue_kInt64:
        out.emplace_back(name, static_cast<double>(v.int64_value));
        break;
      case PJRT_NamedValue_kBool:
        out.emplace_back(name, v.bool_value ? 1.0 : 0.0);
        break;
      default:
        break;  // strings and lists carry no cost figure
    }
  }
  return out;
}

std::vector<std::pair<std::string, int64_t>> Executable::MemoryStats(bool* supported) const {
  const PJRT_Api* api = client_->api();
  std::vector<std::pair<std::string, int64_t>> out;
  *supported = api->PJRT_Executable_GetCompiledMemoryStats != nullptr;
  if (!*supported) return out;
  ExecutableView view(api, executable_);
  auto args = MakeArgs<PJRT_Executable_GetCompiledMemoryStats_Args>();
  args.executable = view.get();
  CheckPjrt(api, api->PJRT_Executable_GetCompiledMemoryStats(&args),
            "PJRT_Executable_GetCompiledMemoryStats");
  out = {
      {"generated_code_size_in_bytes", args.generated_code_size_in_bytes},
      {"argument_size_in_bytes", args.argument_size_in_bytes},
      {"output_size_in_bytes", args.output_size_in_bytes},
      {"alias_size_in_bytes", args.alias_size_in_bytes},
      {"temp_size_in_bytes", args.temp_size_in_bytes},
      {"host_generated_code_size_in_bytes", args.host_generated_code_size_in_bytes},
      {"host_argument_size_in_bytes", args.host_argument_size_in_bytes},
      {"host_output_size_in_bytes", args.host_output_size_in_bytes},
      {"host_alias_size_in_bytes", args.host_alias_size_in_bytes},
      {"host_temp_size_in_bytes", args.host_temp_size_in_bytes},
  };
  return out;
}

}  // namespace refimpl
