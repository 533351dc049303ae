// A host scalar (a bool, an integer, a float or a complex number) as the
// bytes of one element of a PJRT element type: what a Python or NumPy
// scalar argument of a jitted call becomes on the device. The bindings read
// the number out of the host object; the encoding is here.
#ifndef REFIMPL_NATIVE_SCALAR_ENCODING_H_
#define REFIMPL_NATIVE_SCALAR_ENCODING_H_

#include <cstdint>

#include "pjrt_abi.h"

namespace refimpl {

struct HostScalar {
  enum Kind : std::uint8_t { kBool, kInt, kFloat, kComplex };
  Kind kind = kFloat;
  long long integer = 0;  // kBool (0/1) and kInt
  double real = 0;        // kFloat and kComplex (kBool, kInt: the integer's value)
  double imag = 0;        // kComplex

  static HostScalar Bool(bool value);
  static HostScalar Int(long long value);
  static HostScalar Float(double value);
  static HostScalar Complex(double real, double imag);
};

// The bytes of `scalar` as one element of `type` (little-endian, the rest
// of `bits` zero); false when `type` is not one a host scalar canonicalizes
// to (PRED, S32, S64, F32, F64, C64, C128).
bool EncodeScalar(const HostScalar& scalar, PJRT_Buffer_Type type, std::uint64_t bits[2]);

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_SCALAR_ENCODING_H_
