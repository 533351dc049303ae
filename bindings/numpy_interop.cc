#include "numpy_interop.h"

#include <string>
#include <vector>

namespace py = pybind11;

namespace refimpl {
namespace bindings {

namespace {

// ml_dtypes.bfloat16 as a NumPy dtype, imported on first use.
const py::dtype& Bfloat16Dtype() {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::dtype> storage;
  return storage
      .call_once_and_store_result([] {
        py::module_ numpy = py::module_::import("numpy");
        py::object scalar_type = py::module_::import("ml_dtypes").attr("bfloat16");
        return py::dtype::from_args(numpy.attr("dtype")(scalar_type));
      })
      .get_stored();
}

// ml_dtypes.int4 and ml_dtypes.uint4 as NumPy dtypes (one element a byte on
// the host, in its low 4 bits), imported on first use.
const py::dtype& Int4Dtype() {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::dtype> storage;
  return storage
      .call_once_and_store_result([] {
        py::module_ numpy = py::module_::import("numpy");
        py::object scalar_type = py::module_::import("ml_dtypes").attr("int4");
        return py::dtype::from_args(numpy.attr("dtype")(scalar_type));
      })
      .get_stored();
}

const py::dtype& Uint4Dtype() {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::dtype> storage;
  return storage
      .call_once_and_store_result([] {
        py::module_ numpy = py::module_::import("numpy");
        py::object scalar_type = py::module_::import("ml_dtypes").attr("uint4");
        return py::dtype::from_args(numpy.attr("dtype")(scalar_type));
      })
      .get_stored();
}

// ml_dtypes' 8-bit float types and their PJRT element types, the dtypes
// imported on first use.
struct Float8Type {
  const char* name;
  PJRT_Buffer_Type type;
};
constexpr Float8Type kFloat8Types[] = {
    {"float8_e4m3fn", PJRT_Buffer_Type_F8E4M3FN},
    {"float8_e5m2", PJRT_Buffer_Type_F8E5M2},
    {"float8_e4m3fnuz", PJRT_Buffer_Type_F8E4M3FNUZ},
    {"float8_e5m2fnuz", PJRT_Buffer_Type_F8E5M2FNUZ},
    {"float8_e4m3b11fnuz", PJRT_Buffer_Type_F8E4M3B11FNUZ},
    {"float8_e3m4", PJRT_Buffer_Type_F8E3M4},
    {"float8_e4m3", PJRT_Buffer_Type_F8E4M3},
};
constexpr std::size_t kNumFloat8Types = sizeof(kFloat8Types) / sizeof(kFloat8Types[0]);

const std::vector<py::dtype>& Float8Dtypes() {
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<std::vector<py::dtype>> storage;
  return storage
      .call_once_and_store_result([] {
        py::module_ numpy = py::module_::import("numpy");
        py::module_ ml_dtypes = py::module_::import("ml_dtypes");
        std::vector<py::dtype> out;
        for (const Float8Type& entry : kFloat8Types) {
          out.push_back(py::dtype::from_args(numpy.attr("dtype")(ml_dtypes.attr(entry.name))));
        }
        return out;
      })
      .get_stored();
}

std::string DtypeName(const py::dtype& dtype) { return py::str(dtype).cast<std::string>(); }

}  // namespace

PJRT_Buffer_Type ElementTypeFromDtype(const py::dtype& dtype) {
  const char kind = dtype.kind();
  const py::ssize_t size = dtype.itemsize();
  switch (kind) {
    case 'b':
      if (size == 1) return PJRT_Buffer_Type_PRED;
      break;
    case 'i':
      if (size == 1) return PJRT_Buffer_Type_S8;
      if (size == 2) return PJRT_Buffer_Type_S16;
      if (size == 4) return PJRT_Buffer_Type_S32;
      if (size == 8) return PJRT_Buffer_Type_S64;
      break;
    case 'u':
      if (size == 1) return PJRT_Buffer_Type_U8;
      if (size == 2) return PJRT_Buffer_Type_U16;
      if (size == 4) return PJRT_Buffer_Type_U32;
      if (size == 8) return PJRT_Buffer_Type_U64;
      break;
    case 'f':  // (ml_dtypes.float8_e5m2 is of kind 'f' too: below)
      if (size == 2) return PJRT_Buffer_Type_F16;
      if (size == 4) return PJRT_Buffer_Type_F32;
      if (size == 8) return PJRT_Buffer_Type_F64;
      break;
    case 'c':
      if (size == 8) return PJRT_Buffer_Type_C64;
      if (size == 16) return PJRT_Buffer_Type_C128;
      break;
    default:
      break;
  }
  // ml_dtypes types are user-defined dtypes; compare by type number.
  if (dtype.num() == Bfloat16Dtype().num()) return PJRT_Buffer_Type_BF16;
  if (dtype.num() == Int4Dtype().num()) return PJRT_Buffer_Type_S4;
  if (dtype.num() == Uint4Dtype().num()) return PJRT_Buffer_Type_U4;
  for (std::size_t i = 0; i < kNumFloat8Types; ++i) {
    if (dtype.num() == Float8Dtypes()[i].num()) return kFloat8Types[i].type;
  }
  throw py::type_error("dtype " + DtypeName(dtype) +
                       " is not supported by the PJRT runtime (supported: bool, int8-64, "
                       "uint8-64, int4, uint4, float16, bfloat16, float8_e4m3fn, float8_e5m2, "
                       "float8_e4m3fnuz, float8_e5m2fnuz, float8_e4m3b11fnuz, float8_e3m4, "
                       "float8_e4m3, float32, float64, complex64, "
                       "complex128)");
}

py::dtype DtypeFromElementType(PJRT_Buffer_Type type) {
  switch (type) {
    case PJRT_Buffer_Type_PRED:
      return py::dtype("bool");
    case PJRT_Buffer_Type_S8:
      return py::dtype("int8");
    case PJRT_Buffer_Type_S16:
      return py::dtype("int16");
    case PJRT_Buffer_Type_S32:
      return py::dtype("int32");
    case PJRT_Buffer_Type_S64:
      return py::dtype("int64");
    case PJRT_Buffer_Type_U8:
      return py::dtype("uint8");
    case PJRT_Buffer_Type_U16:
      return py::dtype("uint16");
    case PJRT_Buffer_Type_U32:
      return py::dtype("uint32");
    case PJRT_Buffer_Type_U64:
      return py::dtype("uint64");
    case PJRT_Buffer_Type_F16:
      return py::dtype("float16");
    case PJRT_Buffer_Type_F32:
      return py::dtype("float32");
    case PJRT_Buffer_Type_F64:
      return py::dtype("float64");
    case PJRT_Buffer_Type_BF16:
      return Bfloat16Dtype();
    case PJRT_Buffer_Type_S4:
      return Int4Dtype();
    case PJRT_Buffer_Type_U4:
      return Uint4Dtype();
    case PJRT_Buffer_Type_F8E4M3FN:
    case PJRT_Buffer_Type_F8E5M2:
    case PJRT_Buffer_Type_F8E4M3FNUZ:
    case PJRT_Buffer_Type_F8E5M2FNUZ:
    case PJRT_Buffer_Type_F8E4M3B11FNUZ:
    case PJRT_Buffer_Type_F8E3M4:
    case PJRT_Buffer_Type_F8E4M3:
      for (std::size_t i = 0; i < kNumFloat8Types; ++i) {
        if (kFloat8Types[i].type == type) return Float8Dtypes()[i];
      }
      break;
    case PJRT_Buffer_Type_C64:
      return py::dtype("complex64");
    case PJRT_Buffer_Type_C128:
      return py::dtype("complex128");
    default:
      break;
  }
  throw py::type_error("PJRT element type " + std::string(ElementTypeName(type)) +
                       " has no supported NumPy dtype");
}

HostArray DescribeHostArray(py::array& array) {
  py::dtype dtype = array.dtype();
  const PJRT_Buffer_Type type = ElementTypeFromDtype(dtype);  // validates first
  const py::ssize_t itemsize = dtype.itemsize();

  // Non-native byte order: convert to a native-order copy.
  const char order = dtype.attr("byteorder").cast<std::string>()[0];
  const bool little = py::module_::import("sys").attr("byteorder").cast<std::string>() == "little";
  if ((order == '>' && little) || (order == '<' && !little)) {
    array = py::reinterpret_steal<py::array>(
        py::module_::import("numpy")
            .attr("ascontiguousarray")(array, dtype.attr("newbyteorder")("="))
            .release());
    dtype = array.dtype();
  }

  const py::ssize_t ndim = array.ndim();
  bool c_contiguous = (array.flags() & py::array::c_style) != 0;
  bool strides_usable = true;
  for (py::ssize_t i = 0; i < ndim; ++i) {
    const py::ssize_t stride = array.strides(i);
    if (stride <= 0 || stride % itemsize != 0) strides_usable = false;
  }
  if (array.size() == 0) strides_usable = false;
  if (!c_contiguous && !strides_usable) {
    array = py::reinterpret_steal<py::array>(
        py::module_::import("numpy").attr("ascontiguousarray")(array).release());
    c_contiguous = true;
  }

  HostArray host;
  host.type = type;
  host.data = array.data();
  host.dims.assign(array.shape(), array.shape() + ndim);
  if (!c_contiguous) host.byte_strides.assign(array.strides(), array.strides() + ndim);
  return host;
}

}  // namespace bindings
}  // namespace refimpl
