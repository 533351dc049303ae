#include "launch.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

namespace refimpl {

bool DonatedStorageRepeats(StorageUse* uses, std::size_t count) {
  std::sort(uses, uses + count, [](const StorageUse& a, const StorageUse& b) {
    return a.storage < b.storage || (a.storage == b.storage && a.donated < b.donated);
  });
  for (std::size_t k = 1; k < count; ++k) {
    if (uses[k].storage == uses[k - 1].storage && (uses[k].donated || uses[k - 1].donated)) {
      return true;
    }
  }
  return false;
}

void DropAxis(const std::int64_t* dims, const std::int64_t* strides, int ndim, int axis,
              SmallVector<std::int64_t, 8>* piece_dims,
              SmallVector<std::int64_t, 8>* piece_strides) {
  for (int d = 0; d < ndim; ++d) {
    if (d == axis) continue;
    piece_dims->push_back(dims[d]);
    piece_strides->push_back(strides[d]);
  }
}

void ReplicaPlan::Check(std::size_t num_inputs, std::size_t num_replicas,
                        std::size_t num_outputs) const {
  if (in_axes.size() != num_inputs || aliases.size() != num_inputs) {
    throw std::invalid_argument("pmap plan: in_axes and aliases need one entry per input");
  }
  if (devices.empty() || devices.size() != num_replicas) {
    throw std::invalid_argument("pmap plan: the executable is not compiled for those devices");
  }
  if (out_axes.size() != num_outputs) {
    throw std::invalid_argument("pmap plan: out_axes needs one entry per output");
  }
}

bool ReplicaPlan::GlobalDims(std::size_t j, std::vector<std::int64_t>* dims) const {
  const int axis = out_axes[j];
  if (axis < 0) return false;
  if (axis > static_cast<int>(dims->size())) throw std::invalid_argument("pmap plan: bad out axis");
  dims->insert(dims->begin() + axis, static_cast<std::int64_t>(devices.size()));
  return true;
}

namespace {

// The outputs of the last launch with collectives (one per device), which
// the next one waits for. Never destroyed: launches may run at exit.
struct Inflight {
  std::mutex mutex;
  std::vector<std::shared_ptr<Buffer>> buffers;  // guarded by mutex
};
Inflight& ProcessInflight() {
  static auto* inflight = new Inflight();
  return *inflight;
}

void Run(const Executable& executable, ReplicatedLaunch* launch) {
  const std::size_t n = launch->num_devices;
  const std::size_t num_outputs = executable.num_outputs();
  std::vector<PJRT_Buffer*> raw_outputs(n * num_outputs, nullptr);
  std::vector<PJRT_Buffer* const*> argument_lists(n);
  std::vector<PJRT_Buffer**> output_lists(n);
  for (std::size_t m = 0; m < n; ++m) {
    argument_lists[m] = launch->handles.data() + m * launch->num_args;
    output_lists[m] = raw_outputs.data() + m * num_outputs;
  }
  std::sort(launch->non_donatable.begin(), launch->non_donatable.end());
  launch->non_donatable.erase(
      std::unique(launch->non_donatable.begin(), launch->non_donatable.end()),
      launch->non_donatable.end());
  executable.ExecuteReplicatedInto(argument_lists.data(), n, launch->num_args, output_lists.data(),
                                   launch->non_donatable.data(), launch->non_donatable.size());
  launch->outputs.clear();
  for (PJRT_Buffer* raw : raw_outputs) {
    launch->outputs.push_back(std::make_shared<Buffer>(executable.client(), raw));
  }
}

}  // namespace

void ExecuteReplicated(const Executable& executable, bool has_collectives,
                       ReplicatedLaunch* launch) {
  if (!has_collectives) {
    Run(executable, launch);
    return;
  }
  Inflight& inflight = ProcessInflight();
  std::lock_guard<std::mutex> lock(inflight.mutex);
  for (const auto& buffer : inflight.buffers) {
    try {
      buffer->BlockUntilReady();
    } catch (...) {
      // Donated to a later call since (so that call has finished with it).
    }
  }
  Run(executable, launch);
  const std::size_t num_outputs = executable.num_outputs();
  std::vector<std::shared_ptr<Buffer>> firsts;
  if (num_outputs > 0) {
    for (std::size_t m = 0; m < launch->num_devices; ++m) {
      firsts.push_back(launch->outputs[m * num_outputs]);
    }
  }
  inflight.buffers = std::move(firsts);
}

void ExecuteLocal(const std::vector<std::shared_ptr<Executable>>& per_device,
                  ReplicatedLaunch* launch) {
  const std::size_t n = launch->num_devices;
  if (per_device.size() != n || n == 0) {
    throw std::invalid_argument("local launch: one executable per device");
  }
  const std::size_t num_outputs = per_device[0]->num_outputs();
  std::vector<PJRT_Buffer*> raw(num_outputs, nullptr);
  launch->outputs.clear();
  for (std::size_t d = 0; d < n; ++d) {
    const Executable& executable = *per_device[d];
    executable.ExecuteInto(launch->handles.data() + d * launch->num_args, launch->num_args,
                           raw.data(), launch->non_donatable.data(), launch->non_donatable.size());
    for (PJRT_Buffer* buffer : raw) {
      launch->outputs.push_back(std::make_shared<Buffer>(executable.client(), buffer));
    }
  }
}

void CheckLocalExecutables(const Executable& spmd,
                           const std::vector<std::shared_ptr<Executable>>& per_device) {
  const std::vector<int>& devices = spmd.device_indices();
  if (per_device.size() != devices.size()) {
    throw std::invalid_argument("local launch: one executable per device of the program");
  }
  for (std::size_t d = 0; d < devices.size(); ++d) {
    const std::shared_ptr<Executable>& local = per_device[d];
    if (!local || local->client() != spmd.client() || local->device_indices().size() != 1 ||
        local->device_indices()[0] != devices[d] || local->num_outputs() != spmd.num_outputs()) {
      throw std::invalid_argument(
          "local launch: executable " + std::to_string(d) +
          " is not a single-device executable of the program's device with its outputs");
    }
  }
}

}  // namespace refimpl
