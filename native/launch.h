// The launch state of a cached call that involves no Python: the rules
// shared by jit's and pmap's launches (a storage passed twice with one use
// donated, the per-device pieces of a mapped host value) and pmap's
// replicated launch (one PJRT execute over N devices, serialized with the
// other launches of programs with collectives).
//
// bindings/fast_jit.cc turns Python arguments into these inputs and the
// outputs back into Python arrays; native/dispatch.h holds the single-device
// launch (CallPlan, Launch).
#ifndef REFIMPL_NATIVE_LAUNCH_H_
#define REFIMPL_NATIVE_LAUNCH_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "buffer.h"
#include "executable.h"
#include "pjrt_abi.h"
#include "small_vector.h"

namespace refimpl {

// One use of a storage (a device buffer, or a host object) by a call.
struct StorageUse {
  const void* storage;
  bool donated;
};

// Whether one storage is used twice where one of the uses is donated (jit
// and pmap refuse such a call before anything runs). Reorders `uses`.
bool DonatedStorageRepeats(StorageUse* uses, std::size_t count);

// The per-device piece of a host array mapped along `axis`: the dims and
// byte strides of the array without that axis (piece m starts at
// data + m * strides[axis]).
void DropAxis(const std::int64_t* dims, const std::int64_t* strides, int ndim, int axis,
              SmallVector<std::int64_t, 8>* piece_dims,
              SmallVector<std::int64_t, 8>* piece_strides);

// What a pmap entry adds to a cached call: one executable over N replicas.
struct ReplicaPlan {
  std::vector<int> devices;   // client device indices, in replica order
  std::vector<int> in_axes;   // per input leaf: the axis split over the devices, -1: replicated
  std::vector<int> out_axes;  // per output: the stacking axis, -1: one copy (device 0's)
  std::vector<int> aliases;   // per input leaf: the output written into its buffer, or -1
  bool has_collectives = true;

  // Throws std::invalid_argument unless the plan fits a call of
  // `num_inputs` leaves and an executable compiled for `num_replicas`
  // devices with `num_outputs` outputs.
  void Check(std::size_t num_inputs, std::size_t num_replicas, std::size_t num_outputs) const;
  // The global dims of output j, whose per-device dims are `dims`: the
  // device axis inserted at out_axes[j]; false for an unmapped output.
  bool GlobalDims(std::size_t j, std::vector<std::int64_t>* dims) const;
};

// One replicated call's per-device argument lists and the buffers made for it.
struct ReplicatedLaunch {
  std::size_t num_devices = 0;
  std::size_t num_args = 0;
  std::vector<PJRT_Buffer*> handles;             // [device * num_args + arg]
  std::vector<std::shared_ptr<Buffer>> keep;     // inputs, alive across execute
  std::vector<std::int64_t> non_donatable;       // aliased inputs PJRT must copy
  std::vector<std::shared_ptr<Buffer>> outputs;  // [device * num_outputs + output], owned

  ReplicatedLaunch(std::size_t devices, std::size_t args)
      : num_devices(devices), num_args(args), handles(devices * args, nullptr) {}
  PJRT_Buffer*& at(std::size_t device, std::size_t arg) { return handles[device * num_args + arg]; }
};

// Runs `executable` once over the launch's devices (ONE PJRT execute) and
// owns its outputs. A program with collectives first waits for the outputs
// of the previous such launch: with two in flight, XLA's CPU client can
// start some replicas of each and none can finish (their all-reduce waits
// for threads busy with the other launch; XLA aborts after 40 s). Blocks;
// call without the host language's lock (the bindings release the GIL).
void ExecuteReplicated(const Executable& executable, bool has_collectives,
                       ReplicatedLaunch* launch);

// Runs a program with no communication between devices as one
// single-device executable per device (`per_device[d]` compiled for the
// launch's device d), one execute after another on this thread, and owns
// their outputs. For a small program this is several times faster than
// ExecuteReplicated: XLA's CPU client hands each device of one multi-device
// execute to a thread of its pool and waits for all of them, while a
// single-device execute of a cheap program runs on the caller's thread. A
// program with collectives cannot be split so (each device waits for the
// others). On an error the outputs made so far are released with `launch`.
// Blocks; call without the host language's lock.
void ExecuteLocal(const std::vector<std::shared_ptr<Executable>>& per_device,
                  ReplicatedLaunch* launch);

// Throws std::invalid_argument unless `per_device` are single-device
// executables of `spmd`'s client, the d-th on spmd's d-th device, each with
// spmd's number of outputs (what ExecuteLocal needs to replace ExecuteReplicated).
void CheckLocalExecutables(const Executable& spmd,
                           const std::vector<std::shared_ptr<Executable>>& per_device);

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_LAUNCH_H_
