#include "plugin.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstddef>
#include <map>
#include <mutex>

#include "errors.h"
#include "pjrt_args.h"

namespace refimpl {

namespace {

std::mutex& RegistryMutex() {
  static std::mutex mutex;
  return mutex;
}

// Resolved path -> plugin. Plugins are never unloaded (see plugin.h).
std::map<std::string, std::shared_ptr<Plugin>>& Registry() {
  static auto* registry = new std::map<std::string, std::shared_ptr<Plugin>>();
  return *registry;
}

std::string ResolvePath(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) return path;
  return std::string(resolved);
}

// Every slot refimpl calls must be filled in; a null slot means the plugin
// does not implement the function and would crash us on first use.
void RequireSlots(const PJRT_Api* api, const std::string& path) {
  struct Slot {
    const char* name;
    bool present;
  };
  const Slot slots[] = {
      {"PJRT_Error_Destroy", api->PJRT_Error_Destroy != nullptr},
      {"PJRT_Error_Message", api->PJRT_Error_Message != nullptr},
      {"PJRT_Error_GetCode", api->PJRT_Error_GetCode != nullptr},
      {"PJRT_Plugin_Initialize", api->PJRT_Plugin_Initialize != nullptr},
      {"PJRT_Plugin_Attributes", api->PJRT_Plugin_Attributes != nullptr},
      {"PJRT_Event_Destroy", api->PJRT_Event_Destroy != nullptr},
      {"PJRT_Event_Await", api->PJRT_Event_Await != nullptr},
      {"PJRT_Client_Create", api->PJRT_Client_Create != nullptr},
      {"PJRT_Client_Destroy", api->PJRT_Client_Destroy != nullptr},
      {"PJRT_Client_PlatformName", api->PJRT_Client_PlatformName != nullptr},
      {"PJRT_Client_AddressableDevices", api->PJRT_Client_AddressableDevices != nullptr},
      {"PJRT_Client_Compile", api->PJRT_Client_Compile != nullptr},
      {"PJRT_Client_BufferFromHostBuffer", api->PJRT_Client_BufferFromHostBuffer != nullptr},
      {"PJRT_DeviceDescription_Id", api->PJRT_DeviceDescription_Id != nullptr},
      {"PJRT_DeviceDescription_Kind", api->PJRT_DeviceDescription_Kind != nullptr},
      {"PJRT_Device_GetDescription", api->PJRT_Device_GetDescription != nullptr},
      {"PJRT_Executable_Destroy", api->PJRT_Executable_Destroy != nullptr},
      {"PJRT_Executable_NumOutputs", api->PJRT_Executable_NumOutputs != nullptr},
      {"PJRT_LoadedExecutable_Destroy", api->PJRT_LoadedExecutable_Destroy != nullptr},
      {"PJRT_LoadedExecutable_GetExecutable", api->PJRT_LoadedExecutable_GetExecutable != nullptr},
      {"PJRT_LoadedExecutable_Execute", api->PJRT_LoadedExecutable_Execute != nullptr},
      {"PJRT_Buffer_Destroy", api->PJRT_Buffer_Destroy != nullptr},
      {"PJRT_Buffer_ElementType", api->PJRT_Buffer_ElementType != nullptr},
      {"PJRT_Buffer_Dimensions", api->PJRT_Buffer_Dimensions != nullptr},
      {"PJRT_Buffer_OnDeviceSizeInBytes", api->PJRT_Buffer_OnDeviceSizeInBytes != nullptr},
      {"PJRT_Buffer_Device", api->PJRT_Buffer_Device != nullptr},
      {"PJRT_Buffer_Delete", api->PJRT_Buffer_Delete != nullptr},
      {"PJRT_Buffer_IsDeleted", api->PJRT_Buffer_IsDeleted != nullptr},
      {"PJRT_Buffer_ToHostBuffer", api->PJRT_Buffer_ToHostBuffer != nullptr},
      {"PJRT_Buffer_ReadyEvent", api->PJRT_Buffer_ReadyEvent != nullptr},
      {"PJRT_Buffer_UnsafePointer", api->PJRT_Buffer_UnsafePointer != nullptr},
  };
  for (const Slot& slot : slots) {
    if (!slot.present) {
      throw PluginLoadError("PJRT plugin " + path + " does not implement " + slot.name);
    }
  }
}

}  // namespace

NamedValue ToNamedValue(const PJRT_NamedValue& value) {
  switch (value.type) {
    case PJRT_NamedValue_kString:
      return std::string(value.string_value == nullptr ? "" : value.string_value,
                         value.string_value == nullptr ? 0 : value.value_size);
    case PJRT_NamedValue_kInt64:
      return static_cast<int64_t>(value.int64_value);
    case PJRT_NamedValue_kInt64List: {
      std::vector<int64_t> list;
      if (value.int64_array_value != nullptr) {
        list.assign(value.int64_array_value, value.int64_array_value + value.value_size);
      }
      return list;
    }
    case PJRT_NamedValue_kFloat:
      return value.float_value;
    case PJRT_NamedValue_kBool:
      return value.bool_value;
  }
  return std::string();
}

std::shared_ptr<Plugin> Plugin::Load(const std::string& path) {
  struct stat info;
  if (path.empty() || stat(path.c_str(), &info) != 0) {
    throw PluginLoadError("PJRT plugin not found: '" + path + "' does not exist");
  }
  if (!S_ISREG(info.st_mode)) {
    throw PluginLoadError("PJRT plugin path '" + path + "' is not a regular file");
  }
  const std::string resolved = ResolvePath(path);

  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto found = Registry().find(resolved);
  if (found != Registry().end()) return found->second;

  dlerror();
  void* library = dlopen(resolved.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* reason = dlerror();
    throw PluginLoadError("cannot load PJRT plugin '" + path +
                          "': " + (reason != nullptr ? reason : "dlopen failed"));
  }
  dlerror();
  void* symbol = dlsym(library, "GetPjrtApi");
  if (symbol == nullptr) {
    dlclose(library);
    throw PluginLoadError("'" + path + "' is not a PJRT plugin: it does not export GetPjrtApi");
  }
  auto get_api = reinterpret_cast<PJRT_GetPjrtApi_Fn>(symbol);
  const PJRT_Api* api = get_api();
  if (api == nullptr) {
    throw PluginLoadError("PJRT plugin '" + path + "': GetPjrtApi() returned NULL");
  }

  const int major = api->pjrt_api_version.major_version;
  const int minor = api->pjrt_api_version.minor_version;
  const std::string version = std::to_string(major) + "." + std::to_string(minor);
  const std::string ours =
      std::to_string(REFIMPL_PJRT_ABI_MAJOR) + "." + std::to_string(REFIMPL_PJRT_ABI_MINOR);
  if (major != REFIMPL_PJRT_ABI_MAJOR) {
    throw PluginLoadError("PJRT plugin '" + path + "' implements C API " + version +
                          ", whose major version differs from refimpl's declarations (" + ours +
                          ")");
  }
  if (minor > REFIMPL_PJRT_ABI_MINOR) {
    throw PluginLoadError("PJRT plugin '" + path + "' implements C API " + version +
                          ", newer than refimpl's declarations (" + ours +
                          "); update native/pjrt_abi.h");
  }
  // The table must reach every slot we may call.
  const std::size_t needed =
      offsetof(PJRT_Api, PJRT_Buffer_UnsafePointer) + sizeof(api->PJRT_Buffer_UnsafePointer);
  if (api->struct_size < needed) {
    throw PluginLoadError("PJRT plugin '" + path + "' has a PJRT_Api table of " +
                          std::to_string(api->struct_size) + " bytes; refimpl needs " +
                          std::to_string(needed));
  }
  RequireSlots(api, path);

  std::shared_ptr<Plugin> plugin(new Plugin());
  plugin->library_ = library;
  plugin->api_ = api;
  plugin->path_ = resolved;
  plugin->major_ = major;
  plugin->minor_ = minor;

  auto init = MakeArgs<PJRT_Plugin_Initialize_Args>();
  CheckPjrt(api, api->PJRT_Plugin_Initialize(&init), "PJRT_Plugin_Initialize");

  auto attrs = MakeArgs<PJRT_Plugin_Attributes_Args>();
  CheckPjrt(api, api->PJRT_Plugin_Attributes(&attrs), "PJRT_Plugin_Attributes");
  for (std::size_t i = 0; i < attrs.num_attributes; ++i) {
    const PJRT_NamedValue& value = attrs.attributes[i];
    plugin->attributes_.push_back(
        Attribute{std::string(value.name, value.name_size), ToNamedValue(value)});
  }

  Registry().emplace(resolved, plugin);
  return plugin;
}

}  // namespace refimpl
