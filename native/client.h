// A PJRT client: devices, host transfers, compilation.
#ifndef REFIMPL_NATIVE_CLIENT_H_
#define REFIMPL_NATIVE_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "pjrt_abi.h"
#include "plugin.h"

namespace refimpl {

class Buffer;
class Executable;

// One addressable device, as listed by the client.
struct DeviceInfo {
  int index = 0;  // position in Client::devices()
  int id = 0;     // PJRT_DeviceDescription_Id
  int process_index = 0;
  int local_hardware_id = -1;
  std::string kind;               // e.g. "cpu"
  std::string description;        // terse, e.g. "CpuDevice(id=0)"
  PJRT_Device* device = nullptr;  // owned by the client
};

// Host data to copy to a device. `byte_strides` empty means dense row-major.
struct HostArray {
  const void* data = nullptr;
  PJRT_Buffer_Type type = PJRT_Buffer_Type_INVALID;
  std::vector<int64_t> dims;
  std::vector<int64_t> byte_strides;
};

// The key-value store a multi-process client exchanges its topology through
// (PJRT_Client_Create's kv_get/kv_put callbacks, which call these). Both may
// be called from any plugin thread, concurrently; they block. A failure is a
// KeyValueError carrying the PJRT error code the plugin should see.
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  // The value of `key`, waiting up to `timeout_ms` for another process to set it.
  virtual std::string Get(const std::string& key, int timeout_ms) = 0;
  virtual void Put(const std::string& key, const std::string& value) = 0;
};

class KeyValueError : public std::runtime_error {
 public:
  KeyValueError(PJRT_Error_Code code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  PJRT_Error_Code code() const { return code_; }

 private:
  PJRT_Error_Code code_;
};

// The two C callbacks Client::Create passes for `store` (user_arg: the
// KeyValueStore*). Exposed so a test can call them as a plugin would.
PJRT_Error* KeyValueGetCallback(PJRT_KeyValueGetCallback_Args* args);
PJRT_Error* KeyValuePutCallback(PJRT_KeyValuePutCallback_Args* args);

class Client : public std::enable_shared_from_this<Client> {
 public:
  using Options = std::vector<std::pair<std::string, NamedValue>>;

  // Creates a client with the given create options (e.g. the CPU plugin's
  // {"cpu_device_count", int64_t{8}}).
  // With `kv_store`, the client also gets the key-value callbacks (a
  // multi-process client's create options name the node: node_id,
  // num_nodes); the Client keeps the store alive as long as the plugin's
  // client, which may call it until PJRT_Client_Destroy.
  static std::shared_ptr<Client> Create(std::shared_ptr<Plugin> plugin, const Options& options = {},
                                        std::shared_ptr<KeyValueStore> kv_store = nullptr);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const PJRT_Api* api() const { return plugin_->api(); }
  PJRT_Client* raw() const { return client_; }
  const std::shared_ptr<Plugin>& plugin() const { return plugin_; }

  const std::string& platform_name() const { return platform_name_; }
  const std::string& platform_version() const { return platform_version_; }
  int process_index() const { return process_index_; }
  // All devices of the run (PJRT_Client_Devices) and the distinct process
  // indexes among them: a client of one process has process_count() 1.
  int global_device_count() const { return global_device_count_; }
  int process_count() const { return process_count_; }
  const std::vector<DeviceInfo>& devices() const { return devices_; }

  // The executables of this client that are still alive, in the order they
  // were made (each compile and load registers its own). Every live CPU
  // executable holds memory mappings of the process, so a process that
  // keeps tens of thousands of them fails to compile more (docs/semantics.md 16.1).
  std::vector<std::shared_ptr<Executable>> LiveExecutables() const;
  void RegisterExecutable(const std::shared_ptr<Executable>& executable);
  // Index in devices() of `device`, or -1.
  int DeviceIndex(const PJRT_Device* device) const;

  // PJRT_Device_MemoryStats of device `device_index` as (name, bytes) pairs:
  // "bytes_in_use" and every statistic the plugin marks as set. `supported`
  // is false (and the result empty) when the plugin lacks the function or
  // answers UNIMPLEMENTED (the CPU plugin); other errors throw.
  std::vector<std::pair<std::string, int64_t>> MemoryStats(int device_index, bool* supported) const;

  // Copies host data to device `device_index` with
  // kImmutableUntilTransferCompletes: the plugin may read `array.data` after
  // the call returns (a GPU plugin's DMA does), so this blocks until its
  // done_with_host_buffer event fires; only then may the caller release or
  // change the host memory. Never zero-copy: the buffer never aliases
  // `array.data`.
  std::shared_ptr<Buffer> BufferFromHost(const HostArray& array, int device_index);

  // The fast path's transfer: `data` is dense row-major (`byte_strides`
  // null) or strided. kImmutableOnlyDuringCall: the plugin must have copied
  // `data` (a GPU plugin into a staging buffer) before the call returns, so
  // the host memory is free again at once; the done_with_host_buffer event
  // is then already complete and is destroyed unawaited (awaiting it could
  // wait for the device-side copy, which a later execute orders by itself).
  // No checks beyond the plugin's own.
  std::shared_ptr<Buffer> BufferFromHostNow(const void* data, PJRT_Buffer_Type type,
                                            const int64_t* dims, std::size_t num_dims,
                                            const int64_t* byte_strides, int device_index);

  // Compiles `code` in `format` ("mlir": StableHLO bytecode or text) with a
  // serialized xla CompileOptionsProto.
  std::shared_ptr<Executable> Compile(const std::string& code, const std::string& format,
                                      const std::string& compile_options);

 private:
  Client(std::shared_ptr<Plugin> plugin, PJRT_Client* client);
  void LoadDevices();
  void CountGlobalDevices();

  std::shared_ptr<Plugin> plugin_;
  // Outlives client_: ~Client destroys the PJRT client first.
  std::shared_ptr<KeyValueStore> kv_store_;
  PJRT_Client* client_ = nullptr;
  std::string platform_name_;
  std::string platform_version_;
  int process_index_ = 0;
  int global_device_count_ = 0;
  int process_count_ = 1;
  std::vector<DeviceInfo> devices_;
  mutable std::mutex executables_mutex_;
  std::vector<std::weak_ptr<Executable>> executables_;  // guarded by executables_mutex_
  std::size_t prune_at_ = 64;                           // guarded by executables_mutex_
};

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_CLIENT_H_
