// Owner of one compiled, loaded PJRT executable.
#ifndef REFIMPL_NATIVE_EXECUTABLE_H_
#define REFIMPL_NATIVE_EXECUTABLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "pjrt_abi.h"

namespace refimpl {

class Buffer;
class Client;

class Executable {
 public:
  // Takes ownership of `executable` (must be non-null).
  Executable(std::shared_ptr<Client> client, PJRT_LoadedExecutable* executable);
  ~Executable();
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  PJRT_LoadedExecutable* raw() const { return executable_; }
  const std::shared_ptr<Client>& client() const { return client_; }
  std::size_t num_outputs() const { return num_outputs_; }
  const std::string& name() const { return name_; }
  // Indices (in Client::devices()) of the devices the executable runs on.
  const std::vector<int>& device_indices() const { return device_indices_; }

  // Runs once on the executable's device with `args` (all from this client)
  // and returns its outputs. Inputs aliased to outputs through the module's
  // tf.aliasing_output attributes are donated: PJRT marks them deleted.
  std::vector<std::shared_ptr<Buffer>> Execute(const std::vector<const Buffer*>& args) const;

  // Runs once on each of the executable's devices (a program compiled for
  // N replicas): `args[d]` are the arguments of the d-th device (in
  // device_indices() order), the result's [d] its outputs. One
  // PJRT_LoadedExecutable_Execute call for all devices.
  std::vector<std::vector<std::shared_ptr<Buffer>>> ExecuteSharded(
      const std::vector<std::vector<const Buffer*>>& args) const;

  // The fast path's execute: no allocation, no checks. `args` holds
  // `num_args` handles of this client; `outputs` receives num_outputs()
  // handles the caller then owns (all or none: on error nothing is written
  // and PjrtError is thrown). Inputs listed in `non_donatable` are not
  // donated even if the module aliases them (XLA copies instead).
  void ExecuteInto(PJRT_Buffer* const* args, std::size_t num_args, PJRT_Buffer** outputs,
                   const int64_t* non_donatable = nullptr, std::size_t num_non_donatable = 0) const;

  // ExecuteInto for a program compiled for N replicas: one PJRT execute over
  // `num_devices` devices; `argument_lists[d]` holds device d's `num_args`
  // handles, `output_lists[d]` receives its num_outputs() handles (all or
  // none, as ExecuteInto). `non_donatable` applies to every device.
  void ExecuteReplicatedInto(PJRT_Buffer* const* const* argument_lists, std::size_t num_devices,
                             std::size_t num_args, PJRT_Buffer** const* output_lists,
                             const int64_t* non_donatable = nullptr,
                             std::size_t num_non_donatable = 0) const;

  // The plugin's serialization of this executable (PJRT_Executable_Serialize):
  // opaque bytes that only the same plugin build can load again. Throws
  // PjrtError when the plugin cannot serialize.
  std::string Serialize() const;

  // Loads bytes made by Serialize() on `client` (PJRT_Executable_DeserializeAndLoad).
  // Bytes from another plugin build, or damaged bytes, throw PjrtError.
  static std::shared_ptr<Executable> DeserializeAndLoad(std::shared_ptr<Client> client,
                                                        const std::string& bytes);

  // PJRT_Executable_GetCostAnalysis as (name, value) pairs with numeric values
  // as doubles; `supported` is false when the plugin lacks the entry point.
  std::vector<std::pair<std::string, double>> CostAnalysis(bool* supported) const;

  // PJRT_Executable_GetCompiledMemoryStats as (name, bytes) pairs, empty with
  // `supported` false when the plugin lacks the entry point.
  std::vector<std::pair<std::string, int64_t>> MemoryStats(bool* supported) const;

 private:
  std::shared_ptr<Client> client_;
  PJRT_LoadedExecutable* executable_;
  std::size_t num_outputs_ = 0;
  std::string name_;
  std::vector<int> device_indices_;
};

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_EXECUTABLE_H_
