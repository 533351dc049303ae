// Helpers for building PJRT argument structs with the right struct_size.
//
// PJRT defines a struct's size as the end of its last declared field (no
// trailing padding). A plugin compares that number against what it was built
// with, so every struct we send is zero-filled and stamped with exactly this
// value for the fields declared in pjrt_abi.h.
#ifndef REFIMPL_NATIVE_PJRT_ARGS_H_
#define REFIMPL_NATIVE_PJRT_ARGS_H_

#include <cstddef>
#include <cstring>
#include <type_traits>

#include "pjrt_abi.h"

namespace refimpl {

template <typename T>
struct PjrtStructSize;  // specialised below for every struct we build

#define REFIMPL_PJRT_STRUCT_SIZE(T, last)                                     \
  template <>                                                                 \
  struct PjrtStructSize<T> {                                                  \
    static constexpr std::size_t value = offsetof(T, last) + sizeof(T::last); \
  }

REFIMPL_PJRT_STRUCT_SIZE(PJRT_Error_Destroy_Args, error);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Error_Message_Args, message_size);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Error_GetCode_Args, code);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_NamedValue, value_size);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_KeyValueGetCallback_Args, value_deleter_callback);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_KeyValuePutCallback_Args, user_arg);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Executable_Serialize_Args, serialized_executable_deleter);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Executable_DeserializeAndLoad_Args,
                         overridden_serialized_compile_options_size);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Executable_GetCostAnalysis_Args, properties);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Executable_GetCompiledMemoryStats_Args, total_size_in_bytes);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Plugin_Initialize_Args, extension_start);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Plugin_Attributes_Args, num_attributes);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Event_Destroy_Args, event);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Event_IsReady_Args, is_ready);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Event_Error_Args, event);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Event_Await_Args, event);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Client_Create_Args, kv_try_get_user_arg);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Client_Destroy_Args, client);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Client_PlatformName_Args, platform_name_size);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Client_ProcessIndex_Args, process_index);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Client_PlatformVersion_Args, platform_version_size);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Client_Devices_Args, num_devices);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Client_AddressableDevices_Args, num_addressable_devices);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Program, format_size);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Client_Compile_Args, executable);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_MemoryLayout_Tiled, num_tiles);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_MemoryLayout_Strides, num_byte_strides);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_MemoryLayout, type);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Client_BufferFromHostBuffer_Args, buffer);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_Id_Args, id);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_ProcessIndex_Args, process_index);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_Kind_Args, device_kind_size);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_DebugString_Args, debug_string_size);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_DeviceDescription_ToString_Args, to_string_size);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Device_GetDescription_Args, device_description);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Device_IsAddressable_Args, is_addressable);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Device_LocalHardwareId_Args, local_hardware_id);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Device_MemoryStats_Args, peak_pool_bytes_is_set);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Executable_Destroy_Args, executable);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_Destroy_Args, executable);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_GetExecutable_Args, executable);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Executable_Name_Args, executable_name_size);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Executable_NumOutputs_Args, num_outputs);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_AddressableDevices_Args, num_addressable_devices);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_ExecuteOptions, multi_slice_config);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_LoadedExecutable_Execute_Args, execute_device);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_Destroy_Args, buffer);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_ElementType_Args, type);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_Dimensions_Args, num_dims);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_ToHostBuffer_Args, event);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_OnDeviceSizeInBytes_Args, on_device_size_in_bytes);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_Delete_Args, buffer);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_IsDeleted_Args, is_deleted);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_IsOnCpu_Args, is_on_cpu);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_Device_Args, device);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_ReadyEvent_Args, event);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_UnsafePointer_Args, buffer_pointer);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_IncreaseExternalReferenceCount_Args, buffer);
REFIMPL_PJRT_STRUCT_SIZE(PJRT_Buffer_DecreaseExternalReferenceCount_Args, buffer);

#undef REFIMPL_PJRT_STRUCT_SIZE

// A zero-filled argument struct with struct_size set.
template <typename T>
inline T MakeArgs() {
  static_assert(std::is_trivially_copyable<T>::value, "PJRT structs are plain C");
  T args;
  std::memset(static_cast<void*>(&args), 0, sizeof(T));
  args.struct_size = PjrtStructSize<T>::value;
  return args;
}

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_PJRT_ARGS_H_
