#include "numpy_capi.h"  // first: defines the NumPy C API symbols

#include "fast_jit.h"

#include <pybind11/stl.h>

#include <structmember.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../native/buffer.h"
#include "../native/client.h"
#include "../native/constant_cache.h"
#include "../native/dispatch.h"
#include "../native/executable.h"
#include "../native/launch.h"
#include "../native/scalar_encoding.h"
#include "../native/signature.h"
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

static_assert(sizeof(npy_intp) == sizeof(int64_t), "dims are passed to PJRT as int64");

// Inputs and outputs at least this large release the GIL around execute:
// below it, the GIL round trip costs more than the computation runs.
// (_set_release_gil_bytes changes it, for measurements and tests.)
std::size_t g_release_gil_bytes = 256 * 1024;

// ============================================================ Python context
//
// What the signature needs from refimpl's Python modules, handed over once by
// refimpl.backends.pjrt.arrays at import (all references live for the process).
struct Context {
  py::object registry;        // tree_util._registry: type -> node kind | None
  py::object builders;        // tracing._builders: non-empty while tracing
  py::object config_values;   // config._values
  py::object ref_array_type;  // refimpl.backends.ref.arrays.RefArray
  int bfloat16_num = -1;      // NumPy type number of ml_dtypes.bfloat16
  // refimpl.ref.Ref (a __slots__ class) and the member descriptor of its
  // `_value` slot, read through CPython's member protocol (PyMember_GetOne:
  // no Python code runs, and nothing here depends on the object's layout).
  // Unset (null) until _install_ref_type: Ref arguments then take the
  // Python path. `ref_value` points into `ref_value_descr`, which is kept.
  py::object ref_type;
  py::object ref_value_descr;
  PyMemberDef* ref_value = nullptr;
  // interned names
  py::object s_backend;
  py::object s_enable_x64;
  py::object s_pjrt;
  py::object s_tag;
  py::object s_flatten;
  py::object s_namedtuple;
  py::object s_buffer;
  py::object s_mark_donated;
  py::object s_aval;
  py::object s_weak_type;
  py::object s_check_live;
  py::object s_clear_cache;
};
// Never destroyed: its references must not be dropped after the
// interpreter has finalized.
Context& g_ctx = *new Context();
bool g_installed = false;

// ============================================================ call state
//
// The signature words and leaf kinds are native/signature.h's.

// One argument leaf of a call.
struct Leaf {
  py::object object;  // held for the call
  uint8_t kind;       // LeafKind
  bool donated;
  py::object held;  // kRefLeaf: the PJRT array the Ref held when the signature was built
};

// One call's flattened arguments.
struct CallState {
  Signature signature;  // its handles are borrowed from `owned`
  SmallVector<Leaf, 8> leaves;
  SmallVector<py::object, 8> owned;  // other references held for the call
  bool any_donated = false;
  bool x64 = false;
  uint64_t precision = 0;  // the default matmul precision's key (matmul_precision.h)

  py::handle Keep(py::object object) {
    owned.push_back(std::move(object));
    return owned.back();
  }
};

// ============================================================ cache entries

// How a host leaf becomes the parameter: its element type and NumPy dtype.
struct LeafPlan {
  PJRT_Buffer_Type type = PJRT_Buffer_Type_INVALID;
  py::object descr;  // numpy dtype
  bool donated = false;
};

// The kinds of output pytree nodes. Defined here only: Python reads them
// from the module (refimpl._pjrt.OUT_KINDS) to describe an output tree.
enum OutKind : uint8_t { kOutLeaf = 0, kOutTuple, kOutList, kOutDict, kOutNone, kOutNode };

struct OutNode {
  uint8_t kind = kOutLeaf;
  uint32_t arity = 0;
  py::object data;       // dict keys (tuple) / node data, or None
  py::object unflatten;  // kOutNode: unflatten(data, children), or None
};

// What a pmap entry adds (fn->pmap): one executable over N replicas.
struct PmapPlan : ReplicaPlan {
  std::vector<const ArrayMeta*> global_outputs;  // per output: the sharded type (null if -1)
  py::object axis_name = py::none();  // the pmap's axis name (its outputs' NamedSharding)
};

struct Entry {
  Signature signature;  // its handles are owned references
  bool slow = false;    // calls of this signature go to the Python Jitted
  std::shared_ptr<Executable> executable;
  int device_index = 0;
  bool committed = false;
  std::vector<LeafPlan> inputs;
  CallPlan plan;  // donation and aliasing (native/dispatch.h)
  std::vector<const ArrayMeta*> outputs;
  std::vector<OutNode> out_tree;  // preorder
  bool release_gil = false;
  bool has_host_inputs = false;  // NumPy, scalars, reference Arrays: transferred per call
  // The output tree has user nodes whose unflatten may raise after execute:
  // donated inputs are then copied, not aliased, so a failed call deletes
  // nothing (SPEC "Donation").
  bool outputs_may_fail = false;
  // Ref arguments (SPEC "Ref"): per input leaf, the output written back into
  // that Ref (its alias, so the Ref keeps its device memory), or -1; empty
  // when no leaf is a Ref. The outputs written back follow the
  // `num_user_outputs` outputs that form the result.
  std::vector<int> ref_outputs;
  std::size_t num_user_outputs = 0;
  // The closure cells of the function (a tuple, or None): a Ref argument
  // that is also closed over is an error, raised by the Python path.
  py::object ref_closure;
  // The globals the function's code names (a tuple of str) and its module
  // dict: a Ref argument that is also such a global is the same error.
  py::tuple ref_global_names;
  py::dict ref_globals;
  std::unique_ptr<PmapPlan> pmap;  // a pmap entry (then `outputs` are per-device types)

  // The signature's handles (statics, dict keys, node kinds and data) are
  // borrowed from here. Entries are only ever destroyed with the GIL held.
  std::vector<py::object> handle_refs;

  Entry() = default;
  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;
};

using EntryPtr = std::shared_ptr<Entry>;

// ============================================================ the Python type

// The fields after the header are C++ objects: FastJittedNew constructs
// them in the memory tp_alloc gives (InitFields) and FastJittedDealloc
// destroys them (DestroyFields), so every Python reference here is owned by
// a py::object and released by its destructor or by tp_clear.
//
// Raw PyObject* is left only where CPython defines the interface and
// pybind11 has no equivalent: the vectorcall entry (FastJittedCall: its
// arguments are borrowed for the call, and read through CallArgs) and the
// type's slots (tp_new, tp_traverse, tp_clear, tp_dealloc, tp_getattro,
// tp_repr, methods and getters: `self` is borrowed from the caller, a
// returned PyObject* is the new reference the slot must return, made from a
// py::object by release()), plus `weakrefs` below, which CPython manages.
// Everything else holds py::object (owned) or py::handle (borrowed, from
// an owner in scope).
struct FastJittedObject {
  PyObject_HEAD vectorcallfunc vectorcall;
  py::object jitted;   // refimpl.transforms.jit.Jitted: misses, slow path, trace/lower
  py::object on_miss;  // refimpl.backends.pjrt.fast_path.on_miss(fast, args, kwargs) -> spec | None
  py::object name;     // the function's name (for donation and errors)
  // The instance __dict__ (tp_dictoffset): CPython's attribute protocol
  // creates it on first use and stores an owned reference in this slot,
  // which a py::object is laid out as (a single PyObject*).
  py::object dict;
  PyObject* weakrefs;          // CPython's weak-reference list (tp_weaklistoffset): not a reference
  bool follow_config_backend;  // backend=None: run here only while config.backend == "pjrt"
  bool pmap;                   // a pmap: entries run over N devices (RunPmap)
  std::vector<int> static_nums;
  std::vector<int> donate_nums;
  std::vector<py::object> static_names;  // interned str
  std::vector<py::object> donate_names;
  std::unique_ptr<SignatureCache<Entry>> cache;
  uint64_t hits;
  uint64_t misses;
  uint64_t slow_calls;
};
static_assert(sizeof(py::object) == sizeof(PyObject*),
              "CPython reads and writes FastJitted's __dict__ slot as a PyObject*");

// ============================================================ small helpers

// The arguments of one vectorcall: `args` holds the `nargs` positional
// values then one value per name in `kwnames` (all borrowed from the caller
// for the duration of the call).
struct CallArgs {
  PyObject* const* args;  // CPython's vectorcall array (see FastJittedObject)
  size_t nargsf;
  Py_ssize_t nargs;
  py::handle kwnames;  // tuple of str, or null

  Py_ssize_t num_keywords() const { return kwnames ? PyTuple_GET_SIZE(kwnames.ptr()) : 0; }
  py::handle positional(Py_ssize_t i) const { return args[i]; }
  py::handle keyword_name(Py_ssize_t k) const { return PyTuple_GET_ITEM(kwnames.ptr(), k); }
  py::handle keyword_value(Py_ssize_t k) const { return args[nargs + k]; }
};

// obj.name, or an empty object (and no Python error) if that raises.
py::object AttrOrNone(py::handle obj, py::handle name) {
  py::object value = py::reinterpret_steal<py::object>(PyObject_GetAttr(obj.ptr(), name.ptr()));
  if (!value) PyErr_Clear();
  return value;
}

// dict[key] (borrowed), or empty (and no Python error) if absent or raising.
py::handle DictItem(py::handle dict, py::handle key) {
  py::handle value = PyDict_GetItemWithError(dict.ptr(), key.ptr());
  if (!value) PyErr_Clear();
  return value;
}

py::handle TypeOf(py::handle object) { return reinterpret_cast<PyObject*>(Py_TYPE(object.ptr())); }

// ============================================================ building the signature

bool ContainsName(const std::vector<py::object>& names, py::handle name) {
  for (const py::object& candidate : names) {
    if (candidate.is(name)) return true;
    int equal = PyUnicode_Compare(candidate.ptr(), name.ptr());
    if (equal == 0) return true;
    if (equal == -1 && PyErr_Occurred()) PyErr_Clear();
  }
  return false;
}

// Python's hash, as the signature's 64-bit handle hash; false if unhashable.
bool HashOf(py::handle object, uint64_t* out) {
  Py_hash_t hash = PyObject_Hash(object.ptr());
  if (hash == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  *out = static_cast<uint64_t>(hash);
  return true;
}

bool SupportedTypeNum(int num) {
  switch (num) {
    case NPY_BOOL:
    case NPY_INT8:
    case NPY_INT16:
    case NPY_INT32:
    case NPY_INT64:
    case NPY_UINT8:
    case NPY_UINT16:
    case NPY_UINT32:
    case NPY_UINT64:
    case NPY_FLOAT16:
    case NPY_FLOAT32:
    case NPY_FLOAT64:
    case NPY_COMPLEX64:
    case NPY_COMPLEX128:
      return true;
    default:
      return num == g_ctx.bfloat16_num && num >= 0;
  }
}

// The object a Ref holds (its `_value` slot), or empty if unset. Read
// through the slot's member descriptor, so no Python code runs and the
// Ref's layout is CPython's business.
py::object RefValue(py::handle ref) {
  py::object value = py::reinterpret_steal<py::object>(
      PyMember_GetOne(reinterpret_cast<const char*>(ref.ptr()), g_ctx.ref_value));
  if (!value) PyErr_Clear();  // unset: AttributeError
  return value;
}

// Flattens the arguments into `state` exactly as refimpl.tree_util would,
// encoding the structure and leaf types into the signature. Returns false
// when this call must take the Python path (no Python error is left set).
class SignatureBuilder {
 public:
  SignatureBuilder(const FastJittedObject* fn, CallState* state) : fn_(fn), state_(state) {}

  // Flattens the arguments; the signature is complete (hashed) when it returns true.
  bool Build(const CallArgs& call) {
    if (!BuildWords(call)) return false;
    state_->signature.Finish();
    return true;
  }

 private:
  bool BuildWords(const CallArgs& call) {
    Signature& sig = state_->signature;
    const Py_ssize_t nargs = call.nargs;
    const Py_ssize_t nkw = call.num_keywords();
    sig.Push(kHeader + (state_->x64 ? 1 : 0) + (state_->precision << 1));
    sig.Push(static_cast<uint64_t>(nargs));
    sig.Push(static_cast<uint64_t>(nkw));
    for (Py_ssize_t i = 0; i < nargs; ++i) {
      sig.Push(kPositional);
      sig.Push(static_cast<uint64_t>(i));
      if (ArgnumsContain(fn_->static_nums, i, nargs)) {
        if (!PushStatic(call.positional(i))) return false;
      } else if (!Flatten(call.positional(i), ArgnumsContain(fn_->donate_nums, i, nargs))) {
        return false;
      }
    }
    if (nkw == 0) return true;
    // Keyword arguments in sorted name order (the order of the Python
    // signature: its dicts flatten sorted).
    SmallVector<Py_ssize_t, 8> order;
    for (Py_ssize_t k = 0; k < nkw; ++k) order.push_back(k);
    bool compare_failed = false;
    std::sort(order.begin(), order.end(), [&](Py_ssize_t a, Py_ssize_t b) {
      int c = PyUnicode_Compare(call.keyword_name(a).ptr(), call.keyword_name(b).ptr());
      if (c == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        compare_failed = true;
      }
      return c < 0;
    });
    if (compare_failed) return false;
    for (Py_ssize_t k : order) {
      const py::handle name = call.keyword_name(k);
      const py::handle value = call.keyword_value(k);
      sig.Push(kKeyword);
      if (!PushHandle(name, HandleCompare::kEqual)) return false;
      if (ContainsName(fn_->static_names, name)) {
        if (!PushStatic(value)) return false;
      } else if (!Flatten(value, ContainsName(fn_->donate_names, name))) {
        return false;
      }
    }
    return true;
  }

  bool PushHandle(py::handle object, HandleCompare compare) {
    uint64_t hash = 0;
    if (compare == HandleCompare::kIdentity) {
      hash = reinterpret_cast<uint64_t>(object.ptr());
    } else if (!HashOf(object, &hash)) {
      if (compare == HandleCompare::kStatic) return false;  // Python raises TypeError
      hash = 0;  // unhashable node data: left out of the hash, as in tree_util
    }
    state_->Keep(py::reinterpret_borrow<py::object>(object));
    state_->signature.PushHandle(object.ptr(), compare, hash);
    return true;
  }

  bool PushStatic(py::handle value) {
    state_->signature.Push(kStatic);
    return PushHandle(value, HandleCompare::kStatic);
  }

  Leaf& AddLeaf(py::handle leaf, uint8_t kind, bool donated) {
    state_->leaves.push_back(Leaf{py::reinterpret_borrow<py::object>(leaf), kind, donated});
    state_->any_donated = state_->any_donated || donated;
    state_->signature.Push(kLeaf + kind);
    return state_->leaves.back();
  }

  void PushDims(int ndim, const npy_intp* dims) {
    state_->signature.PushDims(ndim, reinterpret_cast<const int64_t*>(dims));
  }

  // Every recursive walk counts against Python's recursion limit, so a
  // pytree nested too deep is the RecursionError the reference backend
  // raises, never a C stack overflow.
  bool Flatten(py::handle x, bool donated) {
    if (Py_EnterRecursiveCall(" while flattening the arguments of a jitted function")) return false;
    const bool done = FlattenNode(x, donated);
    Py_LeaveRecursiveCall();
    return done;
  }

  bool FlattenNode(py::handle x, bool donated) {
    PyTypeObject* type = Py_TYPE(x.ptr());
    Signature& sig = state_->signature;
    if (type == PjrtArrayType()) {
      auto* array = reinterpret_cast<PjrtArrayObject*>(x.ptr());
      if (!IsLive(array)) return false;  // the deleted-array error comes from Python
      if (array->shards != nullptr) return FlattenSharded(array, x, donated);
      AddLeaf(x, kPjrtLeaf, donated);
      sig.PushDeviceArray(array->meta, array->buffer->client().get(), array->device_index,
                          array->committed);
      return true;
    }
    if (type == &PyTuple_Type) {
      const Py_ssize_t n = PyTuple_GET_SIZE(x.ptr());
      sig.Push(kTuple);
      sig.Push(static_cast<uint64_t>(n));
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (!Flatten(PyTuple_GET_ITEM(x.ptr(), i), donated)) return false;
      }
      return true;
    }
    if (type == &PyList_Type) {
      const Py_ssize_t n = PyList_GET_SIZE(x.ptr());
      sig.Push(kList);
      sig.Push(static_cast<uint64_t>(n));
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (i >= PyList_GET_SIZE(x.ptr())) return false;  // changed under us
        if (!Flatten(PyList_GET_ITEM(x.ptr(), i), donated)) return false;
      }
      return true;
    }
    if (type == &PyDict_Type) return FlattenDict(x, donated);
    if (x.is_none()) {
      sig.Push(kNone);
      return true;
    }
    if (type == &PyFloat_Type) {
      AddLeaf(x, kFloatLeaf, donated);
      return true;
    }
    if (type == &PyLong_Type) {
      int overflow = 0;
      long long value = PyLong_AsLongLongAndOverflow(x.ptr(), &overflow);
      if (overflow != 0 || (value == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return false;  // Python raises the OverflowError
      }
      if (!state_->x64 && (value < INT32_MIN || value > INT32_MAX)) return false;
      AddLeaf(x, kIntLeaf, donated);
      return true;
    }
    if (type == &PyBool_Type) {
      AddLeaf(x, kBoolLeaf, donated);
      return true;
    }
    if (type == &PyComplex_Type) {
      AddLeaf(x, kComplexLeaf, donated);
      return true;
    }
    if (PyArray_CheckExact(x.ptr())) {
      auto* array = reinterpret_cast<PyArrayObject*>(x.ptr());
      PyArray_Descr* descr = PyArray_DESCR(array);
      if (!SupportedTypeNum(descr->type_num) || !PyArray_ISNBO(descr->byteorder)) return false;
      AddLeaf(x, kNdarrayLeaf, donated);
      sig.Push(static_cast<uint64_t>(descr->type_num));
      PushDims(PyArray_NDIM(array), PyArray_DIMS(array));
      return true;
    }
    if (PyArray_IsScalar(x.ptr(), Generic)) {
      py::object descr = py::reinterpret_steal<py::object>(
          reinterpret_cast<PyObject*>(PyArray_DescrFromScalar(x.ptr())));
      if (!descr) {
        PyErr_Clear();
        return false;
      }
      const auto* d = reinterpret_cast<const PyArray_Descr*>(descr.ptr());
      const int num = d->type_num;
      if (!SupportedTypeNum(num) || !PyArray_ISNBO(d->byteorder)) return false;
      AddLeaf(x, kNpScalarLeaf, donated);
      sig.Push(static_cast<uint64_t>(num));
      return true;
    }
    if (g_ctx.ref_array_type.is(TypeOf(x))) return FlattenRefArray(x, donated);
    if (g_ctx.ref_type.is(TypeOf(x))) return FlattenRef(x);
    return FlattenRegistered(x, donated);
  }

  // A Ref argument: a leaf of the type of the PJRT array it holds (the
  // Python signature's Ref{aval}), always donated (its final value is
  // written back into its buffer). Anything else held (a tracer, a
  // reference Array, a deleted array) takes the Python path.
  bool FlattenRef(py::handle x) {
    py::object held = RefValue(x);
    if (!held || Py_TYPE(held.ptr()) != PjrtArrayType()) return false;
    auto* array = reinterpret_cast<PjrtArrayObject*>(held.ptr());
    if (!IsLive(array) || array->shards != nullptr || fn_->pmap) return false;
    AddLeaf(x, kRefLeaf, /*donated=*/true).held = std::move(held);
    state_->signature.PushDeviceArray(array->meta, array->buffer->client().get(),
                                      array->device_index, array->committed);
    return true;
  }

  // A sharded array: pmap passes its shards where they are; jit and eager
  // work take the Python path, which gathers it (SPEC "The PJRT array").
  bool FlattenSharded(PjrtArrayObject* array, py::handle x, bool donated) {
    if (!fn_->pmap) return false;
    const ShardSet* set = array->shards;
    AddLeaf(x, kShardedLeaf, donated);
    Signature& sig = state_->signature;
    sig.Push(reinterpret_cast<uint64_t>(array->meta));
    sig.Push(reinterpret_cast<uint64_t>(set->client.get()));
    sig.Push(static_cast<uint64_t>(set->axis));
    sig.Push(static_cast<uint64_t>(set->device_indices.size()));
    for (int index : set->device_indices) sig.Push(static_cast<uint64_t>(index));
    return true;
  }

  bool FlattenDict(py::handle d, bool donated) {
    Signature& sig = state_->signature;
    SmallVector<py::handle, 8> keys;
    bool all_str = true;
    bool all_int = true;
    for (auto item : py::reinterpret_borrow<py::dict>(d)) {
      keys.push_back(item.first);
      all_str = all_str && PyUnicode_CheckExact(item.first.ptr());
      all_int = all_int && PyLong_CheckExact(item.first.ptr());
    }
    // tree_util sorts the keys; only orders C can compute without Python code.
    if (all_str) {
      std::sort(keys.begin(), keys.end(),
                [](py::handle a, py::handle b) { return PyUnicode_Compare(a.ptr(), b.ptr()) < 0; });
    } else if (all_int) {
      bool failed = false;
      std::sort(keys.begin(), keys.end(), [&](py::handle a, py::handle b) {
        int less = PyObject_RichCompareBool(a.ptr(), b.ptr(), Py_LT);
        if (less < 0) {
          PyErr_Clear();
          failed = true;
        }
        return less == 1;
      });
      if (failed) return false;
    } else {
      return false;
    }
    sig.Push(kDict);
    sig.Push(static_cast<uint64_t>(keys.size()));
    for (py::handle k : keys) {
      if (!PushHandle(k, HandleCompare::kEqual)) return false;
    }
    for (py::handle k : keys) {
      py::handle child = DictItem(d, k);
      if (!child) return false;
      if (!Flatten(child, donated)) return false;
    }
    return true;
  }

  bool FlattenRefArray(py::handle x, bool donated) {
    py::handle buffer = state_->Keep(AttrOrNone(x, g_ctx.s_buffer));
    if (!buffer || !PyArray_CheckExact(buffer.ptr()))
      return false;  // deleted (None): Python raises
    // aval (a slot) then weak_type (a dataclass field): no Python code runs
    py::object aval = AttrOrNone(x, g_ctx.s_aval);
    py::object weak = aval ? AttrOrNone(aval, g_ctx.s_weak_type) : py::object();
    if (!weak) return false;
    const int is_weak = PyObject_IsTrue(weak.ptr());
    if (is_weak < 0) {
      PyErr_Clear();
      return false;
    }
    auto* array = reinterpret_cast<PyArrayObject*>(buffer.ptr());
    PyArray_Descr* descr = PyArray_DESCR(array);
    if (!SupportedTypeNum(descr->type_num) || !PyArray_ISNBO(descr->byteorder)) return false;
    AddLeaf(x, kRefArrayLeaf, donated);
    Signature& sig = state_->signature;
    sig.Push(static_cast<uint64_t>(descr->type_num));
    sig.Push(static_cast<uint64_t>(is_weak));
    PushDims(PyArray_NDIM(array), PyArray_DIMS(array));
    return true;
  }

  // Namedtuples and registered node types, through tree_util's own registry
  // (the "cached path": tree_util fills it with every type it has seen).
  bool FlattenRegistered(py::handle x, bool donated) {
    py::handle kind = DictItem(g_ctx.registry, TypeOf(x));
    if (!kind || kind.is_none()) return false;  // not seen yet, or a leaf of another type
    py::object tag = AttrOrNone(kind, g_ctx.s_tag);
    if (!tag) return false;
    const bool namedtuple = PyUnicode_Compare(tag.ptr(), g_ctx.s_namedtuple.ptr()) == 0;
    if (PyErr_Occurred()) PyErr_Clear();
    Signature& sig = state_->signature;
    if (namedtuple && PyTuple_Check(x.ptr())) {
      const Py_ssize_t n = PyTuple_GET_SIZE(x.ptr());
      sig.Push(kNamedTuple);
      sig.Push(static_cast<uint64_t>(n));
      if (!PushHandle(kind, HandleCompare::kIdentity)) return false;
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (!Flatten(PyTuple_GET_ITEM(x.ptr(), i), donated)) return false;
      }
      return true;
    }
    // A registered node: its flatten function is Python code, by definition.
    // It returns (children, node data), tree_util's public contract.
    py::object flatten = AttrOrNone(kind, g_ctx.s_flatten);
    if (!flatten) return false;
    py::handle result = state_->Keep(
        py::reinterpret_steal<py::object>(PyObject_CallOneArg(flatten.ptr(), x.ptr())));
    if (!result || !PyTuple_Check(result.ptr()) || PyTuple_GET_SIZE(result.ptr()) != 2) {
      PyErr_Clear();
      return false;  // Python reports the error
    }
    const py::handle node_children = PyTuple_GET_ITEM(result.ptr(), 0);
    const py::handle node_data = PyTuple_GET_ITEM(result.ptr(), 1);
    py::handle children = state_->Keep(
        py::reinterpret_steal<py::object>(PySequence_Fast(node_children.ptr(), "children")));
    if (!children) {
      PyErr_Clear();
      return false;
    }
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(children.ptr());
    sig.Push(kCustomNode);
    sig.Push(static_cast<uint64_t>(n));
    if (!PushHandle(kind, HandleCompare::kIdentity)) return false;
    if (!PushHandle(node_data, HandleCompare::kEqual)) return false;
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!Flatten(PySequence_Fast_GET_ITEM(children.ptr(), i), donated)) return false;
    }
    return true;
  }

  const FastJittedObject* fn_;
  CallState* state_;
};

// The storage a leaf reads: its device buffers (a sharded array's shards, a
// Ref's array; two array objects can share one, e.g. a shard's own array),
// or the object itself (a reference Array). Appended as (key, donated).
void AddStorageKeys(const Leaf& leaf, SmallVector<StorageUse, 16>* keys) {
  const py::handle object = leaf.kind == kRefLeaf ? leaf.held : leaf.object;
  if (leaf.kind == kRefArrayLeaf) {
    keys->push_back({object.ptr(), leaf.donated});
    return;
  }
  auto* array = reinterpret_cast<PjrtArrayObject*>(object.ptr());
  if (array->shards != nullptr) {
    for (const auto& buffer : array->shards->buffers) keys->push_back({buffer.get(), leaf.donated});
  } else if (array->buffer) {
    keys->push_back({array->buffer.get(), leaf.donated});
  }
}

// One array (or Ref, or one device buffer under two array objects) passed
// twice where one of the positions is donated: the Python path raises the
// ValueError (jit's and pmap's check, before anything runs).
bool RepeatsDonatedArray(const CallState& state) {
  SmallVector<StorageUse, 16> keys;
  for (const Leaf& leaf : state.leaves) {
    if (leaf.kind == kPjrtLeaf || leaf.kind == kRefArrayLeaf || leaf.kind == kRefLeaf ||
        leaf.kind == kShardedLeaf) {
      AddStorageKeys(leaf, &keys);
    }
  }
  return DonatedStorageRepeats(keys.data(), keys.size());
}

// ============================================================ cache lookup

bool HandlesEqual(const Signature& a, const Signature& b) {
  const std::size_t n = a.handles().size();
  for (std::size_t i = 0; i < n; ++i) {
    const py::handle x = static_cast<PyObject*>(a.handles()[i].object);
    const py::handle y = static_cast<PyObject*>(b.handles()[i].object);
    switch (a.handles()[i].compare) {
      case HandleCompare::kIdentity:
        if (!x.is(y)) return false;
        break;
      case HandleCompare::kEqual: {
        if (x.is(y)) break;
        int equal = PyObject_RichCompareBool(x.ptr(), y.ptr(), Py_EQ);
        if (equal < 0) PyErr_Clear();
        if (equal != 1) return false;
        break;
      }
      case HandleCompare::kStatic: {
        // As refimpl.transforms.jit._Static: same type and ==, exceptions
        // mean unequal, and no identity shortcut (nan != nan retraces).
        if (!TypeOf(x).is(TypeOf(y))) return false;
        py::object result =
            py::reinterpret_steal<py::object>(PyObject_RichCompare(x.ptr(), y.ptr(), Py_EQ));
        const int truth = result ? PyObject_IsTrue(result.ptr()) : -1;
        if (truth < 0) PyErr_Clear();
        if (truth != 1) return false;
        break;
      }
    }
  }
  return true;
}

EntryPtr Find(FastJittedObject* fn, const Signature& signature) {
  return fn->cache->Find(signature, HandlesEqual);
}

// ============================================================ the slow path

// The call's result, or empty with a Python error set (as Run's).
py::object SlowCall(FastJittedObject* fn, const CallArgs& call) {
  ++fn->slow_calls;
  return py::reinterpret_steal<py::object>(
      PyObject_Vectorcall(fn->jitted.ptr(), call.args, call.nargsf, call.kwnames.ptr()));
}

// ============================================================ misses

// on_miss(fast, args, kwargs): the call's EntrySpec, or None (this
// signature's calls go to the Python Jitted). Throws on a Python error.
py::object CallOnMiss(FastJittedObject* fn, const CallArgs& call) {
  py::tuple positional(call.nargs);
  for (Py_ssize_t i = 0; i < call.nargs; ++i) {
    positional[i] = py::reinterpret_borrow<py::object>(call.positional(i));
  }
  py::dict keywords;
  for (Py_ssize_t k = 0; k < call.num_keywords(); ++k) {
    keywords[call.keyword_name(k)] = py::reinterpret_borrow<py::object>(call.keyword_value(k));
  }
  return fn->on_miss(py::handle(reinterpret_cast<PyObject*>(fn)), positional, keywords);
}

// The spec's types and output tree, read by field (refimpl.backends.pjrt.
// fast_path's LeafType, OutType and OutNode named tuples).
PJRT_Buffer_Type ReadLeafType(py::handle leaf_type, py::dtype* dtype, std::size_t* count) {
  *dtype = py::dtype::from_args(leaf_type.attr("dtype"));
  *count = 1;
  for (py::handle d : leaf_type.attr("shape")) *count *= d.cast<std::size_t>();
  return ElementTypeFromDtype(*dtype);
}

struct OutType {
  PJRT_Buffer_Type type;
  std::vector<int64_t> dims;
  bool weak_type;
};
OutType ReadOutType(py::handle out_type) {
  py::dtype dtype = py::dtype::from_args(out_type.attr("dtype"));
  return OutType{ElementTypeFromDtype(dtype), out_type.attr("shape").cast<std::vector<int64_t>>(),
                 out_type.attr("weak_type").cast<bool>()};
}

void ReadOutTree(Entry* entry, py::handle spec) {
  for (py::handle node : spec.attr("out_tree")) {
    OutNode out;
    out.kind = static_cast<uint8_t>(node.attr("kind").cast<int>());
    out.arity = node.attr("arity").cast<uint32_t>();
    out.data = node.attr("data");
    out.unflatten = node.attr("unflatten");
    entry->outputs_may_fail = entry->outputs_may_fail || out.kind == kOutNode;
    entry->out_tree.push_back(std::move(out));
  }
}

// Reads the entry spec that refimpl.backends.pjrt.fast_path.on_miss returns
// (an EntrySpec, read by field; see that class).
void FillEntry(Entry* entry, const py::handle spec, std::size_t num_leaves) {
  entry->executable = spec.attr("executable").cast<std::shared_ptr<Executable>>();
  entry->device_index = spec.attr("device_index").cast<int>();
  entry->committed = spec.attr("committed").cast<bool>();
  py::sequence in_avals = spec.attr("in_avals");  // a LeafType per leaf
  std::vector<bool> donated = spec.attr("donated").cast<std::vector<bool>>();
  std::vector<int> aliases = spec.attr("aliases").cast<std::vector<int>>();
  if (in_avals.size() != num_leaves || donated.size() != num_leaves) {
    throw py::value_error("on_miss: the entry spec does not match the call's leaves");
  }
  std::size_t bytes = 0;
  entry->inputs.resize(num_leaves);
  for (std::size_t i = 0; i < num_leaves; ++i) {
    LeafPlan& leaf = entry->inputs[i];
    py::dtype dtype;
    std::size_t count = 0;
    leaf.type = ReadLeafType(in_avals[i], &dtype, &count);
    bytes += count * static_cast<std::size_t>(dtype.itemsize());
    leaf.descr = std::move(dtype);
    leaf.donated = donated[i];
  }
  for (py::handle aval : spec.attr("out_avals")) {
    const OutType out = ReadOutType(aval);
    const ArrayMeta* meta =
        InternArrayMeta(out.type, out.dims.data(), out.dims.size(), out.weak_type);
    entry->outputs.push_back(meta);
    bytes += meta->nbytes;
  }
  if (entry->outputs.size() != entry->executable->num_outputs()) {
    throw py::value_error("on_miss: the executable's output count differs from out_avals");
  }
  // the inputs the executable takes (empty: all; refimpl.transforms.dce.kept_inputs)
  const std::vector<bool> kept = spec.attr("kept").cast<std::vector<bool>>();
  entry->plan = CallPlan(donated, aliases, entry->outputs.size(), kept);
  entry->ref_outputs = spec.attr("ref_outputs").cast<std::vector<int>>();
  // Each Ref's final value is written back through its own buffer, after
  // the result's outputs (native/dispatch.h).
  entry->num_user_outputs =
      ResultOutputsBeforeWriteBacks(entry->ref_outputs, donated, aliases, entry->outputs.size());
  if (!entry->ref_outputs.empty()) {
    entry->ref_closure = spec.attr("ref_closure");
    py::object names = spec.attr("ref_global_names");
    py::object globals = spec.attr("ref_globals");
    if (!PyTuple_Check(names.ptr()) || !PyDict_Check(globals.ptr())) {
      throw py::type_error("on_miss: ref_global_names must be a tuple, ref_globals a dict");
    }
    entry->ref_global_names = py::reinterpret_borrow<py::tuple>(names);
    entry->ref_globals = py::reinterpret_borrow<py::dict>(globals);
  }
  ReadOutTree(entry, spec);
  // A call with Refs keeps the GIL from reading the refs to writing them
  // back, so calls from several threads on one ref run one after the other
  // (each on the previous one's result) instead of donating one buffer twice.
  // Execute only enqueues the computation, so this holds the GIL briefly.
  entry->release_gil = entry->ref_outputs.empty() && bytes >= g_release_gil_bytes;
}

void FillPmapEntry(Entry* entry, const py::handle spec, std::size_t num_leaves);

// The callback into Python: trace (if the Python cache misses too), lower,
// compile, and describe the entry. Null with a Python error on failure.
EntryPtr Miss(FastJittedObject* fn, const CallArgs& call, CallState* state) {
  ++fn->misses;
  auto entry = std::make_shared<Entry>();
  try {
    py::object spec = CallOnMiss(fn, call);
    entry->signature = state->signature;
    for (const Handle& handle : entry->signature.handles()) {
      entry->handle_refs.push_back(
          py::reinterpret_borrow<py::object>(static_cast<PyObject*>(handle.object)));
    }
    if (spec.is_none()) {
      entry->slow = true;
    } else if (fn->pmap) {
      FillPmapEntry(entry.get(), spec, state->leaves.size());
    } else {
      FillEntry(entry.get(), spec, state->leaves.size());
    }
  } catch (...) {
    SetPythonErrorFromCurrentException();
    return nullptr;
  }
  for (const Leaf& leaf : state->leaves) {
    entry->has_host_inputs =
        entry->has_host_inputs || (leaf.kind != kPjrtLeaf && leaf.kind != kRefLeaf);
  }
  // Exactly the Ref leaves are written back.
  if (!entry->slow) {
    for (std::size_t i = 0; i < state->leaves.size(); ++i) {
      const bool written = !entry->ref_outputs.empty() && entry->ref_outputs[i] >= 0;
      if ((state->leaves[i].kind == kRefLeaf) != written) {
        PyErr_SetString(PyExc_SystemError,
                        "on_miss: the entry's Ref write-backs do not match the Ref arguments");
        return nullptr;
      }
    }
  }
  // Another thread may have inserted this signature while Python ran.
  if (EntryPtr existing = Find(fn, state->signature)) return existing;
  fn->cache->Insert(entry);
  return entry;
}

// ============================================================ running an entry

// The value of Python scalar `x` (a leaf of `kind`) as the bytes of one
// element of `type` (native/scalar_encoding.h); false if the type is not
// one a Python scalar canonicalizes to.
bool ScalarBytes(py::handle x, uint8_t kind, PJRT_Buffer_Type type, uint64_t bits[2]) {
  HostScalar scalar;
  if (kind == kBoolLeaf) {
    scalar = HostScalar::Bool(x.ptr() == Py_True);
  } else if (kind == kIntLeaf) {
    scalar = HostScalar::Int(PyLong_AsLongLong(x.ptr()));
  } else if (kind == kFloatLeaf) {
    scalar = HostScalar::Float(PyFloat_AS_DOUBLE(x.ptr()));
  } else {
    Py_complex c = PyComplex_AsCComplex(x.ptr());
    scalar = HostScalar::Complex(c.real, c.imag);
  }
  return EncodeScalar(scalar, type, bits);
}

// A NumPy scalar of exactly the parameter's dtype: its bytes (false
// otherwise; it is then transferred as an array).
bool NumpyScalarBytes(py::handle x, const LeafPlan& plan, uint64_t bits[2]) {
  bits[0] = bits[1] = 0;
  py::object descr_object = py::reinterpret_steal<py::object>(
      reinterpret_cast<PyObject*>(PyArray_DescrFromScalar(x.ptr())));
  if (!descr_object) {
    PyErr_Clear();
    return false;
  }
  auto* descr = reinterpret_cast<PyArray_Descr*>(descr_object.ptr());
  auto* wanted = reinterpret_cast<PyArray_Descr*>(plan.descr.ptr());
  // (PyArray_ScalarAsCtype reads only NumPy's own types, not ml_dtypes')
  const bool same = !PyTypeNum_ISUSERDEF(descr->type_num) && PyArray_EquivTypes(descr, wanted) &&
                    PyDataType_ELSIZE(descr) <= static_cast<npy_intp>(sizeof(uint64_t) * 2);
  if (!same) return false;
  PyArray_ScalarAsCtype(x.ptr(), bits);
  return true;
}

std::shared_ptr<Buffer> ScalarBuffer(Client* client, int device, py::handle x, uint8_t kind,
                                     const LeafPlan& plan) {
  uint64_t bits[2] = {0, 0};
  if (kind == kNpScalarLeaf) {
    if (!NumpyScalarBytes(x, plan, bits)) return nullptr;
  } else if (!ScalarBytes(x, kind, plan.type, bits)) {
    return nullptr;
  }
  // A donated input's buffer may become an output's: it must be the call's own.
  if (plan.donated) return ScalarBufferNow(client, device, plan.type, bits);
  return ProcessConstantCache().Get(client, device, plan.type, bits);
}

// The host array to transfer for a NumPy, NumPy-scalar or reference-Array
// leaf, converted to the parameter's dtype. Throws on a Python error.
py::object HostArrayOf(py::handle leaf, uint8_t kind, const LeafPlan& plan) {
  py::object attribute;
  py::handle source = leaf;
  if (kind == kRefArrayLeaf) {
    attribute = leaf.attr(g_ctx.s_buffer);
    if (attribute.is_none()) {          // deleted since the signature: its own error
      leaf.attr(g_ctx.s_check_live)();  // raises (thrown on) the array's own error
      PyErr_SetString(PyExc_RuntimeError, "Array has been deleted.");
      throw py::error_already_set();
    }
    source = attribute;
  }
  // PyArray_FromAny steals a reference to the descriptor.
  auto* descr = reinterpret_cast<PyArray_Descr*>(plan.descr.inc_ref().ptr());
  py::object array = py::reinterpret_steal<py::object>(
      PyArray_FromAny(source.ptr(), descr, 0, 0,
                      NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST, nullptr));
  if (!array) throw py::error_already_set();
  return array;
}

py::object BuildOutputNode(const Entry& entry, const py::object* leaves, std::size_t* next,
                           std::size_t* node);

// The output pytree, walked recursively under Python's recursion limit
// (empty with a Python error on failure).
py::object BuildOutputs(const Entry& entry, const py::object* leaves, std::size_t* next,
                        std::size_t* node) {
  if (Py_EnterRecursiveCall(" while building the outputs of a jitted function")) return {};
  py::object built = BuildOutputNode(entry, leaves, next, node);
  Py_LeaveRecursiveCall();
  return built;
}

py::object BuildOutputNode(const Entry& entry, const py::object* leaves, std::size_t* next,
                           std::size_t* node) {
  const OutNode& out = entry.out_tree[(*node)++];
  switch (out.kind) {
    case kOutLeaf:
      return leaves[(*next)++];
    case kOutNone:
      return py::none();
    case kOutTuple:
    case kOutNode: {
      py::object children = py::reinterpret_steal<py::object>(PyTuple_New(out.arity));
      if (!children) return {};
      for (uint32_t i = 0; i < out.arity; ++i) {
        py::object child = BuildOutputs(entry, leaves, next, node);
        if (!child) return {};
        PyTuple_SET_ITEM(children.ptr(), i, child.release().ptr());  // steals
      }
      if (out.kind == kOutTuple) return children;
      return py::reinterpret_steal<py::object>(PyObject_CallFunctionObjArgs(
          out.unflatten.ptr(), out.data.ptr(), children.ptr(), nullptr));
    }
    case kOutList: {
      py::object list = py::reinterpret_steal<py::object>(PyList_New(out.arity));
      if (!list) return {};
      for (uint32_t i = 0; i < out.arity; ++i) {
        py::object child = BuildOutputs(entry, leaves, next, node);
        if (!child) return {};
        PyList_SET_ITEM(list.ptr(), i, child.release().ptr());  // steals
      }
      return list;
    }
    case kOutDict: {
      py::object dict = py::reinterpret_steal<py::object>(PyDict_New());
      if (!dict) return {};
      for (uint32_t i = 0; i < out.arity; ++i) {
        py::object child = BuildOutputs(entry, leaves, next, node);
        if (!child ||
            PyDict_SetItem(dict.ptr(), PyTuple_GET_ITEM(out.data.ptr(), i), child.ptr()) < 0) {
          return {};
        }
      }
      return dict;
    }
  }
  PyErr_SetString(PyExc_SystemError, "FastJitted: bad output tree");
  return {};
}

// Sets the deleted-array error if an input turns out to be deleted on the
// device (after a failed execute); true if it did.
bool ReportDeletedInput(const CallState& state) {
  for (const Leaf& leaf : state.leaves) {
    if (leaf.kind != kPjrtLeaf) continue;
    auto* array = reinterpret_cast<PjrtArrayObject*>(leaf.object.ptr());
    bool deleted = !IsLive(array);
    if (!deleted) {
      try {
        deleted = array->buffer->IsDeleted();
      } catch (...) {
        deleted = false;
      }
    }
    if (deleted) {
      SetDeletedError(array);
      return true;
    }
  }
  return false;
}

// An input that a call running in another thread is donating: for this call
// it is deleted already (the other call took it first).
void SetDonatedElsewhereError(const PjrtArrayObject* array) {
  PyErr_Format(PyExc_RuntimeError,
               "Array has been deleted with %U. It was donated to a call running in another "
               "thread and may not be used again.",
               array->meta->deleted_text);
}

// Pins a device input of a launch (launch_pins.h), after the last point where
// Python code could run: false with the deleted-array error when another
// launch is donating it. *may_alias is cleared when another launch reads a
// donated input (it is then passed non-donatable: XLA copies it).
bool PinInput(LaunchPins* pins, const PjrtArrayObject* array, const std::shared_ptr<Buffer>& buffer,
              bool donated, bool* may_alias) {
  bool free = true;
  if (donated ? pins->Donate(buffer, &free) : pins->Read(buffer)) {
    *may_alias = *may_alias && free;
    return true;
  }
  SetDonatedElsewhereError(array);
  return false;
}

// Step 1: host leaves (NumPy, scalars, reference arrays) become device
// buffers. Python code can run here (a conversion), so PJRT leaves are not
// looked at yet. False with *slow set: the call goes to the Python path.
bool TransferHostInputs(const Entry& entry, const CallState& state, Launch* launch, bool* slow) {
  const std::shared_ptr<Client>& client = entry.executable->client();
  const int device = entry.device_index;
  for (std::size_t i = 0; i < state.leaves.size(); ++i) {
    const py::handle leaf = state.leaves[i].object;
    const uint8_t kind = state.leaves[i].kind;
    if (kind == kPjrtLeaf || kind == kRefLeaf) continue;  // bound in step 2
    if (!entry.plan.kept(i)) {  // the program does not read it: not transferred
      if (kind == kRefArrayLeaf && leaf.attr(g_ctx.s_buffer).is_none()) {
        leaf.attr(g_ctx.s_check_live)();  // deleted: its own error, as a read one's
      }
      continue;
    }
    const LeafPlan& plan = entry.inputs[i];
    std::shared_ptr<Buffer> buffer;
    if (IsHostScalarLeaf(kind)) {
      buffer = ScalarBuffer(client.get(), device, leaf, kind, plan);
      if (!buffer) {
        *slow = true;
        return false;
      }
    } else if (kind == kNpScalarLeaf &&
               (buffer = ScalarBuffer(client.get(), device, leaf, kind, plan))) {
      // a NumPy scalar of the parameter's own dtype: a cached constant buffer
    } else {
      py::object host = HostArrayOf(leaf, kind, plan);
      auto* array = reinterpret_cast<PyArrayObject*>(host.ptr());
      buffer = client->BufferFromHostNow(
          PyArray_DATA(array), plan.type, reinterpret_cast<const int64_t*>(PyArray_DIMS(array)),
          static_cast<std::size_t>(PyArray_NDIM(array)), nullptr, device);
    }
    launch->BindTemporaryInput(i, std::move(buffer));
  }
  return true;
}

// Whether `x` (a closure cell's contents) is, or holds in lists, tuples and
// dicts, one of the call's Ref arguments (refimpl.ref's closure check takes
// the pytree leaves of every cell): 1 yes, 0 no, -1 cannot tell without
// Python (a registered pytree node, or a type tree_util has not seen).
int HoldsRefArgument(py::handle x, const CallState& state, int depth) {
  if (depth > 32) return -1;
  PyTypeObject* type = Py_TYPE(x.ptr());
  if (g_ctx.ref_type.is(TypeOf(x))) {
    for (const Leaf& leaf : state.leaves) {
      if (leaf.kind == kRefLeaf && leaf.object.is(x)) return 1;
    }
    return 0;
  }
  if (PyTuple_Check(x.ptr()) || PyList_Check(x.ptr())) {
    const bool tuple = PyTuple_Check(x.ptr());
    const Py_ssize_t n = tuple ? PyTuple_GET_SIZE(x.ptr()) : PyList_GET_SIZE(x.ptr());
    for (Py_ssize_t k = 0; k < n; ++k) {
      if (!tuple && k >= PyList_GET_SIZE(x.ptr())) break;
      const py::handle item = tuple ? PyTuple_GET_ITEM(x.ptr(), k) : PyList_GET_ITEM(x.ptr(), k);
      const int found = HoldsRefArgument(item, state, depth + 1);
      if (found != 0) return found;
    }
    return 0;
  }
  if (type == &PyDict_Type) {
    for (auto item : py::reinterpret_borrow<py::dict>(x)) {
      const int found = HoldsRefArgument(item.second, state, depth + 1);
      if (found != 0) return found;
    }
    return 0;
  }
  if (x.is_none() || type == PjrtArrayType() || PyArray_Check(x.ptr()) || type == &PyLong_Type ||
      type == &PyFloat_Type || type == &PyBool_Type || type == &PyComplex_Type ||
      type == &PyUnicode_Type || type == &PyBytes_Type) {
    return 0;
  }
  // Inside a container: a registered node's children are found by Python code.
  py::handle kind = DictItem(g_ctx.registry, TypeOf(x));
  if (!kind) {
    // Not classified by tree_util yet: a function or class is a leaf;
    // anything else might be a node.
    return PyCallable_Check(x.ptr()) ? 0 : -1;
  }
  return kind.is_none() ? 0 : -1;
}

// Whether the function's closure may hold one of the call's Ref arguments
// (then the Python path raises the error, or finds it does not).
bool MayCloseOverRefArgument(const Entry& entry, const CallState& state) {
  for (py::handle name : entry.ref_global_names) {
    py::handle value = PyDict_GetItemWithError(entry.ref_globals.ptr(), name.ptr());
    if (!value) {
      if (PyErr_Occurred()) {
        PyErr_Clear();
        return true;
      }
      continue;
    }
    if (g_ctx.ref_type.is(TypeOf(value)) && HoldsRefArgument(value, state, 0) != 0) return true;
  }
  if (!PyTuple_Check(entry.ref_closure.ptr())) return false;  // None: no closure
  for (py::handle cell : py::reinterpret_borrow<py::tuple>(entry.ref_closure)) {
    if (!PyCell_Check(cell.ptr())) return true;
    py::handle contents = PyCell_GET(cell.ptr());
    if (contents && HoldsRefArgument(contents, state, 0) != 0) return true;
  }
  return false;
}

// A Ref leaf, after the last point where Python code could run: it must
// still hold the live array its signature was built from, no other leaf may
// be (or hold) that array, and the function must not close over the Ref
// (the Python path raises that error). Binds the array's buffer, aliased to
// the Ref's final value. False: the call goes to the Python path.
bool BindRefInput(const Entry& entry, const CallState& state, std::size_t i, Launch* launch) {
  const Leaf& leaf = state.leaves[i];
  if (!RefValue(leaf.object).is(leaf.held)) return false;
  auto* array = reinterpret_cast<PjrtArrayObject*>(leaf.held.ptr());
  if (!IsLive(array) || array->buffer->client() != entry.executable->client()) return false;
  for (std::size_t k = 0; k < state.leaves.size(); ++k) {
    const Leaf& other = state.leaves[k];
    if (k == i) continue;
    if ((other.kind == kPjrtLeaf && other.object.is(leaf.held)) ||
        (other.kind == kRefLeaf && other.held.is(leaf.held))) {
      return false;
    }
  }
  // Always aliased: the Ref takes its final value before the result is
  // built, so a failing unflatten cannot leave it holding a deleted array.
  launch->BindDeviceInput(entry.plan, i, &array->buffer, /*may_alias=*/true);
  if (entry.release_gil) launch->keep.push_back(array->buffer);
  return true;
}

// Step 2: PJRT leaves, after the last point where Python code could run
// (the signature's __hash__/__eq__, a pytree's flatten, on_miss, host
// conversions): each must still be alive now, under the GIL that execute
// holds or hands over only with the buffers kept. False with the
// deleted-array error set, or *slow for another client's array.
//
// With the GIL released around execute (large arrays), or for a donated
// input, each buffer is pinned (launch_pins.h): the jit and pmap launches
// share this rule, so an input deleted or donated by another thread
// meanwhile is freed only once this launch is done with it.
bool BindDeviceInputs(const Entry& entry, const CallState& state, Launch* launch, bool* slow,
                      LaunchPins* pins) {
  const Client* client = entry.executable->client().get();
  if (!entry.ref_outputs.empty() && MayCloseOverRefArgument(entry, state)) {
    *slow = true;
    return false;
  }
  for (std::size_t i = 0; i < state.leaves.size(); ++i) {
    if (state.leaves[i].kind == kRefLeaf) {
      if (!BindRefInput(entry, state, i, launch)) {
        *slow = true;
        return false;
      }
      continue;
    }
    if (state.leaves[i].kind != kPjrtLeaf) continue;
    auto* array = reinterpret_cast<PjrtArrayObject*>(state.leaves[i].object.ptr());
    if (!IsLive(array)) {  // (an unread one too, as the Python path's signature)
      SetDeletedError(array);
      return false;
    }
    if (!entry.plan.kept(i)) continue;  // the program does not read it: not passed
    if (array->buffer->client().get() != client) {
      *slow = true;
      return false;
    }
    bool may_alias = !entry.outputs_may_fail;
    const bool donated = entry.plan.inputs()[i].donated;
    if ((entry.release_gil || donated) &&
        !PinInput(pins, array, array->buffer, donated, &may_alias)) {
      return false;
    }
    launch->BindDeviceInput(entry.plan, i, &array->buffer, may_alias);
    // Held across execute when another thread could delete the array meanwhile.
    if (entry.release_gil) launch->keep.push_back(array->buffer);
  }
  return true;
}

// Step 3: execute, with the GIL released for large arrays.
void ExecuteEntry(const Entry& entry, Launch* launch) {
  if (entry.release_gil) {
    py::gil_scoped_release release;
    Execute(*entry.executable, entry.plan, launch);
  } else {
    Execute(*entry.executable, entry.plan, launch);
  }
}

// Step 5: the result pytree of new PJRT arrays (empty with a Python error).
py::object MakeResult(const Entry& entry, Launch* launch) {
  SmallVector<py::object, 8> arrays;
  for (std::size_t j = 0; j < entry.num_user_outputs; ++j) {
    arrays.push_back(py::reinterpret_steal<py::object>(MakePjrtArray(
        std::move(launch->outputs[j]), entry.outputs[j], entry.device_index, entry.committed)));
    if (!arrays.back()) return {};
  }
  if (entry.out_tree.size() == 1 && entry.out_tree[0].kind == kOutLeaf) {
    return std::move(arrays[0]);  // the common single-array result
  }
  std::size_t next = 0, node = 0;
  return BuildOutputs(entry, arrays.data(), &next, &node);
}

// Step 4b (SPEC "Ref"): each Ref argument takes its final value in place:
// the array object it holds keeps its identity and takes the output's
// buffer (aliased: the same device memory), so nothing is allocated and no
// array is marked donated. That array is the Ref's alone (refimpl.ref hands
// out copies and copies an array written into a ref), and no Python code
// ran since BindRefInput (ref entries keep the GIL), so the Ref still holds
// it. Done before the result is built: user code that fails there (an
// unflatten) never leaves a Ref holding a deleted array.
void WriteBackRefs(const Entry& entry, const CallState& state, Launch* launch) {
  if (entry.ref_outputs.empty()) return;
  for (std::size_t i = 0; i < state.leaves.size(); ++i) {
    const int j = entry.ref_outputs[i];
    if (j < 0) continue;
    auto* array = reinterpret_cast<PjrtArrayObject*>(state.leaves[i].held.ptr());
    // Usually empty: OwnOutputs moved the Buffer object into the output.
    std::shared_ptr<Buffer> old = std::move(array->buffer);
    if (old && !launch->MemoryTaken(entry.plan, i)) {
      try {
        ReleaseDeviceMemory(old);  // PJRT copied it: free it now
      } catch (...) {
        // Freed when `old` goes instead; the call itself succeeded.
      }
    }
    array->buffer = std::move(launch->outputs[j]);
    array->meta = entry.outputs[j];
    array->device_index = entry.device_index;
    array->committed = entry.committed;
  }
}

// A donated reference-backend array (RefArray): its Python mark_donated.
bool MarkRefArrayDonated(const Leaf& leaf, FastJittedObject* fn) {
  py::object done = py::reinterpret_steal<py::object>(
      PyObject_CallMethodOneArg(leaf.object.ptr(), g_ctx.s_mark_donated.ptr(), fn->name.ptr()));
  return static_cast<bool>(done);
}

// Step 6 (SPEC "Donation"): every donated device array is deleted, only once
// the result exists.
bool DonateInputs(FastJittedObject* fn, const Entry& entry, const CallState& state,
                  const Launch& launch) {
  if (!entry.plan.any_donated()) return true;
  for (std::size_t i = 0; i < state.leaves.size(); ++i) {
    if (!entry.plan.inputs()[i].donated) continue;
    const Leaf& leaf = state.leaves[i];
    if (leaf.kind == kPjrtLeaf) {
      MarkDonated(reinterpret_cast<PjrtArrayObject*>(leaf.object.ptr()), fn->name.ptr(),
                  launch.MemoryTaken(entry.plan, i));
    } else if (leaf.kind == kRefArrayLeaf) {
      if (!MarkRefArrayDonated(leaf, fn)) return false;
    }
  }
  return true;
}

// Runs a cached entry. Empty with a Python error on failure; sets *slow
// when the call must go to the Python path instead (nothing has run then).
py::object Run(FastJittedObject* fn, const Entry& entry, CallState& state, bool* slow) {
  LaunchPins pins;  // released last, with the GIL held
  Launch launch;
  launch.handles.resize(state.leaves.size());
  launch.owners.resize(state.leaves.size());
  try {
    if (!TransferHostInputs(entry, state, &launch, slow)) return {};
    if (!BindDeviceInputs(entry, state, &launch, slow, &pins)) return {};
    ExecuteEntry(entry, &launch);
    OwnOutputs(entry.plan, entry.executable->client(), &launch);  // step 4
    WriteBackRefs(entry, state, &launch);
    py::object result = MakeResult(entry, &launch);
    if (!result || !DonateInputs(fn, entry, state, launch)) return {};
    ++fn->hits;
    return result;
  } catch (...) {
    if (!ReportDeletedInput(state)) SetPythonErrorFromCurrentException();
    return {};
  }
}

// ============================================================ pmap entries
//
// A pmap (FastJitted with `pmap` set) compiles one executable for N
// replicas (refimpl.transforms.pmap). A hit runs it here: host leaves are
// split into per-device pieces and transferred, sharded arrays over the
// same devices pass their shards' buffers as they are (no data moves),
// ONE PJRT execute runs all devices, and mapped outputs come back as one
// sharded PjrtArray each.

// A pmap inside a pmap's host callback: the error (true) instead of a hang.
bool RefusePmapInReplicatedCallback() {
  if (!InReplicatedHostCallback()) return false;
  PyErr_SetString(PyExc_RuntimeError,
                  "pmap: a pmap cannot run inside a host callback (pure_callback, debug.callback) "
                  "of another pmap: the plugin's threads are all busy running the outer "
                  "program's replicas, so the inner one could never start (JAX hangs here). "
                  "Compute the value with jit inside the callback, or outside the pmap.");
  return true;
}

// Reads a pmap entry spec (refimpl.transforms.pmap.PmapEntrySpec, by field).
void FillPmapEntry(Entry* entry, const py::handle spec, std::size_t num_leaves) {
  auto plan = std::make_unique<PmapPlan>();
  entry->executable = spec.attr("executable").cast<std::shared_ptr<Executable>>();
  plan->devices = spec.attr("device_indices").cast<std::vector<int>>();
  plan->in_axes = spec.attr("in_axes").cast<std::vector<int>>();
  plan->out_axes = spec.attr("out_axes").cast<std::vector<int>>();
  plan->axis_name = spec.attr("axis_name");
  plan->aliases = spec.attr("aliases").cast<std::vector<int>>();
  plan->has_collectives = spec.attr("has_collectives").cast<bool>();
  std::vector<bool> donated = spec.attr("donated").cast<std::vector<bool>>();
  py::sequence in_avals = spec.attr("in_avals");    // a LeafType (one device's) per leaf
  py::sequence out_avals = spec.attr("out_avals");  // one device's OutType per output
  if (in_avals.size() != num_leaves || donated.size() != num_leaves) {
    throw py::value_error("pmap on_miss: the entry spec does not match the call's leaves");
  }
  if (out_avals.size() != entry->executable->num_outputs()) {
    throw py::value_error("pmap on_miss: the executable's output count differs from out_avals");
  }
  plan->Check(num_leaves, entry->executable->device_indices().size(), out_avals.size());
  entry->inputs.resize(num_leaves);
  for (std::size_t i = 0; i < num_leaves; ++i) {
    LeafPlan& leaf = entry->inputs[i];
    py::dtype dtype;
    std::size_t count = 0;
    leaf.type = ReadLeafType(in_avals[i], &dtype, &count);
    leaf.descr = std::move(dtype);
    leaf.donated = donated[i];
  }
  for (std::size_t j = 0; j < out_avals.size(); ++j) {
    OutType out = ReadOutType(out_avals[j]);
    entry->outputs.push_back(
        InternArrayMeta(out.type, out.dims.data(), out.dims.size(), out.weak_type));
    const bool mapped = plan->GlobalDims(j, &out.dims);
    plan->global_outputs.push_back(
        mapped ? InternArrayMeta(out.type, out.dims.data(), out.dims.size(), out.weak_type)
               : nullptr);
  }
  entry->plan = CallPlan(donated, plan->aliases, entry->outputs.size());
  ReadOutTree(entry, spec);
  entry->pmap = std::move(plan);
}

using PmapLaunch = ReplicatedLaunch;  // native/launch.h

// Host leaves (NumPy, scalars, reference Arrays, single-device PJRT arrays,
// which are read through their host view): one piece per device (the slice
// along the leaf's axis, or the whole value) transferred there. Python code
// can run here (conversions); *slow: the call goes to the Python pmap.
bool PmapTransferHostInputs(const Entry& entry, const CallState& state, PmapLaunch* launch,
                            bool* slow) {
  const PmapPlan& plan = *entry.pmap;
  const std::shared_ptr<Client>& client = entry.executable->client();
  for (std::size_t i = 0; i < state.leaves.size(); ++i) {
    const py::handle leaf = state.leaves[i].object;
    const uint8_t kind = state.leaves[i].kind;
    if (kind == kShardedLeaf) continue;  // (Refs never reach here: FlattenRef declines pmap)
    const LeafPlan& leaf_plan = entry.inputs[i];
    const int axis = plan.in_axes[i];
    const bool scalar = IsHostScalarLeaf(kind);
    if ((scalar || kind == kNpScalarLeaf) && axis < 0) {
      bool done = true;
      for (std::size_t m = 0; m < launch->num_devices && done; ++m) {
        std::shared_ptr<Buffer> buffer =
            ScalarBuffer(client.get(), plan.devices[m], leaf, kind, leaf_plan);
        if (!buffer) {
          done = false;
          break;
        }
        launch->at(m, i) = buffer->raw();
        launch->keep.push_back(std::move(buffer));
      }
      if (done) continue;
      if (scalar) {
        *slow = true;
        return false;
      }
    }
    // kPjrtLeaf reads like a NumPy array (its __array__: a view on the CPU)
    const uint8_t host_kind = kind == kPjrtLeaf ? kNdarrayLeaf : kind;
    py::object host = HostArrayOf(leaf, host_kind, leaf_plan);
    auto* array = reinterpret_cast<PyArrayObject*>(host.ptr());
    const int ndim = PyArray_NDIM(array);
    const auto* dims = reinterpret_cast<const int64_t*>(PyArray_DIMS(array));
    const auto* strides = reinterpret_cast<const int64_t*>(PyArray_STRIDES(array));
    auto* data = static_cast<const char*>(PyArray_DATA(array));
    if (axis >= ndim || (axis >= 0 && dims[axis] != static_cast<int64_t>(launch->num_devices))) {
      *slow = true;  // cannot happen for a signature on_miss accepted; Python reports it
      return false;
    }
    SmallVector<int64_t, 8> piece_dims, piece_strides;
    DropAxis(dims, strides, ndim, axis, &piece_dims, &piece_strides);
    for (std::size_t m = 0; m < launch->num_devices; ++m) {
      std::shared_ptr<Buffer> buffer;
      if (axis < 0) {
        buffer =
            client->BufferFromHostNow(data, leaf_plan.type, dims, ndim, nullptr, plan.devices[m]);
      } else {  // the slice m: strided host memory, copied by the plugin
        buffer =
            client->BufferFromHostNow(data + m * strides[axis], leaf_plan.type, piece_dims.data(),
                                      piece_dims.size(), piece_strides.data(), plan.devices[m]);
      }
      launch->at(m, i) = buffer->raw();
      launch->keep.push_back(std::move(buffer));
    }
  }
  return true;
}

// Sharded leaves, after the last point where Python code could run: each
// must still be alive, on the entry's client, devices and axis (else the
// Python pmap handles the call).
//
// Every shard buffer is pinned (launch_pins.h, as jit's BindDeviceInputs):
// the execute runs without the GIL, and a buffer deleted or donated by
// another thread meanwhile is freed only once this launch is done.
bool PmapBindShardedInputs(const Entry& entry, const CallState& state, PmapLaunch* launch,
                           bool* slow, LaunchPins* pins) {
  const PmapPlan& plan = *entry.pmap;
  const Client* client = entry.executable->client().get();
  for (std::size_t i = 0; i < state.leaves.size(); ++i) {
    if (state.leaves[i].kind != kShardedLeaf) continue;
    auto* array = reinterpret_cast<PjrtArrayObject*>(state.leaves[i].object.ptr());
    if (!IsLive(array)) {
      SetDeletedError(array);
      return false;
    }
    const ShardSet* set = array->shards;
    if (set->client.get() != client || set->axis != plan.in_axes[i] ||
        set->device_indices != plan.devices) {
      *slow = true;
      return false;
    }
    bool may_alias = !entry.outputs_may_fail;  // false: an aliased input PJRT must copy
    const bool donated = entry.plan.inputs()[i].donated;
    for (std::size_t m = 0; m < launch->num_devices; ++m) {
      if (!PinInput(pins, array, set->buffers[m], donated, &may_alias)) return false;
      if (set->buffers[m]->IsDeleted()) {  // through a shard's own array (.addressable_shards)
        SetDeletedError(array);
        return false;
      }
      launch->at(m, i) = set->buffers[m]->raw();
      launch->keep.push_back(set->buffers[m]);
      may_alias = may_alias && set->buffers[m]->external_references() == 0;
    }
    if (plan.aliases[i] >= 0 && !may_alias) {
      launch->non_donatable.push_back(static_cast<int64_t>(i));
    }
  }
  return true;
}

// The ONE execute over all devices (GIL released), outputs owned.
void PmapExecute(const Entry& entry, PmapLaunch* launch) {
  py::gil_scoped_release release;
  ExecuteReplicated(*entry.executable, entry.pmap->has_collectives, launch);
}

// The result pytree: a sharded array per mapped output, a replicated one
// (axis -1) for an out_axes=None output (empty with a Python error).
py::object PmapResult(const Entry& entry, PmapLaunch* launch) {
  const PmapPlan& plan = *entry.pmap;
  const std::size_t n = launch->num_devices;
  const std::size_t num_outputs = entry.outputs.size();
  SmallVector<py::object, 8> arrays;
  for (std::size_t j = 0; j < num_outputs; ++j) {
    PyObject* made;  // a new reference, owned at once by `arrays`
    std::vector<std::shared_ptr<Buffer>> shards(n);
    for (std::size_t m = 0; m < n; ++m) shards[m] = launch->outputs[m * num_outputs + j];
    if (plan.out_axes[j] < 0) {  // out_axes=None: replicated, every device's copy kept
      made = MakeShardedPjrtArray(std::move(shards), plan.devices, -1, entry.outputs[j],
                                  entry.outputs[j], plan.axis_name);
    } else {
      made = MakeShardedPjrtArray(std::move(shards), plan.devices, plan.out_axes[j],
                                  entry.outputs[j], plan.global_outputs[j], plan.axis_name);
    }
    arrays.push_back(py::reinterpret_steal<py::object>(made));
    if (!arrays.back()) return {};
  }
  if (entry.out_tree.size() == 1 && entry.out_tree[0].kind == kOutLeaf) {
    return std::move(arrays[0]);
  }
  std::size_t next = 0, node = 0;
  return BuildOutputs(entry, arrays.data(), &next, &node);
}

// Donation per shard, once the result exists (SPEC "Donation").
bool PmapDonateInputs(FastJittedObject* fn, const Entry& entry, const CallState& state,
                      const PmapLaunch& launch) {
  if (!entry.plan.any_donated()) return true;
  for (std::size_t i = 0; i < state.leaves.size(); ++i) {
    if (!entry.plan.inputs()[i].donated) continue;
    const Leaf& leaf = state.leaves[i];
    auto* array = reinterpret_cast<PjrtArrayObject*>(leaf.object.ptr());
    if (leaf.kind == kShardedLeaf) {
      bool copied = false;
      for (int64_t k : launch.non_donatable) copied = copied || k == static_cast<int64_t>(i);
      const bool taken = entry.pmap->aliases[i] >= 0 && !copied;
      MarkShardsDonated(array, fn->name.ptr(), std::vector<bool>(launch.num_devices, taken));
    } else if (leaf.kind == kPjrtLeaf) {
      MarkDonated(array, fn->name.ptr(), /*memory_taken=*/false);  // its pieces were copies
    } else if (leaf.kind == kRefArrayLeaf) {
      if (!MarkRefArrayDonated(leaf, fn)) return false;
    }
  }
  return true;
}

// Runs a cached pmap entry: empty with a Python error, or *slow (nothing ran).
py::object RunPmap(FastJittedObject* fn, const Entry& entry, CallState& state, bool* slow) {
  if (RefusePmapInReplicatedCallback()) return {};
  LaunchPins pins;  // released last, with the GIL held
  PmapLaunch launch(entry.pmap->devices.size(), state.leaves.size());
  try {
    if (!PmapTransferHostInputs(entry, state, &launch, slow)) return {};
    if (!PmapBindShardedInputs(entry, state, &launch, slow, &pins)) return {};
    PmapExecute(entry, &launch);
    py::object result = PmapResult(entry, &launch);
    if (!result || !PmapDonateInputs(fn, entry, state, launch)) return {};
    ++fn->hits;
    return result;
  } catch (...) {
    if (!ReportDeletedInput(state)) SetPythonErrorFromCurrentException();
    return {};
  }
}

// The Python pmap's launch (misses, host callbacks, nested pmaps):
// `per_device[d]` are device d's buffers, `donated[i]` whether argument i
// is donated (empty: none). Checked and pinned with the GIL held, as the
// fast path's inputs; outputs per device.
std::vector<std::vector<std::shared_ptr<Buffer>>> PythonPmapLaunch(
    const std::shared_ptr<Executable>& executable, const py::sequence& per_device,
    bool has_collectives, const std::vector<bool>& donated,
    const std::vector<std::shared_ptr<Executable>>& local) {
  if (RefusePmapInReplicatedCallback()) throw py::error_already_set();
  if (!local.empty()) {
    try {
      CheckLocalExecutables(*executable, local);
    } catch (const std::invalid_argument& error) {
      throw py::value_error(std::string("_pmap_launch: ") + error.what());
    }
  }
  std::vector<std::vector<std::shared_ptr<Buffer>>> owned;
  for (const py::handle& args : per_device) {
    std::vector<std::shared_ptr<Buffer>> row;
    for (const py::handle& b : args) row.push_back(b.cast<std::shared_ptr<Buffer>>());
    owned.push_back(std::move(row));
  }
  const std::size_t n = owned.size();
  const std::size_t num_args = n == 0 ? 0 : owned[0].size();
  if (n == 0 || n != executable->device_indices().size()) {
    throw py::value_error("_pmap_launch: one argument list per device of the executable");
  }
  LaunchPins pins;
  ReplicatedLaunch launch(n, num_args);
  for (std::size_t d = 0; d < n; ++d) {
    if (owned[d].size() != num_args) throw py::value_error("_pmap_launch: ragged argument lists");
    for (std::size_t i = 0; i < num_args; ++i) {
      const std::shared_ptr<Buffer>& buffer = owned[d][i];
      if (!buffer || buffer->client() != executable->client()) {
        throw py::value_error("_pmap_launch: an argument is null or of another client");
      }
      const bool donate = i < donated.size() && donated[i];
      bool may_alias = true;
      if (donate ? !pins.Donate(buffer, &may_alias) : !pins.Read(buffer)) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Array has been deleted. It was donated to a call running in another "
                        "thread and may not be used again.");
        throw py::error_already_set();
      }
      if (buffer->IsDeleted()) {
        PyErr_SetString(PyExc_RuntimeError, "Array has been deleted.");
        throw py::error_already_set();
      }
      if (donate && (!may_alias || buffer->external_references() > 0)) {
        launch.non_donatable.push_back(static_cast<int64_t>(i));
      }
      launch.at(d, i) = buffer->raw();
    }
  }
  // A buffer both donated and read by this launch would be freed under its
  // own reader: refused (the public callers check this with a message that
  // names the arguments; this guards every other caller).
  for (std::size_t d = 0; d < n; ++d) {
    SmallVector<StorageUse, 16> uses;
    for (std::size_t i = 0; i < num_args; ++i) {
      uses.push_back({owned[d][i].get(), i < donated.size() && donated[i]});
    }
    if (DonatedStorageRepeats(uses.data(), uses.size())) {
      throw py::value_error(
          "_pmap_launch: a donated buffer is also passed as another argument of the same launch");
    }
  }
  {
    py::gil_scoped_release release;
    if (local.empty()) {
      ExecuteReplicated(*executable, has_collectives, &launch);
    } else {
      ExecuteLocal(local, &launch);
    }
  }
  const std::size_t num_outputs = executable->num_outputs();
  std::vector<std::vector<std::shared_ptr<Buffer>>> outs(n);
  for (std::size_t d = 0; d < n; ++d) {
    for (std::size_t j = 0; j < num_outputs; ++j) {
      outs[d].push_back(std::move(launch.outputs[d * num_outputs + j]));
    }
  }
  return outs;  // `pins` go with the GIL held
}

// ============================================================ __call__

bool UseFastPath(const FastJittedObject* fn) {
  if (PyList_GET_SIZE(g_ctx.builders.ptr()) != 0) return false;  // inside a trace: nested jit
  if (fn->follow_config_backend) {
    py::handle backend = DictItem(g_ctx.config_values, g_ctx.s_backend);
    if (!backend) return false;
    if (!backend.is(g_ctx.s_pjrt) && (!PyUnicode_Check(backend.ptr()) ||
                                      PyUnicode_Compare(backend.ptr(), g_ctx.s_pjrt.ptr()) != 0)) {
      return false;
    }
  }
  return true;
}

// The call: a result (owned), or empty with a Python error set.
py::object Call(FastJittedObject* fn, const CallArgs& call) {
  if (!UseFastPath(fn)) return SlowCall(fn, call);
  // Inside a host callback: the Python path places the call on a device
  // that is not waiting for this callback (else it never starts).
  if (!fn->pmap && InHostCallback()) return SlowCall(fn, call);
  CallState state;
  state.x64 = DictItem(g_ctx.config_values, g_ctx.s_enable_x64).ptr() == Py_True;
  state.precision = MatmulPrecisionKey();
  SignatureBuilder builder(fn, &state);
  if (!builder.Build(call)) {
    if (PyErr_Occurred()) return {};
    return SlowCall(fn, call);
  }
  if (state.any_donated && RepeatsDonatedArray(state)) return SlowCall(fn, call);
  EntryPtr entry = Find(fn, state.signature);
  if (!entry) {
    entry = Miss(fn, call, &state);
    if (!entry) return {};
  }
  if (entry->slow) return SlowCall(fn, call);
  bool slow = false;
  py::object result =
      entry->pmap ? RunPmap(fn, *entry, state, &slow) : Run(fn, *entry, state, &slow);
  if (slow) return SlowCall(fn, call);
  return result;
}

// The vectorcall entry (CPython's protocol: borrowed arguments, a new
// reference or null with an error set).
PyObject* FastJittedCall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const CallArgs call{args, nargsf, PyVectorcall_NARGS(nargsf), kwnames};
  return Call(reinterpret_cast<FastJittedObject*>(self), call).release().ptr();
}

// ============================================================ the type's plumbing

std::vector<int> IntList(py::handle sequence) {
  std::vector<int> out;
  for (py::handle item : sequence) out.push_back(item.cast<int>());
  return out;
}

std::vector<py::object> NameList(py::handle sequence) {
  std::vector<py::object> out;
  for (py::handle item : sequence) {
    if (!PyUnicode_Check(item.ptr()))
      throw py::type_error("FastJitted: argument names must be str");
    py::str name = py::reinterpret_borrow<py::str>(item);
    PyUnicode_InternInPlace(&name.ptr());  // swaps in the interned string's reference
    out.push_back(std::move(name));
  }
  return out;
}

// Constructs the C++ fields of a FastJitted in the zeroed memory tp_alloc
// gave; each must be destroyed by DestroyFields.
void InitFields(FastJittedObject* fn) {
  new (&fn->jitted) py::object();
  new (&fn->on_miss) py::object();
  new (&fn->name) py::object();
  new (&fn->dict) py::object();
  new (&fn->static_nums) std::vector<int>();
  new (&fn->donate_nums) std::vector<int>();
  new (&fn->static_names) std::vector<py::object>();
  new (&fn->donate_names) std::vector<py::object>();
  new (&fn->cache) std::unique_ptr<SignatureCache<Entry>>(new SignatureCache<Entry>());
}

void DestroyFields(FastJittedObject* fn) {
  using ObjectVector = std::vector<py::object>;
  using IntVector = std::vector<int>;
  using CachePtr = std::unique_ptr<SignatureCache<Entry>>;
  fn->cache.~CachePtr();
  fn->donate_names.~ObjectVector();
  fn->static_names.~ObjectVector();
  fn->donate_nums.~IntVector();
  fn->static_nums.~IntVector();
  fn->dict.~object();
  fn->name.~object();
  fn->on_miss.~object();
  fn->jitted.~object();
}

PyObject* FastJittedNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* names[] = {
      "jitted",         "on_miss",         "static_argnums",        "static_argnames",
      "donate_argnums", "donate_argnames", "follow_config_backend", "pmap",
      nullptr};
  PyObject *jitted, *on_miss, *static_nums, *static_names, *donate_nums, *donate_names;
  int follow = 0;
  int pmap = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOp|$p:FastJitted", const_cast<char**>(names),
                                   &jitted, &on_miss, &static_nums, &static_names, &donate_nums,
                                   &donate_names, &follow, &pmap)) {
    return nullptr;
  }
  if (!g_installed) {
    PyErr_SetString(PyExc_RuntimeError,
                    "FastJitted: refimpl.backends.pjrt.arrays has not been imported yet");
    return nullptr;
  }
  py::object self = py::reinterpret_steal<py::object>(type->tp_alloc(type, 0));
  if (!self) return nullptr;
  auto* fn = reinterpret_cast<FastJittedObject*>(self.ptr());
  fn->vectorcall = FastJittedCall;
  fn->weakrefs = nullptr;
  fn->follow_config_backend = follow != 0;
  fn->pmap = pmap != 0;
  fn->hits = fn->misses = fn->slow_calls = 0;
  InitFields(fn);  // from here on, dealloc destroys the fields
  try {
    fn->jitted = py::reinterpret_borrow<py::object>(jitted);
    fn->on_miss = py::reinterpret_borrow<py::object>(on_miss);
    fn->name = fn->jitted.attr("__name__");
    fn->static_nums = IntList(static_nums);
    fn->donate_nums = IntList(donate_nums);
    fn->static_names = NameList(static_names);
    fn->donate_names = NameList(donate_names);
  } catch (...) {
    SetPythonErrorFromCurrentException();
    return nullptr;  // `self` goes, through FastJittedDealloc
  }
  return self.release().ptr();
}

int FastJittedTraverse(PyObject* self, visitproc visit, void* arg) {
  auto* fn = reinterpret_cast<FastJittedObject*>(self);
  Py_VISIT(Py_TYPE(self));
  Py_VISIT(fn->jitted.ptr());
  Py_VISIT(fn->on_miss.ptr());
  Py_VISIT(fn->dict.ptr());
  if (fn->cache != nullptr) {
    int failed = 0;
    fn->cache->ForEach([&](const Entry& entry) {
      for (const Handle& handle : entry.signature.handles()) {
        if (failed == 0) failed = visit(static_cast<PyObject*>(handle.object), arg);
      }
      for (const OutNode& node : entry.out_tree) {
        if (failed == 0 && node.data) failed = visit(node.data.ptr(), arg);
        if (failed == 0 && node.unflatten) failed = visit(node.unflatten.ptr(), arg);
      }
    });
    if (failed != 0) return failed;
  }
  return 0;
}

int FastJittedClear(PyObject* self) {
  auto* fn = reinterpret_cast<FastJittedObject*>(self);
  if (fn->cache != nullptr) fn->cache->Clear();
  // Assigning an empty object releases the old reference after the slot is
  // emptied (as Py_CLEAR), so a destructor that reaches back sees null.
  fn->jitted = py::object();
  fn->on_miss = py::object();
  fn->dict = py::object();
  return 0;
}

void FastJittedDealloc(PyObject* self) {
  auto* fn = reinterpret_cast<FastJittedObject*>(self);
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  if (fn->weakrefs != nullptr) PyObject_ClearWeakRefs(self);
  FastJittedClear(self);
  DestroyFields(fn);
  type->tp_free(self);
  // An instance of a heap type owns a reference to its type (taken by
  // tp_alloc); CPython leaves releasing it to the type's tp_dealloc.
  Py_DECREF(type);
}

// Attributes the fast callable does not have come from the Python Jitted
// (trace_count, _cache_size, trace, lower, spec, fun, ...).
PyObject* FastJittedGetAttr(PyObject* self, PyObject* name) {
  PyObject* found = PyObject_GenericGetAttr(self, name);
  if (found != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
  auto* fn = reinterpret_cast<FastJittedObject*>(self);
  if (!fn->jitted) return nullptr;
  PyErr_Clear();
  return PyObject_GetAttr(fn->jitted.ptr(), name);
}

PyObject* FastJittedRepr(PyObject* self) {
  return PyUnicode_FromFormat("<Jitted %S>", reinterpret_cast<FastJittedObject*>(self)->name.ptr());
}

PyObject* ClearCache(PyObject* self, PyObject*) {
  auto* fn = reinterpret_cast<FastJittedObject*>(self);
  fn->cache->Clear();
  return PyObject_CallMethodNoArgs(fn->jitted.ptr(), g_ctx.s_clear_cache.ptr());
}

PyObject* FastCacheSize(PyObject* self, PyObject*) {
  return PyLong_FromSize_t(reinterpret_cast<FastJittedObject*>(self)->cache->size());
}

PyObject* FastStats(PyObject* self, PyObject*) {
  auto* fn = reinterpret_cast<FastJittedObject*>(self);
  return Py_BuildValue("{s:K,s:K,s:K}", "hits", static_cast<unsigned long long>(fn->hits), "misses",
                       static_cast<unsigned long long>(fn->misses), "slow",
                       static_cast<unsigned long long>(fn->slow_calls));
}

PyMethodDef kFastJittedMethods[] = {
    {"clear_cache", ClearCache, METH_NOARGS,
     "Forgets every compiled signature (C++ entries and the Python cache)."},
    {"_fast_cache_size", FastCacheSize, METH_NOARGS,
     "Number of C++ cache entries (may exceed _cache_size(): the C++ signature is finer)."},
    {"_fast_stats", FastStats, METH_NOARGS,
     "Counters: calls served from the C++ cache (hits), calls that went to on_miss (misses), "
     "calls handed to the Python Jitted (slow)."},
    {nullptr, nullptr, 0, nullptr},
};

PyMemberDef kFastJittedMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FastJittedObject, vectorcall), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(FastJittedObject, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(FastJittedObject, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyObject* GetJitted(PyObject* self, void*) {
  const py::object& jitted = reinterpret_cast<FastJittedObject*>(self)->jitted;
  if (!jitted) Py_RETURN_NONE;  // cleared by the garbage collector
  return jitted.inc_ref().ptr();
}

PyGetSetDef kFastJittedGetSet[] = {
    {"_jitted", GetJitted, nullptr,
     "The refimpl Jitted behind the fast path (misses, slow path, trace/lower).", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// ============================================================ install

py::object Interned(const char* text) {
  py::object s = py::reinterpret_steal<py::object>(PyUnicode_InternFromString(text));
  if (!s) throw py::error_already_set();
  return s;
}

void Install(py::object registry, py::object builders, py::object config_values,
             py::object ref_array_type, py::object aval_factory) {
  if (!PyDict_Check(registry.ptr()) || !PyList_Check(builders.ptr()) ||
      !PyDict_Check(config_values.ptr()) || !PyType_Check(ref_array_type.ptr())) {
    throw py::type_error(
        "install(registry: dict, builders: list, config_values: dict, ref_array_type: type, "
        "aval_factory)");
  }
  g_ctx.registry = registry;
  g_ctx.builders = builders;
  g_ctx.config_values = config_values;
  g_ctx.ref_array_type = ref_array_type;
  g_ctx.s_backend = Interned("backend");
  g_ctx.s_enable_x64 = Interned("enable_x64");
  g_ctx.s_pjrt = Interned("pjrt");
  g_ctx.s_tag = Interned("tag");
  g_ctx.s_flatten = Interned("flatten");
  g_ctx.s_namedtuple = Interned("namedtuple");
  g_ctx.s_buffer = Interned("_buffer");
  g_ctx.s_mark_donated = Interned("mark_donated");
  g_ctx.s_aval = Interned("aval");
  g_ctx.s_weak_type = Interned("weak_type");
  g_ctx.s_check_live = Interned("_check_live");
  g_ctx.s_clear_cache = Interned("clear_cache");
  try {
    py::dtype bf16 = py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
    g_ctx.bfloat16_num = bf16.num();
  } catch (const py::error_already_set&) {
    g_ctx.bfloat16_num = -1;
  }
  SetAvalFactory(aval_factory.ptr());
  g_installed = true;
}

// Ref arguments take the fast path from now on: `ref_type` is refimpl.ref.Ref,
// whose `_value` is a __slots__ member, read through its member descriptor.
void InstallRefType(py::object ref_type) {
  if (!PyType_Check(ref_type.ptr())) throw py::type_error("_install_ref_type: expected a type");
  auto* type = reinterpret_cast<PyTypeObject*>(ref_type.ptr());
  py::object descr = py::reinterpret_borrow<py::object>(
      PyDict_GetItemString(type->tp_dict, "_value"));  // borrowed from the type's dict
  if (!descr || Py_TYPE(descr.ptr()) != &PyMemberDescr_Type) {
    throw py::type_error("_install_ref_type: the type has no `_value` slot");
  }
  PyMemberDef* member = reinterpret_cast<PyMemberDescrObject*>(descr.ptr())->d_member;
  if (member->type != T_OBJECT_EX || (member->flags & READONLY) != 0) {
    throw py::type_error("_install_ref_type: `_value` is not a writable object slot");
  }
  g_ctx.ref_value_descr = std::move(descr);
  g_ctx.ref_value = member;
  g_ctx.ref_type = std::move(ref_type);
}

}  // namespace

void RegisterFastJit(py::module_& m) {
  static PyType_Slot slots[] = {
      {Py_tp_doc, const_cast<char*>("jit(f, backend='pjrt'): a signature cache in C++ in front of "
                                    "refimpl's Jitted (see bindings/fast_jit.h).")},
      {Py_tp_new, reinterpret_cast<void*>(FastJittedNew)},
      {Py_tp_dealloc, reinterpret_cast<void*>(FastJittedDealloc)},
      {Py_tp_traverse, reinterpret_cast<void*>(FastJittedTraverse)},
      {Py_tp_clear, reinterpret_cast<void*>(FastJittedClear)},
      {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
      {Py_tp_getattro, reinterpret_cast<void*>(FastJittedGetAttr)},
      {Py_tp_repr, reinterpret_cast<void*>(FastJittedRepr)},
      {Py_tp_methods, kFastJittedMethods},
      {Py_tp_members, kFastJittedMembers},
      {Py_tp_getset, kFastJittedGetSet},
      {0, nullptr},
  };
  static PyType_Spec spec = {
      "refimpl._pjrt.FastJitted",
      sizeof(FastJittedObject),
      0,
      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
      slots,
  };
  py::object type = py::reinterpret_steal<py::object>(PyType_FromSpec(&spec));
  if (!type) throw py::error_already_set();
  m.add_object("FastJitted", type);
  py::dict kinds;
  kinds["leaf"] = static_cast<int>(kOutLeaf);
  kinds["tuple"] = static_cast<int>(kOutTuple);
  kinds["list"] = static_cast<int>(kOutList);
  kinds["dict"] = static_cast<int>(kOutDict);
  kinds["none"] = static_cast<int>(kOutNone);
  kinds["node"] = static_cast<int>(kOutNode);
  m.attr("OUT_KINDS") = kinds;

  m.def("_install_fast_path", &Install, py::arg("registry"), py::arg("builders"),
        py::arg("config_values"), py::arg("ref_array_type"), py::arg("aval_factory"),
        "Hands the fast path the Python state it reads on every call (tree_util's registry, "
        "the trace stack, config values) and the reference Array type. Called once by "
        "refimpl.backends.pjrt.fast_path.");
  m.def("_install_ref_type", &InstallRefType, py::arg("ref_type"),
        "Lets Ref arguments (refimpl.ref.Ref, a __slots__ class) take the fast path: their "
        "held PJRT array is read, aliased and written back in C++. Called once by "
        "refimpl.backends.pjrt.fast_path.");
  m.def(
      "_set_release_gil_bytes",
      [](std::size_t bytes) {
        std::size_t old = g_release_gil_bytes;
        g_release_gil_bytes = bytes;
        return old;
      },
      py::arg("bytes"),
      "Sets the input+output size from which new cache entries release the GIL around "
      "execute; returns the previous value.");
  m.def("_pmap_launch", &PythonPmapLaunch, py::arg("executable"), py::arg("per_device_args"),
        py::arg("has_collectives"), py::arg("donated") = std::vector<bool>(),
        py::arg("local") = std::vector<std::shared_ptr<Executable>>(),
        "Executable.execute_sharded under pmap's rule for programs with collectives (a launch "
        "waits for the previous one's outputs), shared with the C++ fast path; the buffers are "
        "pinned as the fast path's (an input deleted meanwhile is freed after the launch; a "
        "donated one is claimed, and copied when another launch reads it). With `local` (one "
        "single-device executable per device of `executable`, for a program without "
        "communication), each device runs its own instead, one after another.");
  m.def(
      "_check_pmap_allowed",
      [] {
        if (RefusePmapInReplicatedCallback()) throw py::error_already_set();
      },
      "Raises RuntimeError inside a host callback of a pmap, where another pmap would hang.");
  m.def(
      "_clear_constant_cache", [] { ProcessConstantCache().Clear(); },
      "Drops the cached device buffers of Python scalar arguments.");
  m.def(
      "_constant_cache_size", [] { return ProcessConstantCache().size(); },
      "Number of cached device buffers of Python scalar arguments.");
}

}  // namespace bindings
}  // namespace refimpl
