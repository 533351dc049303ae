// refimpl._pjrt.PjrtArray: the PJRT backend's array, a C++ type.
//
// It holds one device buffer plus what the SPEC array protocol needs
// (weak_type, device, committed, deletion and donation state). Shape and
// dtype live in an interned ArrayMeta shared by every array of that type, so
// the fast path makes an output array with one allocation and reads an
// input's type by pointer.
//
// Arithmetic, indexing and the numpy-like methods are attached from Python
// (refimpl.backends.pjrt.arrays installs the protocol of refimpl.Array and registers the
// type as one), which is why the
// type is a mutable heap type.
#ifndef REFIMPL_BINDINGS_PJRT_ARRAY_H_
#define REFIMPL_BINDINGS_PJRT_ARRAY_H_

#include <Python.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "../native/buffer.h"
#include "../native/client.h"
#include "../native/pjrt_abi.h"

namespace refimpl {
namespace bindings {

// The type of an array, shared and never freed (one per distinct element
// type, shape and weak_type seen by the process).
struct ArrayMeta {
  PJRT_Buffer_Type type;
  std::vector<int64_t> dims;
  bool weak_type;
  int64_t size;
  std::size_t nbytes;
  PyObject* dtype;         // numpy dtype
  PyObject* shape;         // tuple of ints
  mutable PyObject* aval;  // refimpl.core.ShapedArray, made on first use
  PyObject* deleted_text;  // "shape=float32[3]" for the deleted-array error
};

// Requires the GIL. Raises (C++) on an element type without a NumPy dtype.
const ArrayMeta* InternArrayMeta(PJRT_Buffer_Type type, const int64_t* dims, std::size_t ndim,
                                 bool weak_type);

// The shards of an array spread over several devices (a pmap output): shard
// m is the slice m along `axis` of the global value and lives on device
// `device_indices[m]` of the client. Empty `buffers` once deleted.
struct ShardSet {
  std::vector<std::shared_ptr<Buffer>> buffers;
  std::vector<int> device_indices;
  int axis = 0;                           // -1: replicated (every buffer holds the whole value)
  const ArrayMeta* shard_meta = nullptr;  // the type of one shard
  std::shared_ptr<Client> client;
  // The pmap's axis name (JAX 0.10.2 names the mesh axis of the output's
  // NamedSharding after it); None when the array was not made by a pmap.
  pybind11::object axis_name = pybind11::none();
};

struct PjrtArrayObject {
  PyObject_HEAD std::shared_ptr<Buffer> buffer;  // empty once deleted, and when sharded
  const ArrayMeta* meta;                         // the global type
  int device_index;                              // sharded: the first shard's device
  bool committed;
  pybind11::object donated_to;  // name of the function the buffer was donated to, or null
  PyObject* weakrefs;
  ShardSet* shards;  // owned; null for an array on one device
  // every PjrtArray alive, in a list threaded through them (live_pjrt_arrays:
  // jax.live_arrays); changed with the GIL held
  PjrtArrayObject* live_prev;
  PjrtArrayObject* live_next;
};

PyTypeObject* PjrtArrayType();
inline bool IsPjrtArray(PyObject* object) {
  return Py_TYPE(object) == PjrtArrayType() || PyObject_TypeCheck(object, PjrtArrayType());
}

// A new array owning `buffer` (new reference; null with a Python error set).
PyObject* MakePjrtArray(std::shared_ptr<Buffer> buffer, const ArrayMeta* meta, int device_index,
                        bool committed);

// A new array over `buffers` (one per device, shard m = slice m along
// `axis`), all of type `shard_meta`; `meta` is the global type (new
// reference; null with a Python error set).
PyObject* MakeShardedPjrtArray(std::vector<std::shared_ptr<Buffer>> buffers,
                               std::vector<int> device_indices, int axis,
                               const ArrayMeta* shard_meta, const ArrayMeta* meta,
                               pybind11::object axis_name = pybind11::none());

// Whether the array still has its buffer(s) (deleted arrays have none).
// Whether every shard's device buffer is still there: a shard handed out by
// `addressable_shards` can be deleted on its own, which deletes the memory
// the sharded array reads (PJRT answers "deleted" for that buffer).
bool ShardBuffersLive(const ShardSet& set) noexcept;

inline bool IsLive(const PjrtArrayObject* array) {
  if (array->shards == nullptr) return static_cast<bool>(array->buffer);
  return !array->shards->buffers.empty() && ShardBuffersLive(*array->shards);
}

// Sets the deleted-array RuntimeError ("has been deleted", and "donated"
// plus the function's name when it was donated).
void SetDeletedError(const PjrtArrayObject* array);

// Inside a catch block of a read of the array `self`: the deleted-array error
// when it was deleted or donated meanwhile (another thread), else the
// exception's own error.
void SetReadError(PyObject* self);

// Deletes the array because a call took its buffer: frees the device memory
// unless `memory_taken` (PJRT already reused it), drops the buffer, and
// remembers `function_name` (borrowed) for the error message.
void MarkDonated(PjrtArrayObject* array, PyObject* function_name, bool memory_taken);

// The same for a sharded array: `memory_taken[m]` for shard m.
void MarkShardsDonated(PjrtArrayObject* array, PyObject* function_name,
                       const std::vector<bool>& memory_taken);

// Called from Python once refimpl.core is importable: makes `.aval` work.
void SetAvalFactory(PyObject* factory);

void RegisterPjrtArray(pybind11::module_& m);

}  // namespace bindings
}  // namespace refimpl

#endif  // REFIMPL_BINDINGS_PJRT_ARRAY_H_
