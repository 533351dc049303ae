#include "launch_pins.h"

#include <unordered_map>

namespace refimpl {
namespace bindings {
namespace {

struct PinState {
  int readers = 0;
  const LaunchPins* donor = nullptr;  // the launch that claimed it for donation
  bool free_when_unpinned = false;
};

// Guarded by the GIL. Entries exist only while some launch pins the buffer.
std::unordered_map<const Buffer*, PinState>& Pins() {
  static auto* pins = new std::unordered_map<const Buffer*, PinState>();
  return *pins;
}

void FreeNow(Buffer& buffer) {
  try {
    if (!buffer.IsDeleted()) buffer.Delete();
  } catch (...) {
    // Freeing early is an optimization: the handle's destruction frees it.
  }
}

}  // namespace

bool LaunchPins::Read(const std::shared_ptr<Buffer>& buffer) {
  PinState& state = Pins()[buffer.get()];
  if (state.donor != nullptr && state.donor != this) return false;  // (the entry stays)
  ++state.readers;
  pinned_.emplace_back(buffer, false);
  return true;
}

bool LaunchPins::Donate(const std::shared_ptr<Buffer>& buffer, bool* may_alias) {
  PinState& state = Pins()[buffer.get()];
  if (state.donor != nullptr) return false;  // (an entry with a donor stays)
  *may_alias = state.readers == 0;
  state.donor = this;
  pinned_.emplace_back(buffer, true);
  return true;
}

LaunchPins::~LaunchPins() {
  auto& pins = Pins();
  for (auto& [buffer, donated] : pinned_) {
    auto found = pins.find(buffer.get());
    if (found == pins.end()) continue;
    PinState& state = found->second;
    if (donated) {
      state.donor = nullptr;
    } else {
      --state.readers;
    }
    if (state.readers == 0 && state.donor == nullptr) {
      const bool free = state.free_when_unpinned;
      pins.erase(found);
      if (free) FreeNow(*buffer);
    }
  }
}

void ReleaseDeviceMemory(const std::shared_ptr<Buffer>& buffer) {
  if (!buffer) return;
  auto found = Pins().find(buffer.get());
  if (found != Pins().end()) {
    found->second.free_when_unpinned = true;
    return;
  }
  FreeNow(*buffer);
}

}  // namespace bindings
}  // namespace refimpl
