#include "constant_cache.h"

namespace refimpl {

std::size_t ConstantCache::KeyHash::operator()(const Key& k) const {
  std::uint64_t h =
      reinterpret_cast<std::uint64_t>(k.client) * 31 + static_cast<std::uint64_t>(k.device);
  h = h * 131 + static_cast<std::uint64_t>(k.type);
  h ^= k.bits[0] * 0x9e3779b97f4a7c15ull;
  h ^= k.bits[1] * 0xc2b2ae3d27d4eb4full;
  return static_cast<std::size_t>(h);
}

std::shared_ptr<Buffer> ConstantCache::Get(Client* client, int device, PJRT_Buffer_Type type,
                                           const std::uint64_t bits[2]) {
  const Key key{client, device, type, {bits[0], bits[1]}};
  auto found = entries_.find(key);
  if (found != entries_.end()) return found->second;
  std::shared_ptr<Buffer> buffer = ScalarBufferNow(client, device, type, bits);
  if (entries_.size() >= kMaxEntries) entries_.clear();
  entries_.emplace(key, buffer);
  return buffer;
}

std::shared_ptr<Buffer> ScalarBufferNow(Client* client, int device, PJRT_Buffer_Type type,
                                        const std::uint64_t bits[2]) {
  return client->BufferFromHostNow(bits, type, nullptr, 0, nullptr, device);
}

ConstantCache& ProcessConstantCache() {
  static auto* cache = new ConstantCache();
  return *cache;
}

}  // namespace refimpl
