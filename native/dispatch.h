// The dispatch rules of one cached call that involve no Python: which inputs
// are donated, which output is written into which donated input's buffer
// (aliasing), when PJRT must copy instead, which buffer object each output
// ends up owned by, and which donated inputs lose their memory.
//
// bindings/fast_jit.cc turns Python arguments into the inputs of a CallPlan
// and the owned outputs back into Python arrays; everything in between is
// here.
#ifndef REFIMPL_NATIVE_DISPATCH_H_
#define REFIMPL_NATIVE_DISPATCH_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "buffer.h"
#include "client.h"
#include "small_vector.h"

namespace refimpl {

struct InputPlan {
  bool donated = false;
  bool aliased = false;  // the module writes an output into this input's buffer
  // The executable's parameter this input is passed as, or -1: a jit's
  // executable takes only the inputs its program reads (JAX's
  // keep_unused=False), so an unread one is neither transferred nor passed.
  int param = -1;
};

// The donation and aliasing plan of one compiled signature.
class CallPlan {
 public:
  CallPlan() = default;
  // `aliases[i]`: the output written into input i's buffer, or -1.
  // `kept[i]`: whether input i is a parameter of the executable (empty:
  // every input is, in order).
  // Throws std::invalid_argument on an alias that names no output, two
  // inputs aliased to one output, an aliased input that is not donated, or
  // a donated input that is not kept.
  CallPlan(const std::vector<bool>& donated, const std::vector<int>& aliases,
           std::size_t num_outputs, const std::vector<bool>& kept = {});

  const std::vector<InputPlan>& inputs() const { return inputs_; }
  std::size_t num_outputs() const { return output_sources_.size(); }
  // The donated input whose buffer output j is written into, or -1.
  int output_source(std::size_t j) const { return output_sources_[j]; }
  bool any_donated() const { return any_donated_; }
  // Whether input i is passed to the executable.
  bool kept(std::size_t i) const { return inputs_[i].param >= 0; }
  // How many parameters the executable takes (the kept inputs).
  std::size_t num_params() const { return num_params_; }

 private:
  std::vector<InputPlan> inputs_;
  std::vector<int> output_sources_;
  std::size_t num_params_ = 0;
  bool any_donated_ = false;
};

// One execution's device-side state: the input handles, the aliased inputs
// PJRT must copy (a NumPy view still reads them), and the outputs.
struct Launch {
  SmallVector<PJRT_Buffer*, 16> handles;             // per input
  SmallVector<std::shared_ptr<Buffer>*, 16> owners;  // per input: the array's buffer slot, or null
  SmallVector<std::shared_ptr<Buffer>, 16> keep;     // buffers that must outlive execute
  SmallVector<int64_t, 4> non_donatable;
  SmallVector<PJRT_Buffer*, 8> raw_outputs;
  SmallVector<std::shared_ptr<Buffer>, 8> outputs;

  // Input i is a device array: its buffer slot (the array keeps owning it).
  // Without `may_alias`, an aliased input is passed as non-donatable (PJRT
  // writes the output elsewhere), so the input keeps its memory until the
  // caller decides the call succeeded.
  void BindDeviceInput(const CallPlan& plan, std::size_t i, std::shared_ptr<Buffer>* owner,
                       bool may_alias);
  // Input i is a buffer made for this call (a host value transferred).
  void BindTemporaryInput(std::size_t i, std::shared_ptr<Buffer> buffer);

  // Whether donated input i's memory went to an output (aliased, not copied):
  // the array must not free it.
  bool MemoryTaken(const CallPlan& plan, std::size_t i) const;
};

// The outputs written back into mutable-reference inputs (refimpl's Ref):
// `written[i]` is the output whose value input i takes after the call, or
// -1 (empty: none). Each must be input i's own alias (the reference keeps
// its device memory), donated, and among the last outputs, after the ones
// that form the result. Returns how many outputs form the result; throws
// std::invalid_argument otherwise.
std::size_t ResultOutputsBeforeWriteBacks(const std::vector<int>& written,
                                          const std::vector<bool>& donated,
                                          const std::vector<int>& aliases, std::size_t num_outputs);

class Executable;

// Runs `executable` on the launch's kept inputs into launch->raw_outputs.
void Execute(const Executable& executable, const CallPlan& plan, Launch* launch);

// Owns every output handle. An output written into a donated input's
// buffer takes over that input's Buffer object when nothing else holds it
// (the usual x = f(x) chain keeps one object), instead of a new one.
void OwnOutputs(const CallPlan& plan, const std::shared_ptr<Client>& client, Launch* launch);

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_DISPATCH_H_
