// Compile-time checks of pjrt_abi.h against the layout a PJRT 0.106 plugin
// expects. The byte counts are the ones the CPU plugin
// (fastatomstruct-xla-cpu==2026.6.23, "built with PJRT API version 0.106")
// reports when handed a struct that is too small, plus the size of its
// PJRT_Api table (PJRT_Api.struct_size == 1128). Nothing here runs.
#include <cstddef>

#include "pjrt_abi.h"
#include "pjrt_args.h"

namespace refimpl {
namespace {

template <typename T>
constexpr std::size_t kSize = PjrtStructSize<T>::value;

static_assert(REFIMPL_PJRT_ABI_MAJOR == 0 && REFIMPL_PJRT_ABI_MINOR == 106,
              "declarations are written against PJRT C API 0.106");

// Argument structs (struct_size the plugin requires at 0.106).
static_assert(kSize<PJRT_Plugin_Initialize_Args> == 16, "PJRT_Plugin_Initialize_Args");
static_assert(kSize<PJRT_Plugin_Attributes_Args> == 32, "PJRT_Plugin_Attributes_Args");
static_assert(kSize<PJRT_Error_GetCode_Args> == 28, "PJRT_Error_GetCode_Args");
static_assert(kSize<PJRT_Error_Message_Args> == 40, "PJRT_Error_Message_Args");
static_assert(kSize<PJRT_Event_Await_Args> == 24, "PJRT_Event_Await_Args");
static_assert(kSize<PJRT_Event_Destroy_Args> == 24, "PJRT_Event_Destroy_Args");
static_assert(kSize<PJRT_NamedValue> == 56, "PJRT_NamedValue");
static_assert(kSize<PJRT_Client_Create_Args> == 88, "PJRT_Client_Create_Args");
static_assert(kSize<PJRT_KeyValueGetCallback_Args> == 80, "PJRT_KeyValueGetCallback_Args");
static_assert(kSize<PJRT_KeyValuePutCallback_Args> == 64, "PJRT_KeyValuePutCallback_Args");
static_assert(kSize<PJRT_Client_Destroy_Args> == 24, "PJRT_Client_Destroy_Args");
static_assert(kSize<PJRT_Client_PlatformName_Args> == 40, "PJRT_Client_PlatformName_Args");
static_assert(kSize<PJRT_Client_PlatformVersion_Args> == 40, "PJRT_Client_PlatformVersion_Args");
static_assert(kSize<PJRT_Client_Devices_Args> == 40, "PJRT_Client_Devices_Args");
static_assert(kSize<PJRT_Client_AddressableDevices_Args> == 40,
              "PJRT_Client_AddressableDevices_Args");
static_assert(kSize<PJRT_Program> == 48, "PJRT_Program");
static_assert(kSize<PJRT_Client_Compile_Args> == 56, "PJRT_Client_Compile_Args");
static_assert(kSize<PJRT_Client_BufferFromHostBuffer_Args> == 120,
              "PJRT_Client_BufferFromHostBuffer_Args");
static_assert(kSize<PJRT_DeviceDescription_Id_Args> == 28, "PJRT_DeviceDescription_Id_Args");
static_assert(kSize<PJRT_DeviceDescription_Kind_Args> == 40, "PJRT_DeviceDescription_Kind_Args");
static_assert(kSize<PJRT_DeviceDescription_ToString_Args> == 40,
              "PJRT_DeviceDescription_ToString_Args");
static_assert(kSize<PJRT_Device_GetDescription_Args> == 32, "PJRT_Device_GetDescription_Args");
static_assert(kSize<PJRT_Device_IsAddressable_Args> == 25, "PJRT_Device_IsAddressable_Args");
static_assert(kSize<PJRT_Device_LocalHardwareId_Args> == 28, "PJRT_Device_LocalHardwareId_Args");
static_assert(kSize<PJRT_Device_MemoryStats_Args> == 185, "PJRT_Device_MemoryStats_Args");
static_assert(kSize<PJRT_Executable_Destroy_Args> == 24, "PJRT_Executable_Destroy_Args");
static_assert(kSize<PJRT_Executable_NumOutputs_Args> == 32, "PJRT_Executable_NumOutputs_Args");
static_assert(kSize<PJRT_LoadedExecutable_Destroy_Args> == 24,
              "PJRT_LoadedExecutable_Destroy_Args");
static_assert(kSize<PJRT_LoadedExecutable_GetExecutable_Args> == 32,
              "PJRT_LoadedExecutable_GetExecutable_Args");
static_assert(kSize<PJRT_LoadedExecutable_AddressableDevices_Args> == 40,
              "PJRT_LoadedExecutable_AddressableDevices_Args");
static_assert(kSize<PJRT_LoadedExecutable_Execute_Args> == 80,
              "PJRT_LoadedExecutable_Execute_Args");
static_assert(kSize<PJRT_Buffer_Destroy_Args> == 24, "PJRT_Buffer_Destroy_Args");
static_assert(kSize<PJRT_Buffer_ElementType_Args> == 28, "PJRT_Buffer_ElementType_Args");
static_assert(kSize<PJRT_Buffer_Dimensions_Args> == 40, "PJRT_Buffer_Dimensions_Args");
static_assert(kSize<PJRT_Buffer_ToHostBuffer_Args> == 56, "PJRT_Buffer_ToHostBuffer_Args");
static_assert(kSize<PJRT_Buffer_OnDeviceSizeInBytes_Args> == 32,
              "PJRT_Buffer_OnDeviceSizeInBytes_Args");
static_assert(kSize<PJRT_Buffer_Delete_Args> == 24, "PJRT_Buffer_Delete_Args");
static_assert(kSize<PJRT_Buffer_IsDeleted_Args> == 25, "PJRT_Buffer_IsDeleted_Args");
static_assert(kSize<PJRT_Buffer_Device_Args> == 32, "PJRT_Buffer_Device_Args");
static_assert(kSize<PJRT_Buffer_ReadyEvent_Args> == 32, "PJRT_Buffer_ReadyEvent_Args");
static_assert(kSize<PJRT_Buffer_UnsafePointer_Args> == 32, "PJRT_Buffer_UnsafePointer_Args");
static_assert(kSize<PJRT_Buffer_IncreaseExternalReferenceCount_Args> == 24,
              "PJRT_Buffer_IncreaseExternalReferenceCount_Args");
static_assert(kSize<PJRT_Buffer_DecreaseExternalReferenceCount_Args> == 24,
              "PJRT_Buffer_DecreaseExternalReferenceCount_Args");

// PJRT_ExecuteOptions: a 0.106 plugin requires at least 112 bytes (through
// `incarnation_ids`); we also carry `multi_slice_config`, which that plugin
// reads whenever struct_size covers it.
static_assert(offsetof(PJRT_ExecuteOptions, incarnation_ids) + sizeof(int64_t*) == 112,
              "PJRT_ExecuteOptions minimum (0.106)");
static_assert(offsetof(PJRT_ExecuteOptions, multi_slice_config) == 112,
              "PJRT_ExecuteOptions.multi_slice_config");
static_assert(kSize<PJRT_ExecuteOptions> == 120, "PJRT_ExecuteOptions as sent");

// Layout of NamedValue's union and of the memory-layout union.
static_assert(offsetof(PJRT_NamedValue, int64_value) == 40, "PJRT_NamedValue union");
static_assert(sizeof(PJRT_Buffer_MemoryLayout_Tiled) == 56, "PJRT_Buffer_MemoryLayout_Tiled");
static_assert(offsetof(PJRT_Buffer_MemoryLayout, type) == 72, "PJRT_Buffer_MemoryLayout.type");

// The api table: 3 header words (struct_size, extension_start, 24-byte
// version), then one pointer per function in a fixed order.
constexpr std::size_t Slot(std::size_t index) { return 40 + 8 * index; }
static_assert(offsetof(PJRT_Api, pjrt_api_version) == 16, "PJRT_Api.pjrt_api_version");
static_assert(offsetof(PJRT_Api, PJRT_Error_Destroy) == Slot(0), "slot 0");
static_assert(offsetof(PJRT_Api, PJRT_Plugin_Initialize) == Slot(3), "slot 3");
static_assert(offsetof(PJRT_Api, PJRT_Event_Await) == Slot(8), "slot 8");
static_assert(offsetof(PJRT_Api, PJRT_Client_Create) == Slot(10), "slot 10");
static_assert(offsetof(PJRT_Api, PJRT_Client_Compile) == Slot(20), "slot 20");
static_assert(offsetof(PJRT_Api, PJRT_Client_BufferFromHostBuffer) == Slot(22), "slot 22");
static_assert(offsetof(PJRT_Api, PJRT_DeviceDescription_Id) == Slot(23), "slot 23");
static_assert(offsetof(PJRT_Api, PJRT_Device_GetDescription) == Slot(29), "slot 29");
static_assert(offsetof(PJRT_Api, PJRT_Device_MemoryStats) == Slot(34), "slot 34");
static_assert(offsetof(PJRT_Api, PJRT_Executable_Destroy) == Slot(40), "slot 40");
static_assert(offsetof(PJRT_Api, PJRT_Executable_NumOutputs) == Slot(44), "slot 44");
static_assert(offsetof(PJRT_Api, PJRT_LoadedExecutable_Destroy) == Slot(50), "slot 50");
static_assert(offsetof(PJRT_Api, PJRT_LoadedExecutable_Execute) == Slot(55), "slot 55");
static_assert(offsetof(PJRT_Api, PJRT_Buffer_Destroy) == Slot(58), "slot 58");
static_assert(offsetof(PJRT_Api, PJRT_Buffer_ToHostBuffer) == Slot(70), "slot 70");
static_assert(offsetof(PJRT_Api, PJRT_Buffer_UnsafePointer) == Slot(73), "slot 73");
static_assert(offsetof(PJRT_Api, PJRT_Buffer_IncreaseExternalReferenceCount) == Slot(74),
              "slot 74");
static_assert(offsetof(PJRT_Api, PJRT_Buffer_DecreaseExternalReferenceCount) == Slot(75),
              "slot 75");
static_assert(offsetof(PJRT_Api, PJRT_Compile) == Slot(89), "slot 89");
static_assert(sizeof(PJRT_Api) == 1128, "PJRT_Api at 0.106 has 136 slots");

}  // namespace
}  // namespace refimpl
