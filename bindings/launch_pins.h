// Buffers that a launch running without the GIL reads or donates.
//
// A launch checks its inputs with the GIL held (after the last point where
// Python code can run), then releases the GIL around the PJRT execute.
// Another thread may then delete an input (PjrtArray.delete) or donate it
// to its own call. A plugin given a buffer that is deleted while the
// execute is being set up may crash (XLA's CPU client does, for a program
// over several devices), so the launch pins its inputs while the GIL is
// still held:
//
//   * a pinned buffer's device memory is freed only once no launch holds
//     it (ReleaseDeviceMemory defers the free; the array reads as deleted
//     at once, as it must);
//   * a donated input is claimed: no other launch may read or donate it
//     while the claim is held (they fail with the deleted-array error, as
//     if the donation had finished first); a donated input that another
//     launch is reading is passed as non-donatable (XLA copies it), and
//     freed when the last reader is done.
//
// Every function here requires the GIL, which is the lock of the pin
// table: no lock is held across a plugin call or across Python code.
#ifndef REFIMPL_BINDINGS_LAUNCH_PINS_H_
#define REFIMPL_BINDINGS_LAUNCH_PINS_H_

#include <memory>
#include <utility>
#include <vector>

#include "../native/buffer.h"

namespace refimpl {
namespace bindings {

class LaunchPins {
 public:
  LaunchPins() = default;
  // Unpins (with the GIL held); frees the memory of buffers deleted meanwhile.
  ~LaunchPins();
  LaunchPins(const LaunchPins&) = delete;
  LaunchPins& operator=(const LaunchPins&) = delete;

  // Pins `buffer` for reading; false if another launch has claimed it for
  // donation (the caller reports the array as deleted).
  bool Read(const std::shared_ptr<Buffer>& buffer);
  // Claims `buffer` for donation; false if another launch has claimed it.
  // *may_alias is false when another launch reads it: pass it non-donatable.
  bool Donate(const std::shared_ptr<Buffer>& buffer, bool* may_alias);

 private:
  std::vector<std::pair<std::shared_ptr<Buffer>, bool>> pinned_;  // (buffer, claimed for donation)
};

// Frees `buffer`'s device memory now, or when the last launch pinning it
// finishes. GIL held.
void ReleaseDeviceMemory(const std::shared_ptr<Buffer>& buffer);

}  // namespace bindings
}  // namespace refimpl

#endif  // REFIMPL_BINDINGS_LAUNCH_PINS_H_
