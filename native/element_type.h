// Facts about PJRT element types.
#ifndef REFIMPL_NATIVE_ELEMENT_TYPE_H_
#define REFIMPL_NATIVE_ELEMENT_TYPE_H_

#include <cstddef>

#include "pjrt_abi.h"

namespace refimpl {

// Bytes per element on the host: 1 for S4/U4 (NumPy's ml_dtypes int4/uint4
// hold one element a byte); 0 for the other sub-byte, token and invalid types.
std::size_t ElementByteSize(PJRT_Buffer_Type type);

// XLA's short name: "pred", "s32", "bf16", "c64", ...
const char* ElementTypeName(PJRT_Buffer_Type type);

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_ELEMENT_TYPE_H_
