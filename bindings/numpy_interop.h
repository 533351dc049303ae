// NumPy dtype <-> PJRT element type, and host array descriptions.
#ifndef REFIMPL_BINDINGS_NUMPY_INTEROP_H_
#define REFIMPL_BINDINGS_NUMPY_INTEROP_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "../native/client.h"
#include "../native/element_type.h"
#include "../native/pjrt_abi.h"

namespace refimpl {
namespace bindings {

// PJRT element type of a NumPy dtype; raises TypeError for unsupported ones.
PJRT_Buffer_Type ElementTypeFromDtype(const pybind11::dtype& dtype);

// NumPy dtype of a PJRT element type; raises TypeError for unsupported ones.
pybind11::dtype DtypeFromElementType(PJRT_Buffer_Type type);

// Prepares `array` for a host-to-device copy. May replace `array` with a
// contiguous (or native byte order) copy; the returned HostArray points into
// whatever `array` holds afterwards, so keep `array` alive during the copy.
HostArray DescribeHostArray(pybind11::array& array);

}  // namespace bindings
}  // namespace refimpl

#endif  // REFIMPL_BINDINGS_NUMPY_INTEROP_H_
