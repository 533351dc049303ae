#include "fast_sharded.h"

#include <pybind11/stl.h>

#include <structmember.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../native/executable.h"
#include "../native/launch.h"
#include "../native/small_vector.h"
#include "host_callback.h"
#include "launch_pins.h"
#include "matmul_precision.h"
#include "numpy_interop.h"
#include "pjrt_array.h"
#include "py_errors.h"

namespace py = pybind11;

namespace refimpl {
namespace bindings {

namespace {

// ============================================================ Python context

// MeshArray's slots, read and written through CPython's member protocol
// (PyMember_GetOne/SetOne with the slots' own descriptors: no Python code
// runs, and nothing here depends on where a slot lies in the object).
enum Slot { kShards = 0, kSharding, kAval, kIndices, kDevices, kKey, kNumSlots };
constexpr const char* kSlotNames[kNumSlots] = {"_shards",  "_sharding", "_aval",
                                               "_indices", "_devices",  "_key"};

// What a call reads from refimpl's Python modules, handed over once by
// refimpl.backends.pjrt.spmd (references live for the process).
struct Context {
  py::object mesh_array_type;              // refimpl.transforms.sharded.MeshArray
  py::object slot_descriptors[kNumSlots];  // keep each member's definition alive
  PyMemberDef* members[kNumSlots] = {};
  py::object builders;       // tracing._builders: non-empty while tracing
  py::object config_values;  // config._values
  py::object s_backend;
  py::object s_pjrt;
  py::object s_enable_x64;
  py::object s_disable_jit;
};
// Never destroyed: its references must not be dropped after finalization.
Context& g_ctx = *new Context();
bool g_installed = false;

// A MeshArray's slot value, or an empty object when the slot is unset.
py::object GetSlot(PyObject* object, Slot slot) {
  PyObject* value = PyMember_GetOne(reinterpret_cast<const char*>(object), g_ctx.members[slot]);
  if (value == nullptr) {  // an unset slot: AttributeError, which the caller reads as a miss
    PyErr_Clear();
    return py::object();
  }
  return py::reinterpret_steal<py::object>(value);
}

// Set a MeshArray's slot (the object keeps its own reference to `value`).
void SetSlot(PyObject* object, Slot slot, PyObject* value) {
  if (PyMember_SetOne(reinterpret_cast<char*>(object), g_ctx.members[slot], value) != 0) {
    throw py::error_already_set();
  }
}

// ============================================================ entries

struct OutputPlan {
  const ArrayMeta* shard_meta = nullptr;  // the type of each device's block
  py::object sharding;                    // None: unspecified (device 0's block, alone)
  py::object aval;
  py::object devices;  // MeshArray._devices / _indices / _key of the output
  py::object indices;
  py::object key;
};

enum OutShape : uint8_t { kOneLeaf = 0, kFlatTuple, kFlatList, kOtherTree };

// One plan (refimpl.backends.pjrt.spmd.PlanSpec) of the fallback.
struct ShardedEntry {
  std::shared_ptr<Executable> executable;
  // Non-empty for a program without communication between devices: one
  // single-device executable per mesh position, run instead (ExecuteLocal).
  std::vector<std::shared_ptr<Executable>> local;
  std::vector<int> device_indices;       // per mesh position m: the client's device index
  std::vector<int64_t> structure;        // the arguments' structure words (PlanSpec.in_structure)
  std::vector<py::object> in_keys;       // per argument leaf: its layout key (compared by identity)
  std::vector<std::vector<int>> orders;  // per argument: the block index device m reads
  std::vector<bool> donated;             // per argument
  bool any_donated = false;
  py::object where;  // "jit(f)": the name a donated argument's error gives
  std::vector<OutputPlan> outputs;
  OutShape out_shape = kOneLeaf;
  py::object unflatten;  // kOtherTree: the output PyTreeDef's unflatten(list)
  bool x64 = false;
  uint64_t precision = 0;  // the default matmul precision's key (matmul_precision.h)
};

using EntryPtr = std::shared_ptr<ShardedEntry>;

// A handful of signatures per function; the oldest goes first.
constexpr std::size_t kMaxEntries = 8;

struct FastShardedObject {
  PyObject_HEAD vectorcallfunc vectorcall;
  py::object fallback;  // refimpl.transforms.sharded.ShardedJit
  py::object name;
  py::object dict;     // the instance __dict__ (tp_dictoffset)
  PyObject* weakrefs;  // not a reference
  bool follow_config_backend;
  std::vector<EntryPtr>* entries;  // owned; most recently added last
  uint64_t hits;
  uint64_t slow_calls;
};
static_assert(sizeof(py::object) == sizeof(PyObject*),
              "CPython reads and writes FastSharded's __dict__ slot as a PyObject*");

// ============================================================ a call

PyObject* SlowCall(FastShardedObject* fn, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  ++fn->slow_calls;
  return PyObject_Vectorcall(fn->fallback.ptr(), args, nargsf, kwnames);
}

bool UseFastPath(const FastShardedObject* fn) {
  if (PyList_GET_SIZE(g_ctx.builders.ptr()) != 0) return false;  // inside a trace
  PyObject* values = g_ctx.config_values.ptr();
  PyObject* disabled = PyDict_GetItemWithError(values, g_ctx.s_disable_jit.ptr());
  if (disabled == nullptr && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  if (disabled != nullptr && disabled != Py_False) return false;
  if (fn->follow_config_backend) {
    PyObject* backend = PyDict_GetItemWithError(values, g_ctx.s_backend.ptr());
    if (backend == nullptr) {
      PyErr_Clear();
      return false;
    }
    if (backend != g_ctx.s_pjrt.ptr() &&
        (!PyUnicode_Check(backend) || PyUnicode_Compare(backend, g_ctx.s_pjrt.ptr()) != 0)) {
      return false;
    }
  }
  return !InHostCallback();  // the Python route keeps its own rules there
}

// The positional arguments flattened: their MeshArray leaves and the
// structure words (PlanSpec.in_structure: 0 a leaf, 1 n a tuple, 2 n a
// list). Borrowed: the caller's arguments hold every object.
struct FlatArgs {
  SmallVector<int64_t, 16> words;
  SmallVector<PyObject*, 8> leaves;
};

// False for anything but exact tuples, lists and MeshArrays (the fallback
// flattens other pytrees), and past a small depth.
bool FlattenArg(PyObject* x, int depth, FlatArgs* flat) {
  if (reinterpret_cast<PyObject*>(Py_TYPE(x)) == g_ctx.mesh_array_type.ptr()) {
    flat->words.push_back(0);
    flat->leaves.push_back(x);
    return true;
  }
  if (depth >= 8) return false;
  const bool tuple = PyTuple_CheckExact(x);
  if (!tuple && !PyList_CheckExact(x)) return false;
  const Py_ssize_t n = tuple ? PyTuple_GET_SIZE(x) : PyList_GET_SIZE(x);
  flat->words.push_back(tuple ? 1 : 2);
  flat->words.push_back(n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    // (no Python code runs here, so a list cannot change under the walk)
    if (!FlattenArg(tuple ? PyTuple_GET_ITEM(x, i) : PyList_GET_ITEM(x, i), depth + 1, flat)) {
      return false;
    }
  }
  return true;
}

EntryPtr Find(const FastShardedObject* fn, const FlatArgs& flat, bool x64, uint64_t precision) {
  const std::size_t num_words = flat.words.size();
  const std::size_t num_leaves = flat.leaves.size();
  const std::vector<EntryPtr>& entries = *fn->entries;
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const ShardedEntry& entry = **it;
    if (entry.x64 != x64 || entry.precision != precision || entry.in_keys.size() != num_leaves ||
        entry.structure.size() != num_words) {
      continue;
    }
    bool same = true;
    for (std::size_t w = 0; w < num_words && same; ++w) same = flat.words[w] == entry.structure[w];
    for (std::size_t i = 0; i < num_leaves && same; ++i) {
      same = GetSlot(flat.leaves[i], kKey).ptr() == entry.in_keys[i].ptr();
    }
    if (same) return *it;
  }
  return nullptr;
}

// The blocks' buffers, per device, pinned for the launch; false (nothing
// ran, no error set) when a block is not what the entry expects or is
// deleted: the fallback then reports or handles the call.
bool BindBlocks(const ShardedEntry& entry, PyObject* const* args, Py_ssize_t nargs,
                ReplicatedLaunch* launch, LaunchPins* pins) {
  const Client* client = entry.executable->client().get();
  const std::size_t ndev = entry.device_indices.size();
  SmallVector<StorageUse, 16> uses;  // (donating calls) the repeated-donation check
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    py::object shards_list = GetSlot(args[i], kShards);
    PyObject* shards = shards_list.ptr();
    if (shards == nullptr || !PyList_CheckExact(shards)) return false;
    const Py_ssize_t count = PyList_GET_SIZE(shards);
    if (static_cast<std::size_t>(count) != ndev) return false;
    const std::vector<int>& order = entry.orders[i];
    for (std::size_t m = 0; m < ndev; ++m) {
      if (order[m] >= count) return false;
      PyObject* block = PyList_GET_ITEM(shards, order[m]);
      if (Py_TYPE(block) != PjrtArrayType()) return false;
      auto* array = reinterpret_cast<PjrtArrayObject*>(block);
      if (array->shards != nullptr || !IsLive(array)) return false;
      const std::shared_ptr<Buffer>& buffer = array->buffer;
      if (buffer->client().get() != client || array->device_index != entry.device_indices[m]) {
        return false;
      }
      if (entry.any_donated) {
        uses.push_back({buffer.get(), entry.donated[i]});
        continue;  // pinned below, once no storage repeats
      }
      if (!pins->Read(buffer) || buffer->IsDeleted()) return false;
      launch->at(m, static_cast<std::size_t>(i)) = buffer->raw();
      launch->keep.push_back(buffer);
    }
  }
  if (!entry.any_donated) return true;
  // One storage passed twice with a donation: jit's ValueError, from Python.
  if (DonatedStorageRepeats(uses.data(), uses.size())) return false;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    py::object shards_list = GetSlot(args[i], kShards);
    PyObject* shards = shards_list.ptr();  // (the list checked above; no Python ran since)
    const bool donated = entry.donated[i];
    bool may_alias = true;  // false: PJRT must copy the blocks (another launch reads one)
    for (std::size_t m = 0; m < ndev; ++m) {
      auto* array = reinterpret_cast<PjrtArrayObject*>(PyList_GET_ITEM(shards, entry.orders[i][m]));
      const std::shared_ptr<Buffer>& buffer = array->buffer;
      // (as _pmap_launch: a claimed buffer is another launch's donation)
      const bool pinned = donated ? pins->Donate(buffer, &may_alias) : pins->Read(buffer);
      if (!pinned || buffer->IsDeleted()) return false;
      may_alias = may_alias && buffer->external_references() == 0;
      launch->at(m, static_cast<std::size_t>(i)) = buffer->raw();
      launch->keep.push_back(buffer);
    }
    if (donated && !may_alias) launch->non_donatable.push_back(static_cast<int64_t>(i));
  }
  return true;
}

// Each donated argument's blocks deleted as donated to the call (as
// MeshArray.mark_donated): their buffers went to the execute.
void MarkArgumentsDonated(const ShardedEntry& entry, PyObject* const* args, Py_ssize_t nargs) {
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (!entry.donated[i]) continue;
    // (re-read: another thread may have replaced the list while the GIL was released)
    py::object shards_list = GetSlot(args[i], kShards);
    PyObject* shards = shards_list.ptr();
    if (shards == nullptr || !PyList_CheckExact(shards)) continue;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(shards); ++k) {
      PyObject* block = PyList_GET_ITEM(shards, k);
      if (Py_TYPE(block) != PjrtArrayType()) continue;
      MarkDonated(reinterpret_cast<PjrtArrayObject*>(block), entry.where.ptr(),
                  /*memory_taken=*/false);
    }
  }
}

// A MeshArray over `blocks` (stolen), laid out as `out` says (new reference, or null).
PyObject* MakeMeshArray(const OutputPlan& out, PyObject* blocks) {
  auto* type = reinterpret_cast<PyTypeObject*>(g_ctx.mesh_array_type.ptr());
  PyObject* array = type->tp_alloc(type, 0);  // as MeshArray.__new__: every slot unset
  if (array == nullptr) {
    Py_DECREF(blocks);
    return nullptr;
  }
  py::object owned_blocks = py::reinterpret_steal<py::object>(blocks);
  py::object owned_array = py::reinterpret_steal<py::object>(array);
  try {
    SetSlot(array, kShards, owned_blocks.ptr());
    SetSlot(array, kSharding, out.sharding.ptr());
    SetSlot(array, kAval, out.aval.ptr());
    SetSlot(array, kDevices, out.devices.ptr());
    SetSlot(array, kIndices, out.indices.ptr());
    SetSlot(array, kKey, out.key.ptr());
  } catch (py::error_already_set& error) {
    error.restore();
    return nullptr;
  }
  return owned_array.release().ptr();
}

// Output j: a MeshArray of per-device arrays, or device 0's array (new reference, or null).
PyObject* MakeOutput(const ShardedEntry& entry, const ReplicatedLaunch& launch, std::size_t j) {
  const OutputPlan& out = entry.outputs[j];
  const std::size_t num_outputs = entry.outputs.size();
  if (out.sharding.is_none()) {
    return MakePjrtArray(launch.outputs[j], out.shard_meta, entry.device_indices[0], true);
  }
  const std::size_t ndev = launch.num_devices;
  PyObject* blocks = PyList_New(static_cast<Py_ssize_t>(ndev));
  if (blocks == nullptr) return nullptr;
  for (std::size_t m = 0; m < ndev; ++m) {
    PyObject* block = MakePjrtArray(launch.outputs[m * num_outputs + j], out.shard_meta,
                                    entry.device_indices[m], true);
    if (block == nullptr) {
      Py_DECREF(blocks);
      return nullptr;
    }
    PyList_SET_ITEM(blocks, static_cast<Py_ssize_t>(m), block);
  }
  return MakeMeshArray(out, blocks);
}

// The result pytree (new reference, or null).
PyObject* MakeResult(const ShardedEntry& entry, const ReplicatedLaunch& launch) {
  const std::size_t n = entry.outputs.size();
  if (entry.out_shape == kOneLeaf) return MakeOutput(entry, launch, 0);
  PyObject* items = entry.out_shape == kFlatTuple ? PyTuple_New(static_cast<Py_ssize_t>(n))
                                                  : PyList_New(static_cast<Py_ssize_t>(n));
  if (items == nullptr) return nullptr;
  for (std::size_t j = 0; j < n; ++j) {
    PyObject* item = MakeOutput(entry, launch, j);
    if (item == nullptr) {
      Py_DECREF(items);
      return nullptr;
    }
    if (entry.out_shape == kFlatTuple) {
      PyTuple_SET_ITEM(items, static_cast<Py_ssize_t>(j), item);
    } else {
      PyList_SET_ITEM(items, static_cast<Py_ssize_t>(j), item);
    }
  }
  if (entry.out_shape != kOtherTree) return items;
  PyObject* built = PyObject_CallOneArg(entry.unflatten.ptr(), items);
  Py_DECREF(items);
  return built;
}

// Runs a matched entry: the result, null with a Python error, or null with
// *slow set (nothing ran).
PyObject* Run(FastShardedObject* fn, const ShardedEntry& entry, PyObject* const* args,
              Py_ssize_t nargs, bool* slow) {
  LaunchPins pins;  // released last, with the GIL held
  ReplicatedLaunch launch(entry.device_indices.size(), static_cast<std::size_t>(nargs));
  if (!BindBlocks(entry, args, nargs, &launch, &pins)) {
    *slow = true;
    return nullptr;
  }
  try {
    py::gil_scoped_release release;
    if (!entry.local.empty()) {
      ExecuteLocal(entry.local, &launch);
    } else {
      // Programs partitioned by XLA may hold collectives: serialized as pmap's.
      ExecuteReplicated(*entry.executable, /*has_collectives=*/true, &launch);
    }
  } catch (...) {
    SetPythonErrorFromCurrentException();
    return nullptr;
  }
  // The execute ran: the donated blocks are gone whatever happens next.
  if (entry.any_donated) MarkArgumentsDonated(entry, args, nargs);
  PyObject* result = MakeResult(entry, launch);
  if (result != nullptr) ++fn->hits;
  return result;
}

PyObject* FastShardedCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* fn = reinterpret_cast<FastShardedObject*>(self);
  const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if ((kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) || fn->entries->empty() ||
      !UseFastPath(fn)) {
    return SlowCall(fn, args, nargsf, kwnames);
  }
  const bool x64 =
      PyDict_GetItemWithError(g_ctx.config_values.ptr(), g_ctx.s_enable_x64.ptr()) == Py_True;
  FlatArgs flat;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (!FlattenArg(args[i], 0, &flat)) return SlowCall(fn, args, nargsf, kwnames);
  }
  // (held: another thread may replace the entries while the GIL is released)
  EntryPtr entry = Find(fn, flat, x64, MatmulPrecisionKey());
  if (!entry) return SlowCall(fn, args, nargsf, kwnames);
  // Held too: another thread may take a leaf out of a list argument meanwhile.
  SmallVector<py::object, 8> held;
  for (PyObject* leaf : flat.leaves) held.push_back(py::reinterpret_borrow<py::object>(leaf));
  bool slow = false;
  PyObject* result =
      Run(fn, *entry, flat.leaves.data(), static_cast<Py_ssize_t>(flat.leaves.size()), &slow);
  if (slow) return SlowCall(fn, args, nargsf, kwnames);
  return result;
}

// ============================================================ installing a plan

// Reads a PlanSpec (by field) into an entry; null when its arguments'
// structure is one the C++ path does not flatten.
EntryPtr EntryFromSpec(const py::handle spec) {
  auto entry = std::make_shared<ShardedEntry>();
  py::object structure = spec.attr("in_structure");
  if (structure.is_none()) return nullptr;
  entry->structure = structure.cast<std::vector<int64_t>>();
  entry->donated = spec.attr("donated").cast<std::vector<bool>>();
  for (bool donated : entry->donated) entry->any_donated = entry->any_donated || donated;
  entry->where = spec.attr("where");
  if (!PyUnicode_Check(entry->where.ptr())) throw py::type_error("FastSharded: where must be str");
  entry->executable = spec.attr("executable").cast<std::shared_ptr<Executable>>();
  entry->device_indices = spec.attr("device_indices").cast<std::vector<int>>();
  const std::size_t ndev = entry->device_indices.size();
  if (ndev == 0 || entry->executable->device_indices().size() != ndev) {
    throw py::value_error("FastSharded: the executable is not compiled for the plan's devices");
  }
  py::object local = spec.attr("local_executables");
  if (!local.is_none()) {
    entry->local = local.cast<std::vector<std::shared_ptr<Executable>>>();
    try {
      CheckLocalExecutables(*entry->executable, entry->local);
    } catch (const std::invalid_argument& error) {
      throw py::value_error(std::string("FastSharded: ") + error.what());
    }
    // (a local plan never donates: its executables alias nothing)
    if (entry->any_donated) throw py::value_error("FastSharded: a local plan with donation");
  }
  for (py::handle key : spec.attr("in_keys")) {
    entry->in_keys.push_back(py::reinterpret_borrow<py::object>(key));
  }
  entry->orders = spec.attr("in_orders").cast<std::vector<std::vector<int>>>();
  if (entry->orders.size() != entry->in_keys.size() ||
      entry->donated.size() != entry->in_keys.size()) {
    throw py::value_error("FastSharded: one block order and donation flag per argument");
  }
  for (const std::vector<int>& order : entry->orders) {
    if (order.size() != ndev) throw py::value_error("FastSharded: one block per device");
    for (int k : order) {
      if (k < 0) throw py::value_error("FastSharded: a negative block index");
    }
  }
  for (py::handle output : spec.attr("outputs")) {
    py::tuple o = output.cast<py::tuple>();
    // (dtype, shard shape, weak_type, sharding | None, aval, devices, indices, key)
    if (o.size() != 8) throw py::value_error("FastSharded: an output is described by 8 fields");
    py::dtype dtype = py::dtype::from_args(o[0]);
    std::vector<int64_t> dims = o[1].cast<std::vector<int64_t>>();
    OutputPlan out;
    out.shard_meta =
        InternArrayMeta(ElementTypeFromDtype(dtype), dims.data(), dims.size(), o[2].cast<bool>());
    out.sharding = o[3];
    out.aval = o[4];
    out.devices = o[5];
    out.indices = o[6];
    out.key = o[7];
    if (!out.sharding.is_none() &&
        (!PyTuple_Check(out.devices.ptr()) || !PyTuple_Check(out.indices.ptr()))) {
      throw py::value_error("FastSharded: an output's devices and indices must be tuples");
    }
    entry->outputs.push_back(std::move(out));
  }
  if (entry->outputs.size() != entry->executable->num_outputs() || entry->outputs.empty()) {
    throw py::value_error("FastSharded: the executable's output count differs from the plan's");
  }
  py::object tree = spec.attr("out_tree");
  entry->out_shape = kOtherTree;
  if (tree.attr("is_leaf").cast<bool>()) {
    entry->out_shape = kOneLeaf;
  } else {
    py::object node = tree.attr("node_data")();
    bool flat = true;
    for (py::handle child : tree.attr("children")())
      flat = flat && child.attr("is_leaf").cast<bool>();
    py::handle node_type = node.cast<py::tuple>()[0];
    if (flat && node_type.ptr() == reinterpret_cast<PyObject*>(&PyTuple_Type)) {
      entry->out_shape = kFlatTuple;
    } else if (flat && node_type.ptr() == reinterpret_cast<PyObject*>(&PyList_Type)) {
      entry->out_shape = kFlatList;
    }
  }
  if (entry->out_shape == kOneLeaf && entry->outputs.size() != 1) {
    throw py::value_error("FastSharded: a one-leaf output tree with several outputs");
  }
  entry->unflatten = tree.attr("unflatten");
  entry->x64 =
      PyDict_GetItemWithError(g_ctx.config_values.ptr(), g_ctx.s_enable_x64.ptr()) == Py_True;
  entry->precision = MatmulPrecisionKey();
  return entry;
}

PyObject* AddEntry(PyObject* self, PyObject* spec) {
  auto* fn = reinterpret_cast<FastShardedObject*>(self);
  try {
    EntryPtr entry = EntryFromSpec(spec);
    if (!entry) Py_RETURN_FALSE;
    std::vector<EntryPtr>& entries = *fn->entries;
    // A plan for the same signature (the Python route made another one,
    // e.g. after a call it had to handle) replaces the old entry.
    for (auto it = entries.begin(); it != entries.end(); ++it) {
      const ShardedEntry& old = **it;
      if (old.x64 != entry->x64 || old.precision != entry->precision ||
          old.in_keys.size() != entry->in_keys.size() || old.structure != entry->structure) {
        continue;
      }
      bool same = true;
      for (std::size_t i = 0; i < old.in_keys.size() && same; ++i) {
        same = old.in_keys[i].ptr() == entry->in_keys[i].ptr();
      }
      if (same) {
        entries.erase(it);
        break;
      }
    }
    if (entries.size() >= kMaxEntries) entries.erase(entries.begin());
    entries.push_back(std::move(entry));
  } catch (...) {
    SetPythonErrorFromCurrentException();
    return nullptr;
  }
  Py_RETURN_TRUE;
}

// ============================================================ the type's plumbing

PyObject* FastShardedNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* names[] = {"fallback", "follow_config_backend", nullptr};
  PyObject* fallback;
  int follow = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Op:FastSharded", const_cast<char**>(names),
                                   &fallback, &follow)) {
    return nullptr;
  }
  if (!g_installed) {
    PyErr_SetString(PyExc_RuntimeError,
                    "FastSharded: refimpl.backends.pjrt.spmd has not been imported yet");
    return nullptr;
  }
  auto* fn = reinterpret_cast<FastShardedObject*>(type->tp_alloc(type, 0));
  if (fn == nullptr) return nullptr;
  fn->vectorcall = FastShardedCall;
  fn->weakrefs = nullptr;
  fn->follow_config_backend = follow != 0;
  fn->hits = fn->slow_calls = 0;
  new (&fn->fallback) py::object(py::reinterpret_borrow<py::object>(fallback));
  new (&fn->name) py::object();
  new (&fn->dict) py::object();
  fn->entries = new std::vector<EntryPtr>();
  PyObject* name = PyObject_GetAttrString(fallback, "__name__");
  if (name == nullptr) {
    PyErr_Clear();
    name = PyUnicode_FromString("<function>");
  }
  fn->name = py::reinterpret_steal<py::object>(name);
  return reinterpret_cast<PyObject*>(fn);
}

int FastShardedTraverse(PyObject* self, visitproc visit, void* arg) {
  auto* fn = reinterpret_cast<FastShardedObject*>(self);
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(fn->fallback.ptr());
  Py_VISIT(fn->dict.ptr());
  if (fn->entries != nullptr) {
    for (const EntryPtr& entry : *fn->entries) {
      for (const py::object& key : entry->in_keys) Py_VISIT(key.ptr());
      for (const OutputPlan& out : entry->outputs) {
        Py_VISIT(out.sharding.ptr());
        Py_VISIT(out.aval.ptr());
        Py_VISIT(out.devices.ptr());
        Py_VISIT(out.indices.ptr());
        Py_VISIT(out.key.ptr());
      }
      Py_VISIT(entry->unflatten.ptr());
      Py_VISIT(entry->where.ptr());
    }
  }
  return 0;
}

int FastShardedClear(PyObject* self) {
  auto* fn = reinterpret_cast<FastShardedObject*>(self);
  if (fn->entries != nullptr) {
    std::vector<EntryPtr> old;
    old.swap(*fn->entries);  // destroyed after the slot is empty
  }
  fn->fallback = py::object();
  fn->dict = py::object();
  return 0;
}

void FastShardedDealloc(PyObject* self) {
  auto* fn = reinterpret_cast<FastShardedObject*>(self);
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  if (fn->weakrefs != nullptr) PyObject_ClearWeakRefs(self);
  FastShardedClear(self);
  delete fn->entries;
  fn->entries = nullptr;
  fn->dict.~object();
  fn->name.~object();
  fn->fallback.~object();
  type->tp_free(self);
  Py_DECREF(type);
}

// Attributes it does not have come from the ShardedJit (lower, trace,
// _plans, _spmd_cache, ...).
PyObject* FastShardedGetAttr(PyObject* self, PyObject* name) {
  PyObject* found = PyObject_GenericGetAttr(self, name);
  if (found != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
  auto* fn = reinterpret_cast<FastShardedObject*>(self);
  if (!fn->fallback) return nullptr;
  PyErr_Clear();
  return PyObject_GetAttr(fn->fallback.ptr(), name);
}

PyObject* FastShardedRepr(PyObject* self) {
  return PyUnicode_FromFormat("<Jitted %S>",
                              reinterpret_cast<FastShardedObject*>(self)->name.ptr());
}

PyObject* ClearCache(PyObject* self, PyObject*) {
  auto* fn = reinterpret_cast<FastShardedObject*>(self);
  std::vector<EntryPtr> old;
  old.swap(*fn->entries);
  if (!fn->fallback) Py_RETURN_NONE;
  return PyObject_CallMethod(fn->fallback.ptr(), "clear_cache", nullptr);
}

PyObject* FastStats(PyObject* self, PyObject*) {
  auto* fn = reinterpret_cast<FastShardedObject*>(self);
  return Py_BuildValue("{s:K,s:K,s:n}", "hits", static_cast<unsigned long long>(fn->hits), "slow",
                       static_cast<unsigned long long>(fn->slow_calls), "entries",
                       static_cast<Py_ssize_t>(fn->entries->size()));
}

PyObject* GetFallback(PyObject* self, void*) {
  const py::object& fallback = reinterpret_cast<FastShardedObject*>(self)->fallback;
  if (!fallback) Py_RETURN_NONE;
  return fallback.inc_ref().ptr();
}

PyMethodDef kMethods[] = {
    {"_add_entry", AddEntry, METH_O,
     "Installs a plan's PlanSpec as a C++ entry; False when its arguments' structure is not "
     "tuples and lists of MeshArrays."},
    {"clear_cache", ClearCache, METH_NOARGS,
     "Forgets the C++ entries, then clears the fallback's cache."},
    {"_fast_stats", FastStats, METH_NOARGS,
     "Counters: calls run by the C++ path (hits), calls handed to the ShardedJit (slow), and "
     "the number of C++ entries."},
    {nullptr, nullptr, 0, nullptr},
};

PyMemberDef kMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FastShardedObject, vectorcall), READONLY,
     nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(FastShardedObject, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(FastShardedObject, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyGetSetDef kGetSet[] = {
    {"_fallback", GetFallback, nullptr, "The ShardedJit behind the C++ path.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

py::object Interned(const char* text) {
  PyObject* s = PyUnicode_InternFromString(text);
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(s);
}

void Install(py::object mesh_array_type, py::object builders, py::object config_values) {
  if (!PyType_Check(mesh_array_type.ptr()) || !PyList_Check(builders.ptr()) ||
      !PyDict_Check(config_values.ptr())) {
    throw py::type_error(
        "_install_fast_sharded(mesh_array_type: type, builders: list, config_values: dict)");
  }
  py::object descriptors[kNumSlots];
  PyMemberDef* members[kNumSlots];
  const char* const* slot_names = kSlotNames;
  for (int s = 0; s < kNumSlots; ++s) {
    py::object descr = mesh_array_type.attr(slot_names[s]);
    if (Py_TYPE(descr.ptr()) != &PyMemberDescr_Type) {
      throw py::type_error(std::string("_install_fast_sharded: MeshArray has no slot ") +
                           slot_names[s]);
    }
    PyMemberDef* member = reinterpret_cast<PyMemberDescrObject*>(descr.ptr())->d_member;
    if (member->type != T_OBJECT_EX || (member->flags & READONLY) != 0) {
      throw py::type_error(std::string("_install_fast_sharded: ") + slot_names[s] +
                           " is not a writable object slot");
    }
    descriptors[s] = descr;
    members[s] = member;
  }
  for (int s = 0; s < kNumSlots; ++s) {
    g_ctx.slot_descriptors[s] = descriptors[s];
    g_ctx.members[s] = members[s];
  }
  g_ctx.mesh_array_type = mesh_array_type;
  g_ctx.builders = builders;
  g_ctx.config_values = config_values;
  g_ctx.s_backend = Interned("backend");
  g_ctx.s_pjrt = Interned("pjrt");
  g_ctx.s_enable_x64 = Interned("enable_x64");
  g_ctx.s_disable_jit = Interned("disable_jit");
  g_installed = true;
}

}  // namespace

void RegisterFastSharded(py::module_& m) {
  static PyType_Slot slots[] = {
      {Py_tp_doc, const_cast<char*>("jit(f, in_shardings=..., out_shardings=...) on pjrt: cached "
                                    "sharded calls in C++ in front of the ShardedJit (see "
                                    "bindings/fast_sharded.h).")},
      {Py_tp_new, reinterpret_cast<void*>(FastShardedNew)},
      {Py_tp_dealloc, reinterpret_cast<void*>(FastShardedDealloc)},
      {Py_tp_traverse, reinterpret_cast<void*>(FastShardedTraverse)},
      {Py_tp_clear, reinterpret_cast<void*>(FastShardedClear)},
      {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
      {Py_tp_getattro, reinterpret_cast<void*>(FastShardedGetAttr)},
      {Py_tp_repr, reinterpret_cast<void*>(FastShardedRepr)},
      {Py_tp_methods, kMethods},
      {Py_tp_members, kMembers},
      {Py_tp_getset, kGetSet},
      {0, nullptr},
  };
  static PyType_Spec spec = {
      "refimpl._pjrt.FastSharded",
      sizeof(FastShardedObject),
      0,
      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
      slots,
  };
  PyObject* type = PyType_FromSpec(&spec);
  if (type == nullptr) throw py::error_already_set();
  m.add_object("FastSharded", py::handle(type));
  Py_DECREF(type);  // the module holds it
  m.def("_install_fast_sharded", &Install, py::arg("mesh_array_type"), py::arg("builders"),
        py::arg("config_values"),
        "Hands the sharded fast path the MeshArray type (its slots are read and written through "
        "their member descriptors), the trace stack and config values. Called once by "
        "refimpl.backends.pjrt.spmd.");
}

}  // namespace bindings
}  // namespace refimpl
