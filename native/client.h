// A PJRT client: devices, host transfers, compilation.
#ifndef REFIMPL_NATIVE_CLIENT_H_
#define REFIMPL_NATIVE_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
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

class Client : public std::enable_shared_from_this<Client> {
 public:
  using Options = std::vector<std::pair<std::string, NamedValue>>;

  // Creates a client with the given create options (e.g. the CPU plugin's
  // {"cpu_device_count", int64_t{8}}).
  static std::shared_ptr<Client> Create(std::shared_ptr<Plugin> plugin,
                                        const Options& options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const PJRT_Api* api() const { return plugin_->api(); }
  PJRT_Client* raw() const { return client_; }
  const std::shared_ptr<Plugin>& plugin() const { return plugin_; }

  const std::string& platform_name() const { return platform_name_; }
  const std::string& platform_version() const { return platform_version_; }
  int process_index() const { return process_index_; }
  const std::vector<DeviceInfo>& devices() const { return devices_; }
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

  std::shared_ptr<Plugin> plugin_;
  PJRT_Client* client_ = nullptr;
  std::string platform_name_;
  std::string platform_version_;
  int process_index_ = 0;
  std::vector<DeviceInfo> devices_;
};

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_CLIENT_H_
