#include "numpy_capi.h"  // first: defines the NumPy C API symbols

#include "pjrt_array.h"

#include <pybind11/stl.h>
#include <structmember.h>

#include <map>
#include <string>
#include <utility>

#include "../native/client.h"
#include "../native/element_type.h"
#include "device.h"
#include "launch_pins.h"
#include "numpy_interop.h"
#include "py_errors.h"

namespace py = pybind11;

namespace refimpl {
namespace bindings {

namespace {

PyTypeObject* g_array_type = nullptr;
PyObject* g_aval_factory = nullptr;  // refimpl.core.ShapedArray

// ---------------------------------------------------------------- metadata

// Key of an interned meta: element type, weak_type, then the dims.
std::map<std::vector<int64_t>, const ArrayMeta*>& MetaTable() {
  static auto* table = new std::map<std::vector<int64_t>, const ArrayMeta*>();
  return *table;
}

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

PjrtArrayObject* AsArray(PyObject* self) { return reinterpret_cast<PjrtArrayObject*>(self); }

bool RequireLive(PyObject* self) {
  if (IsLive(AsArray(self))) return true;
  SetDeletedError(AsArray(self));
  return false;
}

}  // namespace

const ArrayMeta* InternArrayMeta(PJRT_Buffer_Type type, const int64_t* dims, std::size_t ndim,
                                 bool weak_type) {
  std::vector<int64_t> key;
  key.reserve(ndim + 2);
  key.push_back(static_cast<int64_t>(type));
  key.push_back(weak_type ? 1 : 0);
  key.insert(key.end(), dims, dims + ndim);
  auto& table = MetaTable();
  auto found = table.find(key);
  if (found != table.end()) return found->second;

  py::dtype dtype = DtypeFromElementType(type);  // raises for types NumPy lacks
  auto* meta = new ArrayMeta();
  meta->type = type;
  meta->dims.assign(dims, dims + ndim);
  meta->weak_type = weak_type;
  meta->size = 1;
  for (int64_t d : meta->dims) meta->size *= d;
  meta->nbytes = static_cast<std::size_t>(meta->size) * ElementByteSize(type);
  py::tuple shape(ndim);
  for (std::size_t i = 0; i < ndim; ++i) shape[i] = py::int_(dims[i]);
  meta->shape = shape.release().ptr();
  std::string name = py::str(dtype.attr("name")).cast<std::string>();
  meta->deleted_text = py::str("shape=" + name + DimsText(meta->dims)).release().ptr();
  meta->dtype = dtype.release().ptr();
  meta->aval = nullptr;
  table.emplace(std::move(key), meta);
  return meta;
}

PyTypeObject* PjrtArrayType() { return g_array_type; }

namespace {

// The list of every PjrtArray alive (jax.live_arrays), newest first.
PjrtArrayObject* g_live_head = nullptr;

void LinkLive(PjrtArrayObject* array) {
  array->live_prev = nullptr;
  array->live_next = g_live_head;
  if (g_live_head != nullptr) g_live_head->live_prev = array;
  g_live_head = array;
}

void UnlinkLive(PjrtArrayObject* array) {
  if (array->live_prev != nullptr) {
    array->live_prev->live_next = array->live_next;
  } else if (g_live_head == array) {
    g_live_head = array->live_next;
  }
  if (array->live_next != nullptr) array->live_next->live_prev = array->live_prev;
  array->live_prev = array->live_next = nullptr;
}

}  // namespace

void SetAvalFactory(PyObject* factory) {
  Py_XINCREF(factory);
  Py_XSETREF(g_aval_factory, factory);
}

PyObject* MakePjrtArray(std::shared_ptr<Buffer> buffer, const ArrayMeta* meta, int device_index,
                        bool committed) {
  PyObject* self = g_array_type->tp_alloc(g_array_type, 0);
  if (self == nullptr) return nullptr;
  PjrtArrayObject* array = AsArray(self);
  new (&array->buffer) std::shared_ptr<Buffer>(std::move(buffer));
  array->meta = meta;
  array->device_index = device_index;
  array->committed = committed;
  new (&array->donated_to) py::object();
  array->weakrefs = nullptr;
  array->shards = nullptr;
  LinkLive(array);
  return self;
}

PyObject* MakeShardedPjrtArray(std::vector<std::shared_ptr<Buffer>> buffers,
                               std::vector<int> device_indices, int axis,
                               const ArrayMeta* shard_meta, const ArrayMeta* meta,
                               py::object axis_name) {
  if (buffers.empty() || buffers.size() != device_indices.size()) {
    PyErr_SetString(PyExc_ValueError, "sharded PjrtArray: one buffer per device is required");
    return nullptr;
  }
  auto* set = new ShardSet();
  set->client = buffers[0]->client();
  set->buffers = std::move(buffers);
  set->device_indices = std::move(device_indices);
  set->axis = axis;
  set->shard_meta = shard_meta;
  set->axis_name = std::move(axis_name);
  const int first = set->device_indices[0];
  PyObject* self = MakePjrtArray(nullptr, meta, first, /*committed=*/false);
  if (self == nullptr) {
    delete set;
    return nullptr;
  }
  AsArray(self)->shards = set;
  return self;
}

bool ShardBuffersLive(const ShardSet& set) noexcept {
  try {
    for (const auto& buffer : set.buffers) {
      if (buffer->IsDeleted()) return false;
    }
    return true;
  } catch (...) {
    return false;  // a buffer PJRT cannot describe is not one to read
  }
}

void SetDeletedError(const PjrtArrayObject* array) {
  if (array->donated_to) {
    PyErr_Format(PyExc_RuntimeError,
                 "Array has been deleted with %U. It was donated to %R and may not be used again.",
                 array->meta->deleted_text, array->donated_to.ptr());
  } else {
    PyErr_Format(PyExc_RuntimeError, "Array has been deleted with %U.", array->meta->deleted_text);
  }
}

// Inside a catch block of a read of `self`: the deleted-array error when the
// array (or the memory it reads) was deleted or donated meanwhile -- another
// thread can donate or delete it between the liveness check and the plugin's
// read, which then fails with PJRT's raw "deleted or donated buffer" -- and
// the exception's own error otherwise.
void SetReadError(PyObject* self) {
  PjrtArrayObject* array = AsArray(self);
  bool gone = !IsLive(array);
  if (!gone && array->buffer) {
    try {
      gone = array->buffer->IsDeleted();
    } catch (...) {
      gone = true;
    }
  }
  if (gone) {
    SetDeletedError(array);
    return;
  }
  SetPythonErrorFromCurrentException();
}

void MarkShardsDonated(PjrtArrayObject* array, PyObject* function_name,
                       const std::vector<bool>& memory_taken) {
  ShardSet* set = array->shards;
  for (std::size_t m = 0; m < set->buffers.size(); ++m) {
    if (m < memory_taken.size() && memory_taken[m]) continue;
    ReleaseDeviceMemory(set->buffers[m]);  // (later if a launch still reads it)
  }
  set->buffers.clear();
  array->donated_to = py::reinterpret_borrow<py::object>(function_name);
}

void MarkDonated(PjrtArrayObject* array, PyObject* function_name, bool memory_taken) {
  if (array->shards != nullptr) {
    MarkShardsDonated(array, function_name,
                      std::vector<bool>(array->shards->buffers.size(), memory_taken));
    return;
  }
  if (array->buffer) {
    if (!memory_taken) ReleaseDeviceMemory(array->buffer);  // (later if a launch reads it)
    array->buffer.reset();
  }
  array->donated_to = py::reinterpret_borrow<py::object>(function_name);
}

namespace {

// ------------------------------------------------------------- life cycle

PyObject* ArrayNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* names[] = {"buffer", "weak_type", "device", "committed", nullptr};
  PyObject* buffer_object = nullptr;
  int weak_type = 0;
  PyObject* device_object = Py_None;
  int committed = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|pOp:PjrtArray", const_cast<char**>(names),
                                   &buffer_object, &weak_type, &device_object, &committed)) {
    return nullptr;
  }
  try {
    py::handle handle(buffer_object);
    if (!py::isinstance<Buffer>(handle)) {
      PyErr_Format(PyExc_TypeError, "PjrtArray(): buffer must be a refimpl._pjrt.Buffer, got %s",
                   Py_TYPE(buffer_object)->tp_name);
      return nullptr;
    }
    auto buffer = handle.cast<std::shared_ptr<Buffer>>();
    if (buffer->IsDeleted()) {
      PyErr_SetString(PyExc_ValueError, "PjrtArray(): the buffer has been deleted");
      return nullptr;
    }
    int device_index = buffer->device_index();
    if (device_object != Py_None) {
      const Device& device = py::handle(device_object).cast<const Device&>();
      if (device.client.get() != buffer->client().get() || device.index != device_index) {
        PyErr_SetString(PyExc_ValueError, "PjrtArray(): the buffer is not on that device");
        return nullptr;
      }
    }
    const std::vector<int64_t>& dims = buffer->dims();
    const ArrayMeta* meta =
        InternArrayMeta(buffer->element_type(), dims.data(), dims.size(), weak_type != 0);
    PyObject* self = type->tp_alloc(type, 0);
    if (self == nullptr) return nullptr;
    PjrtArrayObject* array = AsArray(self);
    new (&array->buffer) std::shared_ptr<Buffer>(std::move(buffer));
    array->meta = meta;
    array->device_index = device_index;
    array->committed = committed != 0;
    new (&array->donated_to) py::object();
    array->weakrefs = nullptr;
    array->shards = nullptr;
    LinkLive(array);
    return self;
  } catch (...) {
    SetPythonErrorFromCurrentException();
    return nullptr;
  }
}

void ArrayDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PjrtArrayObject* array = AsArray(self);
  if (array->weakrefs != nullptr) PyObject_ClearWeakRefs(self);
  UnlinkLive(array);
  array->buffer.~shared_ptr<Buffer>();
  delete array->shards;
  array->donated_to.~object();
  type->tp_free(self);
  Py_DECREF(type);
}

// ---------------------------------------------------------------- getters

PyObject* GetShape(PyObject* self, void*) { return Py_NewRef(AsArray(self)->meta->shape); }
PyObject* GetDtype(PyObject* self, void*) { return Py_NewRef(AsArray(self)->meta->dtype); }
PyObject* GetWeakType(PyObject* self, void*) {
  return PyBool_FromLong(AsArray(self)->meta->weak_type);
}
PyObject* GetNdim(PyObject* self, void*) {
  return PyLong_FromSize_t(AsArray(self)->meta->dims.size());
}
PyObject* GetSize(PyObject* self, void*) { return PyLong_FromLongLong(AsArray(self)->meta->size); }
PyObject* GetNbytes(PyObject* self, void*) {
  return PyLong_FromSize_t(AsArray(self)->meta->nbytes);
}
PyObject* GetCommitted(PyObject* self, void*) { return PyBool_FromLong(AsArray(self)->committed); }
PyObject* GetDonatedTo(PyObject* self, void*) {
  const py::object& name = AsArray(self)->donated_to;
  return Py_NewRef(name ? name.ptr() : Py_None);
}

PyObject* GetAval(PyObject* self, void*) {
  const ArrayMeta* meta = AsArray(self)->meta;
  if (meta->aval == nullptr) {
    if (g_aval_factory == nullptr) {
      PyErr_SetString(
          PyExc_RuntimeError,
          "PjrtArray.aval: refimpl.backends.pjrt.fast_path has not installed the aval type");
      return nullptr;
    }
    PyObject* aval = PyObject_CallFunctionObjArgs(g_aval_factory, meta->shape, meta->dtype,
                                                  meta->weak_type ? Py_True : Py_False, nullptr);
    if (aval == nullptr) return nullptr;
    meta->aval = aval;  // kept for the life of the process, like the meta
  }
  return Py_NewRef(meta->aval);
}

// The client of an array: its buffer's, or (deleted) any live client is
// not known; a deleted array still knows its device index only.
PyObject* DeviceObject(const std::shared_ptr<Client>& client, int index) {
  try {
    return py::cast(Device{client, index}).release().ptr();
  } catch (...) {
    SetPythonErrorFromCurrentException();
    return nullptr;
  }
}

PyObject* GetDevice(PyObject* self, void*) {
  if (!RequireLive(self)) return nullptr;
  PjrtArrayObject* array = AsArray(self);
  const std::shared_ptr<Client>& client =
      array->shards != nullptr ? array->shards->client : array->buffer->client();
  return DeviceObject(client, array->device_index);
}

// Raises for the single-buffer operations a sharded array does not have.
bool RequireOneBuffer(PyObject* self, const char* what) {
  const ShardSet* set = AsArray(self)->shards;
  if (set == nullptr) return true;
  PyErr_Format(PyExc_ValueError,
               "PjrtArray.%s: the array is sharded over %zu devices (one buffer each); use "
               ".addressable_shards for the per-device arrays",
               what, set->device_indices.size());
  return false;
}

PyObject* GetShardAxis(PyObject* self, void*) {
  const ShardSet* set = AsArray(self)->shards;
  if (set == nullptr) Py_RETURN_NONE;
  return PyLong_FromLong(set->axis);
}

PyObject* GetShardAxisName(PyObject* self, void*) {
  const ShardSet* set = AsArray(self)->shards;
  if (set == nullptr) Py_RETURN_NONE;
  return Py_NewRef(set->axis_name.ptr());
}

PyGetSetDef kGetSet[] = {
    {"shape", GetShape, nullptr, "Tuple of dimensions.", nullptr},
    {"dtype", GetDtype, nullptr, "NumPy dtype of the elements.", nullptr},
    {"weak_type", GetWeakType, nullptr, "Whether the array is weakly typed.", nullptr},
    {"ndim", GetNdim, nullptr, "Number of dimensions.", nullptr},
    {"size", GetSize, nullptr, "Number of elements.", nullptr},
    {"nbytes", GetNbytes, nullptr, "Bytes of a dense host copy.", nullptr},
    {"aval", GetAval, nullptr, "The abstract value (refimpl.core.ShapedArray).", nullptr},
    {"device", GetDevice, nullptr, "The device holding the buffer.", nullptr},
    {"committed", GetCommitted, nullptr, "Whether the array is committed to its device.", nullptr},
    {"_committed", GetCommitted, nullptr, "JAX's name for committed.", nullptr},
    {"_shard_axis", GetShardAxis, nullptr,
     "The axis split over the devices of a sharded array (a pmap output), or None.", nullptr},
    {"_shard_axis_name", GetShardAxisName, nullptr,
     "The pmap axis name a sharded array was made with, or None.", nullptr},
    {"_donated_to", GetDonatedTo, nullptr, "Name of the function the array was donated to.",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

// ---------------------------------------------------------------- methods

// The single-device arrays of a sharded array's shards, in device order:
// views sharing the shards' buffers (committed to their devices).
PyObject* ShardArrays(PyObject* self, PyObject*) {
  if (!RequireLive(self)) return nullptr;
  PjrtArrayObject* array = AsArray(self);
  const ShardSet* set = array->shards;
  if (set == nullptr) {
    PyObject* list = PyList_New(1);
    if (list != nullptr) PyList_SET_ITEM(list, 0, Py_NewRef(self));
    return list;
  }
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(set->buffers.size()));
  if (list == nullptr) return nullptr;
  for (std::size_t m = 0; m < set->buffers.size(); ++m) {
    PyObject* shard =
        MakePjrtArray(set->buffers[m], set->shard_meta, set->device_indices[m], /*committed=*/true);
    if (shard == nullptr) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(m), shard);
  }
  return list;
}

// The blocks of a sharded array as JAX 0.10.2's shards: per device, an array
// over the shard's buffer whose type keeps the split axis with size 1 (the
// same bytes: shard m is the block [m:m+1] along the axis). Like
// _shard_arrays, they share the buffers (deleting one deletes the array's).
PyObject* ShardBlocks(PyObject* self, PyObject*) {
  if (!RequireLive(self)) return nullptr;
  PjrtArrayObject* array = AsArray(self);
  const ShardSet* set = array->shards;
  if (set == nullptr || set->axis < 0) return ShardArrays(self, nullptr);  // (replicated)
  std::vector<int64_t> dims = array->meta->dims;
  dims[set->axis] = 1;
  const ArrayMeta* block_meta =
      InternArrayMeta(array->meta->type, dims.data(), dims.size(), array->meta->weak_type);
  if (block_meta == nullptr) return nullptr;
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(set->buffers.size()));
  if (list == nullptr) return nullptr;
  for (std::size_t m = 0; m < set->buffers.size(); ++m) {
    PyObject* block =
        MakePjrtArray(set->buffers[m], block_meta, set->device_indices[m], /*committed=*/true);
    if (block == nullptr) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(m), block);
  }
  return list;
}

PyObject* Devices(PyObject* self, PyObject*) {
  const ShardSet* shards = AsArray(self)->shards;
  if (shards != nullptr) {
    if (!RequireLive(self)) return nullptr;
    PyObject* all = PySet_New(nullptr);
    if (all == nullptr) return nullptr;
    for (int index : shards->device_indices) {
      PyObject* device = DeviceObject(shards->client, index);
      if (device == nullptr || PySet_Add(all, device) < 0) {
        Py_XDECREF(device);
        Py_DECREF(all);
        return nullptr;
      }
      Py_DECREF(device);
    }
    return all;
  }
  PyObject* device = GetDevice(self, nullptr);
  if (device == nullptr) return nullptr;
  PyObject* set = PySet_New(nullptr);
  if (set == nullptr || PySet_Add(set, device) < 0) {
    Py_XDECREF(set);
    Py_DECREF(device);
    return nullptr;
  }
  Py_DECREF(device);
  return set;
}

PyObject* IsDeleted(PyObject* self, PyObject*) {
  PjrtArrayObject* array = AsArray(self);
  if (!IsLive(array)) Py_RETURN_TRUE;
  if (array->shards != nullptr) {
    try {
      for (const auto& buffer : array->shards->buffers) {
        if (buffer->IsDeleted()) Py_RETURN_TRUE;
      }
    } catch (...) {
      SetPythonErrorFromCurrentException();
      return nullptr;
    }
    Py_RETURN_FALSE;
  }
  try {
    // PJRT may have deleted the memory behind our back (a raw Buffer used
    // elsewhere); report what the device says.
    return PyBool_FromLong(array->buffer->IsDeleted());
  } catch (...) {
    SetPythonErrorFromCurrentException();
    return nullptr;
  }
}

PyObject* Delete(PyObject* self, PyObject*) {
  PjrtArrayObject* array = AsArray(self);
  // The memory is freed now, or when the last launch reading it (in another
  // thread, without the GIL) is done; the array is deleted at once.
  if (array->shards != nullptr) {
    for (const auto& buffer : array->shards->buffers) ReleaseDeviceMemory(buffer);
    array->shards->buffers.clear();
    Py_RETURN_NONE;
  }
  if (array->buffer) {
    ReleaseDeviceMemory(array->buffer);
    array->buffer.reset();  // drop the handle: the live-buffer count goes down
  }
  Py_RETURN_NONE;
}

PyObject* MarkDonatedMethod(PyObject* self, PyObject* name) {
  if (!PyUnicode_Check(name)) {
    PyErr_SetString(PyExc_TypeError, "mark_donated() expects the function's name (str)");
    return nullptr;
  }
  MarkDonated(AsArray(self), name, /*memory_taken=*/false);
  Py_RETURN_NONE;
}

// The addresses of the device buffers the array reads (one per shard; none
// once deleted): two array objects over one buffer (a sharded array and its
// addressable_shards' arrays) are one array to the repeated-donation check.
PyObject* StorageKeys(PyObject* self, PyObject*) {
  PjrtArrayObject* array = AsArray(self);
  std::vector<const Buffer*> buffers;
  if (array->shards != nullptr) {
    for (const auto& buffer : array->shards->buffers) buffers.push_back(buffer.get());
  } else if (array->buffer) {
    buffers.push_back(array->buffer.get());
  }
  PyObject* keys = PyTuple_New(static_cast<Py_ssize_t>(buffers.size()));
  if (keys == nullptr) return nullptr;
  for (std::size_t m = 0; m < buffers.size(); ++m) {
    PyObject* key = PyLong_FromVoidPtr(const_cast<Buffer*>(buffers[m]));
    if (key == nullptr) {
      Py_DECREF(keys);
      return nullptr;
    }
    PyTuple_SET_ITEM(keys, static_cast<Py_ssize_t>(m), key);
  }
  return keys;
}

PyObject* TakeBuffer(PyObject* self, PyObject* name) {
  if (!PyUnicode_Check(name)) {
    PyErr_SetString(PyExc_TypeError, "take_buffer() expects the function's name (str)");
    return nullptr;
  }
  if (!RequireLive(self) || !RequireOneBuffer(self, "take_buffer()")) return nullptr;
  PjrtArrayObject* array = AsArray(self);
  std::shared_ptr<Buffer> buffer = std::move(array->buffer);
  array->buffer.reset();
  array->donated_to = py::reinterpret_borrow<py::object>(name);
  try {
    return py::cast(std::move(buffer)).release().ptr();
  } catch (...) {
    SetPythonErrorFromCurrentException();
    return nullptr;
  }
}

PyObject* BufferMethod(PyObject* self, PyObject*) {
  if (!RequireLive(self) || !RequireOneBuffer(self, "buffer()")) return nullptr;
  try {
    if (AsArray(self)->buffer->IsDeleted()) {
      SetDeletedError(AsArray(self));
      return nullptr;
    }
    return py::cast(AsArray(self)->buffer).release().ptr();
  } catch (...) {
    SetPythonErrorFromCurrentException();
    return nullptr;
  }
}

PyObject* BlockUntilReady(PyObject* self, PyObject*) {
  if (!RequireLive(self)) return nullptr;
  std::vector<std::shared_ptr<Buffer>> buffers;
  if (AsArray(self)->shards != nullptr) {
    buffers = AsArray(self)->shards->buffers;
  } else {
    buffers.push_back(AsArray(self)->buffer);
  }
  try {
    py::gil_scoped_release release;
    for (const auto& buffer : buffers) buffer->BlockUntilReady();
  } catch (...) {
    SetReadError(self);
    return nullptr;
  }
  return Py_NewRef(self);
}

PyObject* UnsafeBufferPointer(PyObject* self, PyObject*) {
  if (!RequireLive(self) || !RequireOneBuffer(self, "unsafe_buffer_pointer()")) return nullptr;
  try {
    return PyLong_FromUnsignedLongLong(AsArray(self)->buffer->UnsafePointer());
  } catch (...) {
    SetPythonErrorFromCurrentException();
    return nullptr;
  }
}

PyObject* OnDeviceSize(PyObject* self, PyObject*) {
  if (!RequireLive(self)) return nullptr;
  try {
    if (AsArray(self)->shards != nullptr) {
      std::size_t total = 0;
      for (const auto& buffer : AsArray(self)->shards->buffers) {
        total += buffer->OnDeviceSizeInBytes();
      }
      return PyLong_FromSize_t(total);
    }
    return PyLong_FromSize_t(AsArray(self)->buffer->OnDeviceSizeInBytes());
  } catch (...) {
    SetPythonErrorFromCurrentException();
    return nullptr;
  }
}

// -------------------------------------------------------- host access

const char kViewCapsule[] = "refimpl._pjrt.buffer_view";

void ReleaseView(PyObject* capsule) {
  auto* held = static_cast<std::shared_ptr<Buffer>*>(PyCapsule_GetPointer(capsule, kViewCapsule));
  if (held == nullptr) {
    PyErr_Clear();
    return;
  }
  try {
    (*held)->ReleaseExternalReference();
  } catch (...) {
    // The view is going away either way; the handle below still drops.
  }
  delete held;
}

// A read-only NumPy array of the value: a view of the device memory when the
// buffer is on the CPU (it holds an external reference, which keeps the
// memory alive even if the array is deleted meanwhile), else a host copy.
// A sharded array's value: every shard copied to the host (in device
// order, as the slabs of an (N, *shard) array), then the device axis moved
// to its place. A fresh read-only array.
PyObject* GatheredValue(PyObject* self) {
  const ShardSet& set = *AsArray(self)->shards;
  const ArrayMeta* shard = set.shard_meta;
  // a replicated array (axis -1): every buffer holds the whole value; the first is read
  const bool replicated = set.axis < 0;
  const std::size_t n = replicated ? 1 : set.buffers.size();
  std::vector<npy_intp> dims;
  if (!replicated) dims.push_back(static_cast<npy_intp>(n));
  dims.insert(dims.end(), shard->dims.begin(), shard->dims.end());
  auto* descr = reinterpret_cast<PyArray_Descr*>(shard->dtype);
  Py_INCREF(descr);
  PyObject* slabs = PyArray_NewFromDescr(&PyArray_Type, descr, static_cast<int>(dims.size()),
                                         dims.data(), nullptr, nullptr, 0, nullptr);
  if (slabs == nullptr) return nullptr;
  std::vector<std::shared_ptr<Buffer>> buffers = set.buffers;
  try {
    auto* dst = static_cast<char*>(PyArray_DATA(reinterpret_cast<PyArrayObject*>(slabs)));
    py::gil_scoped_release release;
    for (std::size_t m = 0; m < n; ++m) {
      buffers[m]->BlockUntilReady();
      if (shard->nbytes > 0) buffers[m]->ToHost(dst + m * shard->nbytes, shard->nbytes);
    }
  } catch (...) {
    Py_DECREF(slabs);
    SetReadError(self);
    return nullptr;
  }
  PyObject* value = slabs;
  if (!replicated && set.axis != 0) {
    // result dim i is slab dim i + 1 before `axis`, the device dim at it, dim i after
    std::vector<npy_intp> order;
    for (int i = 0; i < static_cast<int>(dims.size()); ++i) {
      order.push_back(i < set.axis ? i + 1 : (i == set.axis ? 0 : i));
    }
    PyArray_Dims permute{order.data(), static_cast<int>(order.size())};
    PyObject* moved = PyArray_Transpose(reinterpret_cast<PyArrayObject*>(slabs), &permute);
    Py_DECREF(slabs);
    if (moved == nullptr) return nullptr;
    value = PyArray_NewCopy(reinterpret_cast<PyArrayObject*>(moved), NPY_CORDER);
    Py_DECREF(moved);
    if (value == nullptr) return nullptr;
  }
  PyArray_CLEARFLAGS(reinterpret_cast<PyArrayObject*>(value), NPY_ARRAY_WRITEABLE);
  return value;
}

PyObject* HostValue(PyObject* self, bool* is_view) {
  if (!RequireLive(self)) return nullptr;
  *is_view = false;
  if (AsArray(self)->shards != nullptr) return GatheredValue(self);
  PjrtArrayObject* array = AsArray(self);
  const ArrayMeta* meta = array->meta;
  std::shared_ptr<Buffer> buffer = array->buffer;
  std::vector<npy_intp> dims(meta->dims.begin(), meta->dims.end());
  *is_view = false;
  try {
    {
      py::gil_scoped_release release;
      buffer->BlockUntilReady();
    }
    // S4/U4 device memory is packed two a byte: no view, ToHost unpacks
    const bool packed = meta->type == PJRT_Buffer_Type_S4 || meta->type == PJRT_Buffer_Type_U4;
    if (meta->nbytes > 0 && buffer->IsOnCpu() && !packed) {
      void* data = reinterpret_cast<void*>(buffer->UnsafePointer());
      buffer->AcquireExternalReference();
      auto* held = new std::shared_ptr<Buffer>(buffer);
      PyObject* capsule = PyCapsule_New(held, kViewCapsule, ReleaseView);
      if (capsule == nullptr) {
        buffer->ReleaseExternalReference();
        delete held;
        return nullptr;
      }
      auto* descr = reinterpret_cast<PyArray_Descr*>(meta->dtype);
      Py_INCREF(descr);
      PyObject* view =
          PyArray_NewFromDescr(&PyArray_Type, descr, static_cast<int>(dims.size()), dims.data(),
                               nullptr, data, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, nullptr);
      if (view == nullptr) {
        Py_DECREF(capsule);
        return nullptr;
      }
      if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(view), capsule) < 0) {
        Py_DECREF(view);
        return nullptr;
      }
      *is_view = true;
      return view;
    }
    auto* descr = reinterpret_cast<PyArray_Descr*>(meta->dtype);
    Py_INCREF(descr);
    PyObject* copy = PyArray_NewFromDescr(&PyArray_Type, descr, static_cast<int>(dims.size()),
                                          dims.data(), nullptr, nullptr, 0, nullptr);
    if (copy == nullptr) return nullptr;
    if (meta->nbytes > 0) {
      void* dst = PyArray_DATA(reinterpret_cast<PyArrayObject*>(copy));
      py::gil_scoped_release release;
      buffer->ToHost(dst, meta->nbytes);
    }
    PyArray_CLEARFLAGS(reinterpret_cast<PyArrayObject*>(copy), NPY_ARRAY_WRITEABLE);
    return copy;
  } catch (...) {
    SetReadError(self);
    return nullptr;
  }
}

PyObject* Value(PyObject* self, PyObject*) {
  bool is_view;
  return HostValue(self, &is_view);
}

PyObject* ArrayProtocol(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* names[] = {"dtype", "copy", nullptr};
  PyObject* dtype = Py_None;
  PyObject* copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", const_cast<char**>(names), &dtype,
                                   &copy)) {
    return nullptr;
  }
  bool is_view;
  PyObject* value = HostValue(self, &is_view);
  if (value == nullptr) return nullptr;
  if (dtype != Py_None) {
    PyArray_Descr* wanted = nullptr;
    if (!PyArray_DescrConverter(dtype, &wanted)) {
      Py_DECREF(value);
      return nullptr;
    }
    const bool same =
        PyArray_EquivTypes(wanted, PyArray_DESCR(reinterpret_cast<PyArrayObject*>(value)));
    if (!same) {
      if (copy == Py_False) {
        Py_DECREF(wanted);
        Py_DECREF(value);
        PyErr_SetString(PyExc_ValueError,
                        "PjrtArray.__array__: a dtype conversion needs a copy (copy=False)");
        return nullptr;
      }
      PyObject* converted =
          PyArray_CastToType(reinterpret_cast<PyArrayObject*>(value), wanted, 0);  // steals wanted
      Py_DECREF(value);
      return converted;
    }
    Py_DECREF(wanted);
  }
  if (copy == Py_True) {
    PyObject* fresh = PyArray_NewCopy(reinterpret_cast<PyArrayObject*>(value), NPY_CORDER);
    Py_DECREF(value);
    return fresh;
  }
  if (copy == Py_False && !is_view) {
    Py_DECREF(value);
    PyErr_SetString(PyExc_ValueError,
                    "PjrtArray.__array__: this buffer is not in host memory; it cannot be "
                    "viewed without a copy (copy=False)");
    return nullptr;
  }
  return value;
}

PyObject* CheckLive(PyObject* self, PyObject*) {
  if (!RequireLive(self)) return nullptr;
  Py_RETURN_NONE;
}

PyMethodDef kMethods[] = {
    {"_check_live", CheckLive, METH_NOARGS,
     "None, or the deleted-array RuntimeError if the array has been deleted."},
    {"devices", Devices, METH_NOARGS, "The set of the devices holding the array."},
    {"_shard_arrays", ShardArrays, METH_NOARGS,
     "The per-device arrays (views sharing the buffers) of a sharded array, in device "
     "order; [self] for an array on one device."},
    {"_shard_blocks", ShardBlocks, METH_NOARGS,
     "As _shard_arrays, each typed as its block of the global array (the split axis kept, "
     "size 1: JAX's shard shape)."},
    {"is_deleted", IsDeleted, METH_NOARGS, "Whether the buffer has been deleted or donated."},
    {"delete", Delete, METH_NOARGS, "Frees the device memory now; the array is unusable after."},
    {"mark_donated", MarkDonatedMethod, METH_O,
     "Deletes the array because its buffer was donated to the named function."},
    {"take_buffer", TakeBuffer, METH_O,
     "Hands the buffer over (returns it); the array is deleted as donated to the named "
     "function."},
    {"buffer", BufferMethod, METH_NOARGS,
     "The live refimpl._pjrt.Buffer; the deleted-array error if there is none."},
    {"_storage_keys", StorageKeys, METH_NOARGS,
     "Addresses of the device buffers the array reads (the repeated-donation check)."},
    {"block_until_ready", BlockUntilReady, METH_NOARGS,
     "Waits until the value is computed; returns the array."},
    {"unsafe_buffer_pointer", UnsafeBufferPointer, METH_NOARGS, "Address of the device memory."},
    {"on_device_size_in_bytes", OnDeviceSize, METH_NOARGS, "Bytes the buffer takes on device."},
    {"_value", Value, METH_NOARGS,
     "The value as a read-only NumPy array (a view of CPU memory where possible)."},
    {"__array__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(ArrayProtocol)),
     METH_VARARGS | METH_KEYWORDS, "NumPy conversion: zero-copy on CPU unless a copy is asked."},
    {nullptr, nullptr, 0, nullptr},
};

PyMemberDef kMembers[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(PjrtArrayObject, weakrefs), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

}  // namespace

void RegisterPjrtArray(py::module_& m) {
  static PyType_Slot slots[] = {
      {Py_tp_doc,
       const_cast<char*>(
           "An array of the PJRT backend: one device buffer plus weak_type, device, "
           "committed and deletion state (SPEC 'Arrays'). Operators and numpy-like methods "
           "are attached by refimpl.backends.pjrt.fast_path.")},
      {Py_tp_new, reinterpret_cast<void*>(ArrayNew)},
      {Py_tp_dealloc, reinterpret_cast<void*>(ArrayDealloc)},
      {Py_tp_hash, reinterpret_cast<void*>(PyObject_HashNotImplemented)},
      {Py_tp_getset, kGetSet},
      {Py_tp_methods, kMethods},
      {Py_tp_members, kMembers},
      {0, nullptr},
  };
  static PyType_Spec spec = {
      "refimpl._pjrt.PjrtArray",
      sizeof(PjrtArrayObject),
      0,
      Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
      slots,
  };
  PyObject* type = PyType_FromSpec(&spec);
  if (type == nullptr) throw py::error_already_set();
  g_array_type = reinterpret_cast<PyTypeObject*>(type);
  Py_INCREF(type);  // the module's reference below; ours lives forever
  py::int_ priority(100);
  if (PyObject_SetAttrString(type, "__array_priority__", priority.ptr()) < 0) {
    throw py::error_already_set();
  }
  m.add_object("PjrtArray", py::handle(type));
  m.def(
      "live_pjrt_arrays",
      []() {
        py::list out;
        for (PjrtArrayObject* a = g_live_head; a != nullptr; a = a->live_next) {
          out.append(py::handle(reinterpret_cast<PyObject*>(a)));
        }
        return out;
      },
      "Every PjrtArray alive in this process, deleted ones too, newest first "
      "(jax.live_arrays filters them).");
  m.def(
      "_make_sharded",
      [](const py::sequence& shards, int axis, py::object axis_name) {
        std::vector<std::shared_ptr<Buffer>> buffers;
        std::vector<int> devices;
        const ArrayMeta* shard_meta = nullptr;
        for (const py::handle& item : shards) {
          if (!IsPjrtArray(item.ptr()) || AsArray(item.ptr())->shards != nullptr) {
            throw py::type_error("_make_sharded: every shard must be a single-device PjrtArray");
          }
          PjrtArrayObject* shard = AsArray(item.ptr());
          if (!IsLive(shard)) {
            SetDeletedError(shard);
            throw py::error_already_set();
          }
          if (shard_meta != nullptr && shard->meta != shard_meta) {
            throw py::value_error("_make_sharded: the shards differ in shape, dtype or weak_type");
          }
          if (!buffers.empty() && shard->buffer->client() != buffers[0]->client()) {
            throw py::value_error("_make_sharded: the shards belong to different clients");
          }
          shard_meta = shard->meta;
          buffers.push_back(shard->buffer);
          devices.push_back(shard->device_index);
        }
        if (shard_meta == nullptr) throw py::value_error("_make_sharded: no shards");
        const int rank = static_cast<int>(shard_meta->dims.size());
        if (axis < -1 || axis > rank) throw py::value_error("_make_sharded: axis out of range");
        const ArrayMeta* meta = shard_meta;  // axis -1: replicated, each shard the whole value
        if (axis >= 0) {
          std::vector<int64_t> dims = shard_meta->dims;
          dims.insert(dims.begin() + axis, static_cast<int64_t>(buffers.size()));
          meta = InternArrayMeta(shard_meta->type, dims.data(), dims.size(), shard_meta->weak_type);
        }
        PyObject* made = MakeShardedPjrtArray(std::move(buffers), std::move(devices), axis,
                                              shard_meta, meta, std::move(axis_name));
        if (made == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(made);
      },
      py::arg("shards"), py::arg("axis"), py::arg("axis_name") = py::none(),
      "One array sharded over the shards' devices (their buffers shared): shard m is the "
      "slice m along `axis` of the result; axis -1: replicated (every shard is the whole "
      "value, a pmap's out_axes=None output).");
  m.def("transfer_count", &Buffer::TransferCount,
        "Host<->device copies made by this process so far (transfers to a device and "
        "ToHost reads; a NumPy view of CPU memory is no copy).");
  m.def("to_device_count", &Buffer::ToDeviceCount,
        "Host-to-device copies made by this process so far (one per device buffer "
        "made from host data).");
}

}  // namespace bindings
}  // namespace refimpl
