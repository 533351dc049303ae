// Device buffers of scalar constants, per (client, device, element type,
// bits): the same `1.0` argument of a jitted call is transferred once.
// Only for arguments that are not donated (a donated input's buffer may
// become an output's, so it must be the call's own).
//
// Not internally synchronized: the caller serializes every use (the
// bindings hold the Python GIL). A full cache is emptied, not evicted
// entry by entry: constants are few in practice, and a program that makes
// many distinct ones gains nothing from keeping old ones.
#ifndef REFIMPL_NATIVE_CONSTANT_CACHE_H_
#define REFIMPL_NATIVE_CONSTANT_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "buffer.h"
#include "client.h"
#include "pjrt_abi.h"

namespace refimpl {

class ConstantCache {
 public:
  static constexpr std::size_t kMaxEntries = 1024;

  // The buffer of the scalar `bits` (one element of `type`, as
  // EncodeScalar writes it) on `device` of `client`: cached, or transferred
  // now and cached. Throws as Client::BufferFromHostNow.
  std::shared_ptr<Buffer> Get(Client* client, int device, PJRT_Buffer_Type type,
                              const std::uint64_t bits[2]);
  void Clear() { entries_.clear(); }
  std::size_t size() const { return entries_.size(); }

 private:
  struct Key {
    const Client* client;
    int device;
    PJRT_Buffer_Type type;
    std::uint64_t bits[2];
    bool operator==(const Key& o) const {
      return client == o.client && device == o.device && type == o.type && bits[0] == o.bits[0] &&
             bits[1] == o.bits[1];
    }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  std::unordered_map<Key, std::shared_ptr<Buffer>, KeyHash> entries_;
};

// A scalar's buffer made for one call only (a donated argument).
std::shared_ptr<Buffer> ScalarBufferNow(Client* client, int device, PJRT_Buffer_Type type,
                                        const std::uint64_t bits[2]);

// The process's cache; never destroyed (its buffers may outlive the
// plugin's orderly shutdown otherwise).
ConstantCache& ProcessConstantCache();

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_CONSTANT_CACHE_H_
