#include "buffer.h"

#include <atomic>
#include <stdexcept>
#include <string>

#include "client.h"
#include "element_type.h"
#include "errors.h"
#include "event.h"
#include "pjrt_args.h"

namespace refimpl {

namespace {
std::atomic<int64_t> g_live_buffers{0};
std::atomic<int64_t> g_transfers{0};
std::atomic<int64_t> g_to_device{0};
}  // namespace

Buffer::Buffer(std::shared_ptr<Client> client, PJRT_Buffer* buffer)
    : client_(std::move(client)), buffer_(buffer) {
  if (buffer_ == nullptr) throw std::invalid_argument("Buffer: null PJRT_Buffer");
  g_live_buffers.fetch_add(1, std::memory_order_relaxed);
}

Buffer::~Buffer() {
  const PJRT_Api* api = client_->api();
  auto args = MakeArgs<PJRT_Buffer_Destroy_Args>();
  args.buffer = buffer_;
  ErrorPtr ignored(api->PJRT_Buffer_Destroy(&args), ErrorDeleter{api});
  g_live_buffers.fetch_sub(1, std::memory_order_relaxed);
}

void Buffer::ReplaceHandle(PJRT_Buffer* buffer) {
  if (buffer == nullptr) throw std::invalid_argument("Buffer::ReplaceHandle: null PJRT_Buffer");
  const PJRT_Api* api = client_->api();
  auto args = MakeArgs<PJRT_Buffer_Destroy_Args>();
  args.buffer = buffer_;
  ErrorPtr ignored(api->PJRT_Buffer_Destroy(&args), ErrorDeleter{api});
  buffer_ = buffer;
}

int64_t Buffer::LiveCount() { return g_live_buffers.load(std::memory_order_relaxed); }

void Buffer::CountTransfer() { g_transfers.fetch_add(1, std::memory_order_relaxed); }

int64_t Buffer::TransferCount() { return g_transfers.load(std::memory_order_relaxed); }

void Buffer::CountToDevice() {
  CountTransfer();
  g_to_device.fetch_add(1, std::memory_order_relaxed);
}

int64_t Buffer::ToDeviceCount() { return g_to_device.load(std::memory_order_relaxed); }

void Buffer::LoadMetadata() const {
  std::call_once(metadata_once_, [this] {
    const PJRT_Api* api = client_->api();
    auto type = MakeArgs<PJRT_Buffer_ElementType_Args>();
    type.buffer = buffer_;
    CheckPjrt(api, api->PJRT_Buffer_ElementType(&type), "PJRT_Buffer_ElementType");
    auto dims = MakeArgs<PJRT_Buffer_Dimensions_Args>();
    dims.buffer = buffer_;
    CheckPjrt(api, api->PJRT_Buffer_Dimensions(&dims), "PJRT_Buffer_Dimensions");
    type_ = type.type;
    dims_.assign(dims.dims, dims.dims + dims.num_dims);
  });
}

PJRT_Buffer_Type Buffer::element_type() const {
  LoadMetadata();
  return type_;
}

const std::vector<int64_t>& Buffer::dims() const {
  LoadMetadata();
  return dims_;
}

int64_t Buffer::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims()) n *= d;
  return n;
}

std::size_t Buffer::host_size_in_bytes() const {
  return static_cast<std::size_t>(num_elements()) * ElementByteSize(element_type());
}

bool Buffer::IsDeleted() const {
  const PJRT_Api* api = client_->api();
  auto args = MakeArgs<PJRT_Buffer_IsDeleted_Args>();
  args.buffer = buffer_;
  CheckPjrt(api, api->PJRT_Buffer_IsDeleted(&args), "PJRT_Buffer_IsDeleted");
  return args.is_deleted;
}

void Buffer::Delete() {
  const PJRT_Api* api = client_->api();
  auto args = MakeArgs<PJRT_Buffer_Delete_Args>();
  args.buffer = buffer_;
  CheckPjrt(api, api->PJRT_Buffer_Delete(&args), "PJRT_Buffer_Delete");
}

std::uintptr_t Buffer::UnsafePointer() const {
  const PJRT_Api* api = client_->api();
  auto args = MakeArgs<PJRT_Buffer_UnsafePointer_Args>();
  args.buffer = buffer_;
  CheckPjrt(api, api->PJRT_Buffer_UnsafePointer(&args), "PJRT_Buffer_UnsafePointer");
  return args.buffer_pointer;
}

std::size_t Buffer::OnDeviceSizeInBytes() const {
  const PJRT_Api* api = client_->api();
  auto args = MakeArgs<PJRT_Buffer_OnDeviceSizeInBytes_Args>();
  args.buffer = buffer_;
  CheckPjrt(api, api->PJRT_Buffer_OnDeviceSizeInBytes(&args), "PJRT_Buffer_OnDeviceSizeInBytes");
  return args.on_device_size_in_bytes;
}

int Buffer::device_index() const {
  const PJRT_Api* api = client_->api();
  auto args = MakeArgs<PJRT_Buffer_Device_Args>();
  args.buffer = buffer_;
  CheckPjrt(api, api->PJRT_Buffer_Device(&args), "PJRT_Buffer_Device");
  return client_->DeviceIndex(args.device);
}

void Buffer::ToHost(void* dst, std::size_t dst_size) const {
  const std::size_t needed = host_size_in_bytes();
  if (dst_size < needed) {
    throw std::invalid_argument("Buffer::ToHost: destination holds " + std::to_string(dst_size) +
                                " bytes, " + std::to_string(needed) + " needed");
  }
  const PJRT_Api* api = client_->api();
  // Ask for a dense row-major host copy regardless of the device layout.
  const std::vector<int64_t>& shape = dims();
  std::vector<int64_t> minor_to_major(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) {
    minor_to_major[i] = static_cast<int64_t>(shape.size() - 1 - i);
  }
  auto layout = MakeArgs<PJRT_Buffer_MemoryLayout>();
  layout.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
  layout.tiled = MakeArgs<PJRT_Buffer_MemoryLayout_Tiled>();
  layout.tiled.minor_to_major = minor_to_major.data();
  layout.tiled.minor_to_major_size = minor_to_major.size();

  auto args = MakeArgs<PJRT_Buffer_ToHostBuffer_Args>();
  args.src = buffer_;
  args.host_layout = &layout;
  args.dst = dst;
  args.dst_size = dst_size;
  if (needed == 0) {
    // Nothing to copy; still report a deleted buffer like a real transfer.
    if (IsDeleted()) {
      throw PjrtError(PJRT_Error_Code_FAILED_PRECONDITION,
                      "FAILED_PRECONDITION: buffer has been deleted or donated");
    }
    return;
  }
  CheckPjrt(api, api->PJRT_Buffer_ToHostBuffer(&args), "PJRT_Buffer_ToHostBuffer");
  CountTransfer();
  Event done(api, args.event);
  done.Await("PJRT_Buffer_ToHostBuffer");
}

void Buffer::BlockUntilReady() const {
  const PJRT_Api* api = client_->api();
  auto args = MakeArgs<PJRT_Buffer_ReadyEvent_Args>();
  args.buffer = buffer_;
  CheckPjrt(api, api->PJRT_Buffer_ReadyEvent(&args), "PJRT_Buffer_ReadyEvent");
  Event ready(api, args.event);
  ready.Await("PJRT_Buffer_ReadyEvent");
}

bool Buffer::IsOnCpu() const {
  const PJRT_Api* api = client_->api();
  auto args = MakeArgs<PJRT_Buffer_IsOnCpu_Args>();
  args.buffer = buffer_;
  CheckPjrt(api, api->PJRT_Buffer_IsOnCpu(&args), "PJRT_Buffer_IsOnCpu");
  return args.is_on_cpu;
}

void Buffer::AcquireExternalReference() {
  const PJRT_Api* api = client_->api();
  auto args = MakeArgs<PJRT_Buffer_IncreaseExternalReferenceCount_Args>();
  args.buffer = buffer_;
  CheckPjrt(api, api->PJRT_Buffer_IncreaseExternalReferenceCount(&args),
            "PJRT_Buffer_IncreaseExternalReferenceCount");
  external_references_.fetch_add(1, std::memory_order_acq_rel);
}

void Buffer::ReleaseExternalReference() {
  const PJRT_Api* api = client_->api();
  auto args = MakeArgs<PJRT_Buffer_DecreaseExternalReferenceCount_Args>();
  args.buffer = buffer_;
  external_references_.fetch_sub(1, std::memory_order_acq_rel);
  CheckPjrt(api, api->PJRT_Buffer_DecreaseExternalReferenceCount(&args),
            "PJRT_Buffer_DecreaseExternalReferenceCount");
}

}  // namespace refimpl
