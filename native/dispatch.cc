#include "dispatch.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "executable.h"

namespace refimpl {

std::size_t ResultOutputsBeforeWriteBacks(const std::vector<int>& written,
                                          const std::vector<bool>& donated,
                                          const std::vector<int>& aliases,
                                          std::size_t num_outputs) {
  if (written.empty()) return num_outputs;
  const std::size_t n = written.size();
  if (donated.size() != n || aliases.size() != n) {
    throw std::invalid_argument("write-backs: one entry per input is required");
  }
  std::size_t result_outputs = num_outputs;
  for (std::size_t i = 0; i < n; ++i) {
    if (written[i] < 0) continue;
    if (written[i] != aliases[i] || !donated[i]) {
      throw std::invalid_argument("write-backs: a reference's final value must be aliased to it");
    }
    if (result_outputs == 0) throw std::invalid_argument("write-backs: more than the outputs");
    --result_outputs;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (written[i] >= 0 && static_cast<std::size_t>(written[i]) < result_outputs) {
      throw std::invalid_argument("write-backs: the final values must be the last outputs");
    }
  }
  return result_outputs;
}

CallPlan::CallPlan(const std::vector<bool>& donated, const std::vector<int>& aliases,
                   std::size_t num_outputs, const std::vector<bool>& kept)
    : inputs_(donated.size()), output_sources_(num_outputs, -1) {
  if (aliases.size() != donated.size()) {
    throw std::invalid_argument("CallPlan: one alias per input is required");
  }
  if (!kept.empty() && kept.size() != donated.size()) {
    throw std::invalid_argument("CallPlan: one kept flag per input is required");
  }
  for (std::size_t i = 0; i < donated.size(); ++i) {
    InputPlan& input = inputs_[i];
    input.donated = donated[i];
    if (kept.empty() || kept[i]) {
      input.param = static_cast<int>(num_params_++);
    } else if (input.donated) {
      // the caller deletes a donated input: the executable must take it
      throw std::invalid_argument("CallPlan: input " + std::to_string(i) +
                                  " is donated but not kept");
    }
    any_donated_ = any_donated_ || input.donated;
    const int alias = aliases[i];
    if (alias < 0) continue;
    if (static_cast<std::size_t>(alias) >= num_outputs) {
      throw std::invalid_argument("CallPlan: input " + std::to_string(i) +
                                  " is aliased to output " + std::to_string(alias) +
                                  ", which does not exist");
    }
    if (!input.donated) {
      throw std::invalid_argument("CallPlan: input " + std::to_string(i) +
                                  " is aliased but not donated");
    }
    if (output_sources_[alias] >= 0) {
      throw std::invalid_argument("CallPlan: output " + std::to_string(alias) +
                                  " is aliased to two inputs");
    }
    input.aliased = true;
    output_sources_[alias] = static_cast<int>(i);
  }
}

void Launch::BindDeviceInput(const CallPlan& plan, std::size_t i, std::shared_ptr<Buffer>* owner,
                             bool may_alias) {
  const std::shared_ptr<Buffer>& buffer = *owner;
  handles[i] = buffer->raw();
  owners[i] = owner;
  // A NumPy view of the memory (an external reference) also forbids aliasing.
  if (plan.inputs()[i].aliased && (!may_alias || buffer->external_references() > 0)) {
    non_donatable.push_back(static_cast<int64_t>(i));
  }
}

void Launch::BindTemporaryInput(std::size_t i, std::shared_ptr<Buffer> buffer) {
  handles[i] = buffer->raw();
  keep.push_back(std::move(buffer));
}

bool Launch::MemoryTaken(const CallPlan& plan, std::size_t i) const {
  if (!plan.inputs()[i].aliased) return false;
  for (int64_t k : non_donatable) {
    if (k == static_cast<int64_t>(i)) return false;  // PJRT copied it
  }
  return true;
}

void Execute(const Executable& executable, const CallPlan& plan, Launch* launch) {
  launch->raw_outputs.resize(plan.num_outputs());
  if (plan.num_params() == launch->handles.size()) {  // every input is a parameter
    executable.ExecuteInto(launch->handles.data(), launch->handles.size(),
                           launch->raw_outputs.data(), launch->non_donatable.data(),
                           launch->non_donatable.size());
    return;
  }
  SmallVector<PJRT_Buffer*, 16> params;
  for (std::size_t i = 0; i < launch->handles.size(); ++i) {
    if (plan.kept(i)) params.push_back(launch->handles[i]);
  }
  // the non-donatable inputs by their parameter positions (aliased ones are kept)
  SmallVector<int64_t, 4> non_donatable;
  for (int64_t i : launch->non_donatable) {
    non_donatable.push_back(plan.inputs()[static_cast<std::size_t>(i)].param);
  }
  executable.ExecuteInto(params.data(), params.size(), launch->raw_outputs.data(),
                         non_donatable.data(), non_donatable.size());
}

void OwnOutputs(const CallPlan& plan, const std::shared_ptr<Client>& client, Launch* launch) {
  for (std::size_t j = 0; j < plan.num_outputs(); ++j) {
    std::shared_ptr<Buffer> buffer;
    const int source = plan.output_source(j);
    if (source >= 0 && launch->owners[source] != nullptr && launch->MemoryTaken(plan, source)) {
      std::shared_ptr<Buffer>& donor = *launch->owners[source];
      if (donor && donor.use_count() == 1) {
        buffer = std::move(donor);
        buffer->ReplaceHandle(launch->raw_outputs[j]);
      }
    }
    if (!buffer) buffer = std::make_shared<Buffer>(client, launch->raw_outputs[j]);
    launch->outputs.push_back(std::move(buffer));
  }
}

}  // namespace refimpl
