// Owner of one PJRT_Buffer.
#ifndef REFIMPL_NATIVE_BUFFER_H_
#define REFIMPL_NATIVE_BUFFER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "pjrt_abi.h"

namespace refimpl {

class Client;

class Buffer {
 public:
  // Takes ownership of `buffer` (must be non-null); the buffer keeps its
  // client alive.
  Buffer(std::shared_ptr<Client> client, PJRT_Buffer* buffer);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  PJRT_Buffer* raw() const { return buffer_; }
  const std::shared_ptr<Client>& client() const { return client_; }

  PJRT_Buffer_Type element_type() const;
  const std::vector<int64_t>& dims() const;
  int64_t num_elements() const;
  // Bytes of a dense row-major host copy.
  std::size_t host_size_in_bytes() const;

  bool IsDeleted() const;
  // Releases the device memory now; the handle stays valid for queries.
  void Delete();

  std::uintptr_t UnsafePointer() const;
  std::size_t OnDeviceSizeInBytes() const;
  // Index of the buffer's device in Client::devices().
  int device_index() const;

  // Copies the contents into `dst` (dense row-major, `dst_size` bytes);
  // blocks until the copy is complete.
  void ToHost(void* dst, std::size_t dst_size) const;
  // Blocks until the buffer's value has been computed.
  void BlockUntilReady() const;

  // Whether the buffer lives in host memory (a CPU device), so that its
  // UnsafePointer() may be read directly.
  bool IsOnCpu() const;

  // External references (e.g. a NumPy view of the memory). While one is
  // held the plugin keeps the memory alive, even through Delete(), and will
  // not donate the buffer to a computation; the fast path then passes the
  // buffer as non-donatable (XLA copies instead of aliasing).
  void AcquireExternalReference();
  void ReleaseExternalReference();
  int external_references() const { return external_references_.load(std::memory_order_acquire); }

  // Destroys the PJRT handle and takes `buffer` (same element type and
  // dims) in its place: when a donated buffer's memory became an output,
  // the fast path keeps this object for the output instead of making one.
  void ReplaceHandle(PJRT_Buffer* buffer);

  // Number of Buffer objects currently alive in the process.
  static int64_t LiveCount();

  // Copies between host and device memory made by this process (every
  // host-to-device transfer and every ToHost); pmap's tests and benchmark
  // read it to show that a sharded array fed back moves no data.
  static void CountTransfer();
  static int64_t TransferCount();
  // Of those, the host-to-device ones (counted by CountToDevice, which counts
  // a transfer too): refimpl.test_util.count_device_put reads it.
  static void CountToDevice();
  static int64_t ToDeviceCount();

 private:
  void LoadMetadata() const;

  std::shared_ptr<Client> client_;
  PJRT_Buffer* buffer_;

  std::atomic<int> external_references_{0};
  mutable std::once_flag metadata_once_;
  mutable PJRT_Buffer_Type type_ = PJRT_Buffer_Type_INVALID;
  mutable std::vector<int64_t> dims_;
};

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_BUFFER_H_
