/*
 * refimpl's own declarations of the subset of the PJRT C API it uses.
 *
 * Written for this project from the published interface description
 * (xla/pjrt/c/pjrt_c_api.h, Apache-2.0) at API version 0.106, which is what
 * the CPU plugin shipped by fastatomstruct-xla-cpu==2026.6.23 reports.
 *
 * Rules that matter here:
 *  - The PJRT ABI is a table of function pointers in a fixed order plus
 *    argument structs that begin with `size_t struct_size` and an extension
 *    pointer. Minor versions only append fields/slots.
 *  - A plugin refuses an argument struct whose struct_size is smaller than
 *    the one it was built with, so every struct we hand to the plugin must be
 *    declared field for field up to (at least) its 0.106 layout.
 *  - Every slot of PJRT_Api up to the last function we call must be present
 *    and in order. Slots whose argument structs we never build are typed as
 *    PJRT_OpaqueFn; they are never called.
 *
 * The region between the REFIMPL_CDEF_BEGIN / REFIMPL_CDEF_END marker lines is
 * plain C with no preprocessor lines, so cffi's `cdef` can read exactly the
 * same declarations the C++ code compiles against (see
 * refimpl/backends/pjrt/_native_probe.py). Keep it that way: no macros, no #if, no
 * initializers, no C++ inside the region.
 */
#ifndef REFIMPL_NATIVE_PJRT_ABI_H_
#define REFIMPL_NATIVE_PJRT_ABI_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* REFIMPL_CDEF_BEGIN */

/* Version of the interface these declarations describe. */
enum { REFIMPL_PJRT_ABI_MAJOR = 0, REFIMPL_PJRT_ABI_MINOR = 106 };

/* ----------------------------------------------------------- extensions -- */

typedef enum {
  PJRT_Extension_Type_Gpu_Custom_Call = 0,
  PJRT_Extension_Type_Profiler,
  PJRT_Extension_Type_Custom_Partitioner,
  PJRT_Extension_Type_Stream,
  PJRT_Extension_Type_Layouts,
  PJRT_Extension_Type_FFI,
  PJRT_Extension_Type_MemoryDescriptions,
  PJRT_Extension_Type_Triton,
  PJRT_Extension_Type_RawBuffer,
  PJRT_Extension_Type_PhaseCompile,
  PJRT_Extension_Type_Example,
  PJRT_Extension_Type_Unknown
} PJRT_Extension_Type;

/* Head of every extension record; the chain is walked through `next`. */
typedef struct PJRT_Extension_Base {
  size_t struct_size;
  PJRT_Extension_Type type;
  struct PJRT_Extension_Base* next;
} PJRT_Extension_Base;

/* -------------------------------------------------------------- version -- */

typedef struct PJRT_Api_Version {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  int major_version; /* out */
  int minor_version; /* out */
} PJRT_Api_Version;

/* --------------------------------------------------------------- errors -- */

/* Opaque; allocated by the plugin, always released with PJRT_Error_Destroy. */
typedef struct PJRT_Error PJRT_Error;

typedef enum {
  PJRT_Error_Code_OK = 0,
  PJRT_Error_Code_CANCELLED = 1,
  PJRT_Error_Code_UNKNOWN = 2,
  PJRT_Error_Code_INVALID_ARGUMENT = 3,
  PJRT_Error_Code_DEADLINE_EXCEEDED = 4,
  PJRT_Error_Code_NOT_FOUND = 5,
  PJRT_Error_Code_ALREADY_EXISTS = 6,
  PJRT_Error_Code_PERMISSION_DENIED = 7,
  PJRT_Error_Code_RESOURCE_EXHAUSTED = 8,
  PJRT_Error_Code_FAILED_PRECONDITION = 9,
  PJRT_Error_Code_ABORTED = 10,
  PJRT_Error_Code_OUT_OF_RANGE = 11,
  PJRT_Error_Code_UNIMPLEMENTED = 12,
  PJRT_Error_Code_INTERNAL = 13,
  PJRT_Error_Code_UNAVAILABLE = 14,
  PJRT_Error_Code_DATA_LOSS = 15,
  PJRT_Error_Code_UNAUTHENTICATED = 16
} PJRT_Error_Code;

typedef struct PJRT_Error_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Error* error;
} PJRT_Error_Destroy_Args;

typedef struct PJRT_Error_Message_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Error* error;
  const char* message; /* out, lives as long as `error` */
  size_t message_size; /* out */
} PJRT_Error_Message_Args;

typedef struct PJRT_Error_GetCode_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Error* error;
  PJRT_Error_Code code; /* out */
} PJRT_Error_GetCode_Args;

/* --------------------------------------------------------- named values -- */

typedef enum {
  PJRT_NamedValue_kString = 0,
  PJRT_NamedValue_kInt64,
  PJRT_NamedValue_kInt64List,
  PJRT_NamedValue_kFloat,
  PJRT_NamedValue_kBool
} PJRT_NamedValue_Type;

typedef struct PJRT_NamedValue {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const char* name;
  size_t name_size;
  PJRT_NamedValue_Type type;
  union {
    const char* string_value;
    int64_t int64_value;
    const int64_t* int64_array_value;
    float float_value;
    bool bool_value;
  };
  size_t value_size; /* element count for strings/lists, 1 for scalars */
} PJRT_NamedValue;

/* --------------------------------------------------------------- plugin -- */

typedef struct PJRT_Plugin_Initialize_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
} PJRT_Plugin_Initialize_Args;

typedef struct PJRT_Plugin_Attributes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_NamedValue* attributes; /* out, process lifetime */
  size_t num_attributes;             /* out */
} PJRT_Plugin_Attributes_Args;

/* --------------------------------------------------------------- events -- */

typedef struct PJRT_Event PJRT_Event;

typedef struct PJRT_Event_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
} PJRT_Event_Destroy_Args;

typedef struct PJRT_Event_IsReady_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
  bool is_ready; /* out */
} PJRT_Event_IsReady_Args;

typedef struct PJRT_Event_Error_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
} PJRT_Event_Error_Args;

typedef struct PJRT_Event_Await_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Event* event;
} PJRT_Event_Await_Args;

/* ------------------------------------------------------- opaque handles -- */

typedef struct PJRT_Client PJRT_Client;
typedef struct PJRT_Device PJRT_Device;
typedef struct PJRT_Memory PJRT_Memory;
typedef struct PJRT_DeviceDescription PJRT_DeviceDescription;
typedef struct PJRT_Executable PJRT_Executable;
typedef struct PJRT_LoadedExecutable PJRT_LoadedExecutable;
typedef struct PJRT_Buffer PJRT_Buffer;
typedef struct PJRT_ExecuteContext PJRT_ExecuteContext;
typedef struct PJRT_MultiSlice_Config PJRT_MultiSlice_Config;
typedef struct PJRT_SendCallbackInfo PJRT_SendCallbackInfo;
typedef struct PJRT_RecvCallbackInfo PJRT_RecvCallbackInfo;

/* Key-value store callbacks of PJRT_Client_Create (xla/pjrt/c/pjrt_c_api.h):
 * the store a multi-process client exchanges its topology through. The
 * plugin fills `callback_error`; a callback that fails returns what it
 * returns for the error's code and message. refimpl passes them only after
 * ri.distributed.initialize (native/client.cc); try_get stays NULL. */
typedef PJRT_Error* PJRT_CallbackError(PJRT_Error_Code code, const char* message,
                                       size_t message_size);

typedef void (*PJRT_KeyValueGetCallback_ValueDeleter)(char* value);

typedef struct PJRT_KeyValueGetCallback_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const char* key;
  size_t key_size;
  int timeout_in_ms;
  PJRT_CallbackError* callback_error;
  void* user_arg;
  char* value;                                                  /* out */
  size_t value_size;                                            /* out */
  PJRT_KeyValueGetCallback_ValueDeleter value_deleter_callback; /* out */
} PJRT_KeyValueGetCallback_Args;

typedef struct PJRT_KeyValuePutCallback_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const char* key;
  size_t key_size;
  const char* value;
  size_t value_size;
  PJRT_CallbackError* callback_error;
  void* user_arg;
} PJRT_KeyValuePutCallback_Args;

typedef PJRT_Error* (*PJRT_KeyValueGetCallback)(PJRT_KeyValueGetCallback_Args* args);
typedef PJRT_Error* (*PJRT_KeyValuePutCallback)(PJRT_KeyValuePutCallback_Args* args);
typedef PJRT_Error* (*PJRT_KeyValueTryGetCallback)(void* args);

/* --------------------------------------------------------------- client -- */

typedef struct PJRT_Client_Create_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_NamedValue* create_options;
  size_t num_options;
  PJRT_KeyValueGetCallback kv_get_callback;
  void* kv_get_user_arg;
  PJRT_KeyValuePutCallback kv_put_callback;
  void* kv_put_user_arg;
  PJRT_Client* client; /* out */
  PJRT_KeyValueTryGetCallback kv_try_get_callback;
  void* kv_try_get_user_arg;
} PJRT_Client_Create_Args;

typedef struct PJRT_Client_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
} PJRT_Client_Destroy_Args;

typedef struct PJRT_Client_PlatformName_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* platform_name; /* out, owned by the client */
  size_t platform_name_size; /* out */
} PJRT_Client_PlatformName_Args;

typedef struct PJRT_Client_ProcessIndex_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  int process_index; /* out */
} PJRT_Client_ProcessIndex_Args;

typedef struct PJRT_Client_PlatformVersion_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* platform_version; /* out, owned by the client */
  size_t platform_version_size; /* out */
} PJRT_Client_PlatformVersion_Args;

typedef struct PJRT_Client_Devices_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Device* const* devices; /* out */
  size_t num_devices;          /* out */
} PJRT_Client_Devices_Args;

typedef struct PJRT_Client_AddressableDevices_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  PJRT_Device* const* addressable_devices; /* out */
  size_t num_addressable_devices;          /* out */
} PJRT_Client_AddressableDevices_Args;

/* Program text handed to the compiler. Format "mlir" takes MLIR bytecode
 * (e.g. a StableHLO portable artifact) or MLIR text. */
typedef struct PJRT_Program {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  char* code;
  size_t code_size;
  const char* format;
  size_t format_size;
} PJRT_Program;

typedef struct PJRT_Client_Compile_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const PJRT_Program* program;
  const char* compile_options; /* serialized CompileOptionsProto */
  size_t compile_options_size;
  PJRT_LoadedExecutable* executable; /* out */
} PJRT_Client_Compile_Args;

/* Element types. The numbering is part of the ABI. */
typedef enum {
  PJRT_Buffer_Type_INVALID = 0,
  PJRT_Buffer_Type_PRED,
  PJRT_Buffer_Type_S8,
  PJRT_Buffer_Type_S16,
  PJRT_Buffer_Type_S32,
  PJRT_Buffer_Type_S64,
  PJRT_Buffer_Type_U8,
  PJRT_Buffer_Type_U16,
  PJRT_Buffer_Type_U32,
  PJRT_Buffer_Type_U64,
  PJRT_Buffer_Type_F16,
  PJRT_Buffer_Type_F32,
  PJRT_Buffer_Type_F64,
  PJRT_Buffer_Type_BF16,
  PJRT_Buffer_Type_C64,
  PJRT_Buffer_Type_C128,
  PJRT_Buffer_Type_F8E5M2,
  PJRT_Buffer_Type_F8E4M3FN,
  PJRT_Buffer_Type_F8E4M3B11FNUZ,
  PJRT_Buffer_Type_F8E5M2FNUZ,
  PJRT_Buffer_Type_F8E4M3FNUZ,
  PJRT_Buffer_Type_S4,
  PJRT_Buffer_Type_U4,
  PJRT_Buffer_Type_TOKEN,
  PJRT_Buffer_Type_S2,
  PJRT_Buffer_Type_U2,
  PJRT_Buffer_Type_F8E4M3,
  PJRT_Buffer_Type_F8E3M4,
  PJRT_Buffer_Type_F8E8M0FNU,
  PJRT_Buffer_Type_F4E2M1FN,
  PJRT_Buffer_Type_S1,
  PJRT_Buffer_Type_U1
} PJRT_Buffer_Type;

typedef enum {
  PJRT_HostBufferSemantics_kImmutableOnlyDuringCall = 0,
  PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
  PJRT_HostBufferSemantics_kImmutableZeroCopy,
  PJRT_HostBufferSemantics_kMutableZeroCopy
} PJRT_HostBufferSemantics;

typedef enum {
  PJRT_Buffer_MemoryLayout_Type_Tiled = 0,
  PJRT_Buffer_MemoryLayout_Type_Strides
} PJRT_Buffer_MemoryLayout_Type;

typedef struct PJRT_Buffer_MemoryLayout_Tiled {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const int64_t* minor_to_major; /* logical dim indices, most minor first */
  size_t minor_to_major_size;
  const int64_t* tile_dims;     /* all tiles' dims, concatenated */
  const size_t* tile_dim_sizes; /* rank of each tile, num_tiles entries */
  size_t num_tiles;
} PJRT_Buffer_MemoryLayout_Tiled;

typedef struct PJRT_Buffer_MemoryLayout_Strides {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const int64_t* byte_strides;
  size_t num_byte_strides;
} PJRT_Buffer_MemoryLayout_Strides;

typedef struct PJRT_Buffer_MemoryLayout {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  union {
    PJRT_Buffer_MemoryLayout_Tiled tiled;
    PJRT_Buffer_MemoryLayout_Strides strides;
  };
  PJRT_Buffer_MemoryLayout_Type type;
} PJRT_Buffer_MemoryLayout;

typedef struct PJRT_Client_BufferFromHostBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const void* data;
  PJRT_Buffer_Type type;
  const int64_t* dims;
  size_t num_dims;
  const int64_t* byte_strides; /* NULL/0 entries: dense major-to-minor */
  size_t num_byte_strides;
  PJRT_HostBufferSemantics host_buffer_semantics;
  PJRT_Device* device;
  PJRT_Memory* memory;                     /* NULL: the device's default */
  PJRT_Buffer_MemoryLayout* device_layout; /* NULL: default layout */
  PJRT_Event* done_with_host_buffer;       /* out, caller destroys */
  PJRT_Buffer* buffer;                     /* out, caller destroys */
} PJRT_Client_BufferFromHostBuffer_Args;

/* -------------------------------------------------- device descriptions -- */

typedef struct PJRT_DeviceDescription_Id_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  int id; /* out */
} PJRT_DeviceDescription_Id_Args;

typedef struct PJRT_DeviceDescription_ProcessIndex_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  int process_index; /* out */
} PJRT_DeviceDescription_ProcessIndex_Args;

typedef struct PJRT_DeviceDescription_Kind_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  const char* device_kind; /* out */
  size_t device_kind_size; /* out */
} PJRT_DeviceDescription_Kind_Args;

typedef struct PJRT_DeviceDescription_DebugString_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  const char* debug_string; /* out */
  size_t debug_string_size; /* out */
} PJRT_DeviceDescription_DebugString_Args;

typedef struct PJRT_DeviceDescription_ToString_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_DeviceDescription* device_description;
  const char* to_string; /* out */
  size_t to_string_size; /* out */
} PJRT_DeviceDescription_ToString_Args;

/* -------------------------------------------------------------- devices -- */

typedef struct PJRT_Device_GetDescription_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  PJRT_DeviceDescription* device_description; /* out */
} PJRT_Device_GetDescription_Args;

typedef struct PJRT_Device_IsAddressable_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  bool is_addressable; /* out */
} PJRT_Device_IsAddressable_Args;

typedef struct PJRT_Device_LocalHardwareId_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  int local_hardware_id; /* out */
} PJRT_Device_LocalHardwareId_Args;

/* The allocator's statistics of one device (GPU plugins; the CPU plugin
   answers UNIMPLEMENTED). `bytes_in_use` is always set; every other value is
   meaningful only when its `_is_set` flag is true. */
typedef struct PJRT_Device_MemoryStats_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Device* device;
  int64_t bytes_in_use;                 /* out */
  int64_t peak_bytes_in_use;            /* out */
  bool peak_bytes_in_use_is_set;        /* out */
  int64_t num_allocs;                   /* out */
  bool num_allocs_is_set;               /* out */
  int64_t largest_alloc_size;           /* out */
  bool largest_alloc_size_is_set;       /* out */
  int64_t bytes_limit;                  /* out */
  bool bytes_limit_is_set;              /* out */
  int64_t bytes_reserved;               /* out */
  bool bytes_reserved_is_set;           /* out */
  int64_t peak_bytes_reserved;          /* out */
  bool peak_bytes_reserved_is_set;      /* out */
  int64_t bytes_reservable_limit;       /* out */
  bool bytes_reservable_limit_is_set;   /* out */
  int64_t largest_free_block_bytes;     /* out */
  bool largest_free_block_bytes_is_set; /* out */
  int64_t pool_bytes;                   /* out */
  bool pool_bytes_is_set;               /* out */
  int64_t peak_pool_bytes;              /* out */
  bool peak_pool_bytes_is_set;          /* out */
} PJRT_Device_MemoryStats_Args;

/* ---------------------------------------------------------- executables -- */

typedef struct PJRT_Executable_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
} PJRT_Executable_Destroy_Args;

typedef struct PJRT_LoadedExecutable_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
} PJRT_LoadedExecutable_Destroy_Args;

typedef struct PJRT_LoadedExecutable_GetExecutable_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* loaded_executable;
  PJRT_Executable* executable; /* out, caller destroys */
} PJRT_LoadedExecutable_GetExecutable_Args;

/* Serialization (for the persistent compilation cache). The bytes live as
   long as `serialized_executable`, which the caller frees with the deleter the
   plugin hands back. */
typedef struct PJRT_SerializedExecutable PJRT_SerializedExecutable;

typedef struct PJRT_Executable_Serialize_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  const PJRT_Executable* executable;
  const char* serialized_bytes;                                           /* out */
  size_t serialized_bytes_size;                                           /* out */
  PJRT_SerializedExecutable* serialized_executable;                       /* out, backs the bytes */
  void (*serialized_executable_deleter)(PJRT_SerializedExecutable* exec); /* out */
} PJRT_Executable_Serialize_Args;

/* Loads bytes made by PJRT_Executable_Serialize of the same plugin build. The
   override of the compile options is optional (NULL, 0 keeps the stored ones). */
typedef struct PJRT_Executable_DeserializeAndLoad_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Client* client;
  const char* serialized_executable;
  size_t serialized_executable_size;
  PJRT_LoadedExecutable* loaded_executable; /* out */
  const char* overridden_serialized_compile_options;
  size_t overridden_serialized_compile_options_size;
} PJRT_Executable_DeserializeAndLoad_Args;

/* Cost properties, owned by (and living as long as) `executable`. */
typedef struct PJRT_Executable_GetCostAnalysis_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_properties;             /* out */
  const PJRT_NamedValue* properties; /* out */
} PJRT_Executable_GetCostAnalysis_Args;

/* Mirrors xla::CompiledMemoryStats; all fields out. */
typedef struct PJRT_Executable_GetCompiledMemoryStats_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  int64_t generated_code_size_in_bytes;
  int64_t argument_size_in_bytes;
  int64_t output_size_in_bytes;
  int64_t alias_size_in_bytes;
  int64_t temp_size_in_bytes;
  int64_t host_generated_code_size_in_bytes;
  int64_t host_argument_size_in_bytes;
  int64_t host_output_size_in_bytes;
  int64_t host_alias_size_in_bytes;
  int64_t host_temp_size_in_bytes;
  int64_t peak_memory_in_bytes;
  int64_t total_size_in_bytes;
} PJRT_Executable_GetCompiledMemoryStats_Args;

typedef struct PJRT_Executable_Name_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  const char* executable_name; /* out */
  size_t executable_name_size; /* out */
} PJRT_Executable_Name_Args;

typedef struct PJRT_Executable_NumOutputs_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Executable* executable;
  size_t num_outputs; /* out */
} PJRT_Executable_NumOutputs_Args;

typedef struct PJRT_LoadedExecutable_AddressableDevices_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
  PJRT_Device* const* addressable_devices; /* out */
  size_t num_addressable_devices;          /* out */
} PJRT_LoadedExecutable_AddressableDevices_Args;

/* Per-call options of PJRT_LoadedExecutable_Execute. A 0.106 plugin requires
 * struct_size >= offset of the end of `incarnation_ids` (112 bytes) and reads
 * `multi_slice_config` when struct_size covers it, so it is declared too and
 * always left NULL. */
typedef struct PJRT_ExecuteOptions {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_SendCallbackInfo** send_callbacks;
  PJRT_RecvCallbackInfo** recv_callbacks;
  size_t num_send_ops;
  size_t num_recv_ops;
  int launch_id;
  const int64_t* non_donatable_input_indices;
  size_t num_non_donatable_input_indices;
  PJRT_ExecuteContext* context;
  const char* call_location;
  size_t num_tasks;
  int* task_ids;
  int64_t* incarnation_ids;
  PJRT_MultiSlice_Config* multi_slice_config;
} PJRT_ExecuteOptions;

typedef struct PJRT_LoadedExecutable_Execute_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_LoadedExecutable* executable;
  PJRT_ExecuteOptions* options;
  PJRT_Buffer* const* const* argument_lists; /* [num_devices][num_args] */
  size_t num_devices;
  size_t num_args;
  PJRT_Buffer** const* output_lists;   /* [num_devices][num_outputs], out */
  PJRT_Event** device_complete_events; /* optional, [num_devices], out */
  PJRT_Device* execute_device;         /* optional */
} PJRT_LoadedExecutable_Execute_Args;

/* -------------------------------------------------------------- buffers -- */

typedef struct PJRT_Buffer_Destroy_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
} PJRT_Buffer_Destroy_Args;

typedef struct PJRT_Buffer_ElementType_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Buffer_Type type; /* out */
} PJRT_Buffer_ElementType_Args;

typedef struct PJRT_Buffer_Dimensions_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  const int64_t* dims; /* out, lives as long as `buffer` */
  size_t num_dims;     /* out */
} PJRT_Buffer_Dimensions_Args;

typedef struct PJRT_Buffer_ToHostBuffer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* src;
  PJRT_Buffer_MemoryLayout* host_layout; /* NULL: the source's layout */
  void* dst;                             /* NULL: only query dst_size */
  size_t dst_size;
  PJRT_Event* event; /* out, caller destroys */
} PJRT_Buffer_ToHostBuffer_Args;

typedef struct PJRT_Buffer_OnDeviceSizeInBytes_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  size_t on_device_size_in_bytes; /* out */
} PJRT_Buffer_OnDeviceSizeInBytes_Args;

typedef struct PJRT_Buffer_Delete_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
} PJRT_Buffer_Delete_Args;

typedef struct PJRT_Buffer_IsDeleted_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  bool is_deleted; /* out */
} PJRT_Buffer_IsDeleted_Args;

typedef struct PJRT_Buffer_IsOnCpu_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  bool is_on_cpu; /* out */
} PJRT_Buffer_IsOnCpu_Args;

typedef struct PJRT_Buffer_Device_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Device* device; /* out */
} PJRT_Buffer_Device_Args;

typedef struct PJRT_Buffer_ReadyEvent_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  PJRT_Event* event; /* out, caller destroys */
} PJRT_Buffer_ReadyEvent_Args;

typedef struct PJRT_Buffer_UnsafePointer_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
  uintptr_t buffer_pointer; /* out */
} PJRT_Buffer_UnsafePointer_Args;

/* A NumPy view of a CPU buffer holds an external reference: the plugin keeps
 * the memory alive (even through PJRT_Buffer_Delete) and refuses to donate it
 * until every external reference is released. */
typedef struct PJRT_Buffer_IncreaseExternalReferenceCount_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
} PJRT_Buffer_IncreaseExternalReferenceCount_Args;

typedef struct PJRT_Buffer_DecreaseExternalReferenceCount_Args {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Buffer* buffer;
} PJRT_Buffer_DecreaseExternalReferenceCount_Args;

/* ------------------------------------------------------- the api table -- */

/* Type of table slots refimpl never calls. */
typedef void (*PJRT_OpaqueFn)(void);

typedef struct PJRT_Api {
  size_t struct_size;
  PJRT_Extension_Base* extension_start;
  PJRT_Api_Version pjrt_api_version;

  void (*PJRT_Error_Destroy)(PJRT_Error_Destroy_Args* args);
  void (*PJRT_Error_Message)(PJRT_Error_Message_Args* args);
  PJRT_Error* (*PJRT_Error_GetCode)(PJRT_Error_GetCode_Args* args);

  PJRT_Error* (*PJRT_Plugin_Initialize)(PJRT_Plugin_Initialize_Args* args);
  PJRT_Error* (*PJRT_Plugin_Attributes)(PJRT_Plugin_Attributes_Args* args);

  PJRT_Error* (*PJRT_Event_Destroy)(PJRT_Event_Destroy_Args* args);
  PJRT_Error* (*PJRT_Event_IsReady)(PJRT_Event_IsReady_Args* args);
  PJRT_Error* (*PJRT_Event_Error)(PJRT_Event_Error_Args* args);
  PJRT_Error* (*PJRT_Event_Await)(PJRT_Event_Await_Args* args);
  PJRT_OpaqueFn PJRT_Event_OnReady;

  PJRT_Error* (*PJRT_Client_Create)(PJRT_Client_Create_Args* args);
  PJRT_Error* (*PJRT_Client_Destroy)(PJRT_Client_Destroy_Args* args);
  PJRT_Error* (*PJRT_Client_PlatformName)(PJRT_Client_PlatformName_Args* args);
  PJRT_Error* (*PJRT_Client_ProcessIndex)(PJRT_Client_ProcessIndex_Args* args);
  PJRT_Error* (*PJRT_Client_PlatformVersion)(PJRT_Client_PlatformVersion_Args* args);
  PJRT_Error* (*PJRT_Client_Devices)(PJRT_Client_Devices_Args* args);
  PJRT_Error* (*PJRT_Client_AddressableDevices)(PJRT_Client_AddressableDevices_Args* args);
  PJRT_OpaqueFn PJRT_Client_LookupDevice;
  PJRT_OpaqueFn PJRT_Client_LookupAddressableDevice;
  PJRT_OpaqueFn PJRT_Client_AddressableMemories;
  PJRT_Error* (*PJRT_Client_Compile)(PJRT_Client_Compile_Args* args);
  PJRT_OpaqueFn PJRT_Client_DefaultDeviceAssignment;
  PJRT_Error* (*PJRT_Client_BufferFromHostBuffer)(PJRT_Client_BufferFromHostBuffer_Args* args);

  PJRT_Error* (*PJRT_DeviceDescription_Id)(PJRT_DeviceDescription_Id_Args* args);
  PJRT_Error* (*PJRT_DeviceDescription_ProcessIndex)(
      PJRT_DeviceDescription_ProcessIndex_Args* args);
  PJRT_OpaqueFn PJRT_DeviceDescription_Attributes;
  PJRT_Error* (*PJRT_DeviceDescription_Kind)(PJRT_DeviceDescription_Kind_Args* args);
  PJRT_Error* (*PJRT_DeviceDescription_DebugString)(PJRT_DeviceDescription_DebugString_Args* args);
  PJRT_Error* (*PJRT_DeviceDescription_ToString)(PJRT_DeviceDescription_ToString_Args* args);

  PJRT_Error* (*PJRT_Device_GetDescription)(PJRT_Device_GetDescription_Args* args);
  PJRT_Error* (*PJRT_Device_IsAddressable)(PJRT_Device_IsAddressable_Args* args);
  PJRT_Error* (*PJRT_Device_LocalHardwareId)(PJRT_Device_LocalHardwareId_Args* args);
  PJRT_OpaqueFn PJRT_Device_AddressableMemories;
  PJRT_OpaqueFn PJRT_Device_DefaultMemory;
  PJRT_Error* (*PJRT_Device_MemoryStats)(PJRT_Device_MemoryStats_Args* args);

  PJRT_OpaqueFn PJRT_Memory_Id;
  PJRT_OpaqueFn PJRT_Memory_Kind;
  PJRT_OpaqueFn PJRT_Memory_DebugString;
  PJRT_OpaqueFn PJRT_Memory_ToString;
  PJRT_OpaqueFn PJRT_Memory_AddressableByDevices;

  PJRT_Error* (*PJRT_Executable_Destroy)(PJRT_Executable_Destroy_Args* args);
  PJRT_Error* (*PJRT_Executable_Name)(PJRT_Executable_Name_Args* args);
  PJRT_OpaqueFn PJRT_Executable_NumReplicas;
  PJRT_OpaqueFn PJRT_Executable_NumPartitions;
  PJRT_Error* (*PJRT_Executable_NumOutputs)(PJRT_Executable_NumOutputs_Args* args);
  PJRT_OpaqueFn PJRT_Executable_SizeOfGeneratedCodeInBytes;
  PJRT_Error* (*PJRT_Executable_GetCostAnalysis)(PJRT_Executable_GetCostAnalysis_Args* args);
  PJRT_OpaqueFn PJRT_Executable_OutputMemoryKinds;
  PJRT_OpaqueFn PJRT_Executable_OptimizedProgram;
  PJRT_Error* (*PJRT_Executable_Serialize)(PJRT_Executable_Serialize_Args* args);

  PJRT_Error* (*PJRT_LoadedExecutable_Destroy)(PJRT_LoadedExecutable_Destroy_Args* args);
  PJRT_Error* (*PJRT_LoadedExecutable_GetExecutable)(
      PJRT_LoadedExecutable_GetExecutable_Args* args);
  PJRT_Error* (*PJRT_LoadedExecutable_AddressableDevices)(
      PJRT_LoadedExecutable_AddressableDevices_Args* args);
  PJRT_OpaqueFn PJRT_LoadedExecutable_Delete;
  PJRT_OpaqueFn PJRT_LoadedExecutable_IsDeleted;
  PJRT_Error* (*PJRT_LoadedExecutable_Execute)(PJRT_LoadedExecutable_Execute_Args* args);
  PJRT_Error* (*PJRT_Executable_DeserializeAndLoad)(PJRT_Executable_DeserializeAndLoad_Args* args);
  PJRT_OpaqueFn PJRT_LoadedExecutable_Fingerprint;

  PJRT_Error* (*PJRT_Buffer_Destroy)(PJRT_Buffer_Destroy_Args* args);
  PJRT_Error* (*PJRT_Buffer_ElementType)(PJRT_Buffer_ElementType_Args* args);
  PJRT_Error* (*PJRT_Buffer_Dimensions)(PJRT_Buffer_Dimensions_Args* args);
  PJRT_OpaqueFn PJRT_Buffer_UnpaddedDimensions;
  PJRT_OpaqueFn PJRT_Buffer_DynamicDimensionIndices;
  PJRT_OpaqueFn PJRT_Buffer_GetMemoryLayout;
  PJRT_Error* (*PJRT_Buffer_OnDeviceSizeInBytes)(PJRT_Buffer_OnDeviceSizeInBytes_Args* args);
  PJRT_Error* (*PJRT_Buffer_Device)(PJRT_Buffer_Device_Args* args);
  PJRT_OpaqueFn PJRT_Buffer_Memory;
  PJRT_Error* (*PJRT_Buffer_Delete)(PJRT_Buffer_Delete_Args* args);
  PJRT_Error* (*PJRT_Buffer_IsDeleted)(PJRT_Buffer_IsDeleted_Args* args);
  PJRT_OpaqueFn PJRT_Buffer_CopyToDevice;
  PJRT_Error* (*PJRT_Buffer_ToHostBuffer)(PJRT_Buffer_ToHostBuffer_Args* args);
  PJRT_Error* (*PJRT_Buffer_IsOnCpu)(PJRT_Buffer_IsOnCpu_Args* args);
  PJRT_Error* (*PJRT_Buffer_ReadyEvent)(PJRT_Buffer_ReadyEvent_Args* args);
  PJRT_Error* (*PJRT_Buffer_UnsafePointer)(PJRT_Buffer_UnsafePointer_Args* args);
  PJRT_Error* (*PJRT_Buffer_IncreaseExternalReferenceCount)(
      PJRT_Buffer_IncreaseExternalReferenceCount_Args* args);
  PJRT_Error* (*PJRT_Buffer_DecreaseExternalReferenceCount)(
      PJRT_Buffer_DecreaseExternalReferenceCount_Args* args);
  /* ---- nothing below this line is called by refimpl ---- */
  PJRT_OpaqueFn PJRT_Buffer_OpaqueDeviceMemoryDataPointer;

  PJRT_OpaqueFn PJRT_CopyToDeviceStream_Destroy;
  PJRT_OpaqueFn PJRT_CopyToDeviceStream_AddChunk;
  PJRT_OpaqueFn PJRT_CopyToDeviceStream_TotalBytes;
  PJRT_OpaqueFn PJRT_CopyToDeviceStream_GranuleSize;
  PJRT_OpaqueFn PJRT_CopyToDeviceStream_CurrentBytes;

  PJRT_OpaqueFn PJRT_TopologyDescription_Create;
  PJRT_OpaqueFn PJRT_TopologyDescription_Destroy;
  PJRT_OpaqueFn PJRT_TopologyDescription_PlatformName;
  PJRT_OpaqueFn PJRT_TopologyDescription_PlatformVersion;
  PJRT_OpaqueFn PJRT_TopologyDescription_GetDeviceDescriptions;
  PJRT_OpaqueFn PJRT_TopologyDescription_Serialize;
  PJRT_OpaqueFn PJRT_TopologyDescription_Attributes;

  PJRT_OpaqueFn PJRT_Compile;

  /* Slots appended by minor versions, in the order they were added. */
  PJRT_OpaqueFn PJRT_Executable_OutputElementTypes;
  PJRT_OpaqueFn PJRT_Executable_OutputDimensions;
  PJRT_OpaqueFn PJRT_Buffer_CopyToMemory;
  PJRT_OpaqueFn PJRT_Client_CreateViewOfDeviceBuffer;
  PJRT_OpaqueFn PJRT_Executable_Fingerprint;
  PJRT_OpaqueFn PJRT_Client_TopologyDescription;
  PJRT_Error* (*PJRT_Executable_GetCompiledMemoryStats)(
      PJRT_Executable_GetCompiledMemoryStats_Args* args);
  PJRT_OpaqueFn PJRT_Memory_Kind_Id;
  PJRT_OpaqueFn PJRT_ExecuteContext_Create;
  PJRT_OpaqueFn PJRT_ExecuteContext_Destroy;
  PJRT_OpaqueFn PJRT_Buffer_CopyRawToHost;
  PJRT_OpaqueFn PJRT_AsyncHostToDeviceTransferManager_Destroy;
  PJRT_OpaqueFn PJRT_AsyncHostToDeviceTransferManager_TransferData;
  PJRT_OpaqueFn PJRT_Client_CreateBuffersForAsyncHostToDevice;
  PJRT_OpaqueFn PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer;
  PJRT_OpaqueFn PJRT_AsyncHostToDeviceTransferManager_Device;
  PJRT_OpaqueFn PJRT_AsyncHostToDeviceTransferManager_BufferCount;
  PJRT_OpaqueFn PJRT_AsyncHostToDeviceTransferManager_BufferSize;
  PJRT_OpaqueFn PJRT_AsyncHostToDeviceTransferManager_SetBufferError;
  PJRT_OpaqueFn PJRT_AsyncHostToDeviceTransferManager_AddMetadata;
  PJRT_OpaqueFn PJRT_Client_DmaMap;
  PJRT_OpaqueFn PJRT_Client_DmaUnmap;
  PJRT_OpaqueFn PJRT_Client_CreateUninitializedBuffer;
  PJRT_OpaqueFn PJRT_Client_UpdateGlobalProcessInfo;
  PJRT_OpaqueFn PJRT_TopologyDescription_Deserialize;
  PJRT_OpaqueFn PJRT_Client_CreateAliasBuffer;
  PJRT_OpaqueFn PJRT_Client_FulfillAliasBuffer;
  PJRT_OpaqueFn PJRT_LoadedExecutable_GetDeviceAssignment;
  PJRT_OpaqueFn PJRT_Client_CreateErrorBuffer;
  PJRT_OpaqueFn PJRT_AsyncHostToDeviceTransferManager_TransferLiteral;
  PJRT_OpaqueFn PJRT_Buffer_CopyRawToHostFuture;
  PJRT_OpaqueFn PJRT_Device_PoisonExecution;
  PJRT_OpaqueFn PJRT_Device_CreateAsyncTrackingEvent;
  PJRT_OpaqueFn PJRT_AsyncTrackingEvent_Destroy;
  PJRT_OpaqueFn PJRT_Executable_GetCompileOptions;
  PJRT_OpaqueFn PJRT_Buffer_DonateWithControlDependency;
  PJRT_OpaqueFn PJRT_Event_Create;
  PJRT_OpaqueFn PJRT_Event_Set;
  PJRT_OpaqueFn PJRT_Device_GetAttributes;
  PJRT_OpaqueFn PJRT_Client_Load;
  PJRT_OpaqueFn PJRT_LoadedExecutable_AddressableDeviceLogicalIds;
  PJRT_OpaqueFn PJRT_Buffer_Bitcast;
  PJRT_OpaqueFn PJRT_Error_ForEachPayload;
  PJRT_OpaqueFn PJRT_TopologyDescription_Fingerprint;
  PJRT_OpaqueFn PJRT_Executable_ParameterMemoryKinds;
  PJRT_OpaqueFn PJRT_Device_ClearMemoryStats;
} PJRT_Api;

/* Signature of the one symbol a plugin exports. */
typedef const PJRT_Api* (*PJRT_GetPjrtApi_Fn)(void);

/* REFIMPL_CDEF_END */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* REFIMPL_NATIVE_PJRT_ABI_H_ */
