#include "scalar_encoding.h"

#include <cstring>

namespace refimpl {

HostScalar HostScalar::Bool(bool value) {
  HostScalar s;
  s.kind = kBool;
  s.integer = value ? 1 : 0;
  s.real = static_cast<double>(s.integer);
  return s;
}

HostScalar HostScalar::Int(long long value) {
  HostScalar s;
  s.kind = kInt;
  s.integer = value;
  s.real = static_cast<double>(value);
  return s;
}

HostScalar HostScalar::Float(double value) {
  HostScalar s;
  s.kind = kFloat;
  s.real = value;
  return s;
}

HostScalar HostScalar::Complex(double real, double imag) {
  HostScalar s;
  s.kind = kComplex;
  s.real = real;
  s.imag = imag;
  return s;
}

bool EncodeScalar(const HostScalar& scalar, PJRT_Buffer_Type type, std::uint64_t bits[2]) {
  bits[0] = bits[1] = 0;
  switch (type) {
    case PJRT_Buffer_Type_PRED: {
      const std::uint8_t v = scalar.integer != 0 ? 1 : 0;
      std::memcpy(bits, &v, 1);
      return true;
    }
    case PJRT_Buffer_Type_S32: {
      const std::int32_t v = static_cast<std::int32_t>(scalar.integer);
      std::memcpy(bits, &v, 4);
      return true;
    }
    case PJRT_Buffer_Type_S64: {
      const std::int64_t v = scalar.integer;
      std::memcpy(bits, &v, 8);
      return true;
    }
    case PJRT_Buffer_Type_F32: {
      const float v = static_cast<float>(scalar.real);
      std::memcpy(bits, &v, 4);
      return true;
    }
    case PJRT_Buffer_Type_F64:
      std::memcpy(bits, &scalar.real, 8);
      return true;
    case PJRT_Buffer_Type_C64: {
      const float v[2] = {static_cast<float>(scalar.real), static_cast<float>(scalar.imag)};
      std::memcpy(bits, v, 8);
      return true;
    }
    case PJRT_Buffer_Type_C128: {
      const double v[2] = {scalar.real, scalar.imag};
      std::memcpy(bits, v, 16);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace refimpl
