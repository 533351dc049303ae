// The Python-visible device of a client (refimpl._pjrt.Device).
#ifndef REFIMPL_BINDINGS_DEVICE_H_
#define REFIMPL_BINDINGS_DEVICE_H_

#include <memory>

#include "../native/client.h"

namespace refimpl {
namespace bindings {

// A device of a client; holds the client so the PJRT_Device stays valid.
struct Device {
  std::shared_ptr<Client> client;
  int index;
  const DeviceInfo& info() const { return client->devices().at(index); }
};

}  // namespace bindings
}  // namespace refimpl

#endif  // REFIMPL_BINDINGS_DEVICE_H_
