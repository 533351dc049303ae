#include "element_type.h"

namespace refimpl {

std::size_t ElementByteSize(PJRT_Buffer_Type type) {
  switch (type) {
    case PJRT_Buffer_Type_PRED:
    case PJRT_Buffer_Type_S8:
    case PJRT_Buffer_Type_U8:
    case PJRT_Buffer_Type_F8E5M2:
    case PJRT_Buffer_Type_F8E4M3FN:
    case PJRT_Buffer_Type_F8E4M3B11FNUZ:
    case PJRT_Buffer_Type_F8E5M2FNUZ:
    case PJRT_Buffer_Type_F8E4M3FNUZ:
    case PJRT_Buffer_Type_F8E4M3:
    case PJRT_Buffer_Type_F8E3M4:
    case PJRT_Buffer_Type_F8E8M0FNU:
    case PJRT_Buffer_Type_S4:  // on the host, one element a byte (unpacked)
    case PJRT_Buffer_Type_U4:
      return 1;
    case PJRT_Buffer_Type_S16:
    case PJRT_Buffer_Type_U16:
    case PJRT_Buffer_Type_F16:
    case PJRT_Buffer_Type_BF16:
      return 2;
    case PJRT_Buffer_Type_S32:
    case PJRT_Buffer_Type_U32:
    case PJRT_Buffer_Type_F32:
      return 4;
    case PJRT_Buffer_Type_S64:
    case PJRT_Buffer_Type_U64:
    case PJRT_Buffer_Type_F64:
    case PJRT_Buffer_Type_C64:
      return 8;
    case PJRT_Buffer_Type_C128:
      return 16;
    default:
      return 0;
  }
}

const char* ElementTypeName(PJRT_Buffer_Type type) {
  switch (type) {
    case PJRT_Buffer_Type_PRED:
      return "pred";
    case PJRT_Buffer_Type_S8:
      return "s8";
    case PJRT_Buffer_Type_S16:
      return "s16";
    case PJRT_Buffer_Type_S32:
      return "s32";
    case PJRT_Buffer_Type_S64:
      return "s64";
    case PJRT_Buffer_Type_U8:
      return "u8";
    case PJRT_Buffer_Type_U16:
      return "u16";
    case PJRT_Buffer_Type_U32:
      return "u32";
    case PJRT_Buffer_Type_U64:
      return "u64";
    case PJRT_Buffer_Type_F16:
      return "f16";
    case PJRT_Buffer_Type_F32:
      return "f32";
    case PJRT_Buffer_Type_F64:
      return "f64";
    case PJRT_Buffer_Type_BF16:
      return "bf16";
    case PJRT_Buffer_Type_C64:
      return "c64";
    case PJRT_Buffer_Type_C128:
      return "c128";
    case PJRT_Buffer_Type_F8E5M2:
      return "f8e5m2";
    case PJRT_Buffer_Type_F8E4M3FN:
      return "f8e4m3fn";
    case PJRT_Buffer_Type_F8E4M3B11FNUZ:
      return "f8e4m3b11fnuz";
    case PJRT_Buffer_Type_F8E5M2FNUZ:
      return "f8e5m2fnuz";
    case PJRT_Buffer_Type_F8E4M3FNUZ:
      return "f8e4m3fnuz";
    case PJRT_Buffer_Type_S4:
      return "s4";
    case PJRT_Buffer_Type_U4:
      return "u4";
    case PJRT_Buffer_Type_TOKEN:
      return "token";
    case PJRT_Buffer_Type_S2:
      return "s2";
    case PJRT_Buffer_Type_U2:
      return "u2";
    case PJRT_Buffer_Type_F8E4M3:
      return "f8e4m3";
    case PJRT_Buffer_Type_F8E3M4:
      return "f8e3m4";
    case PJRT_Buffer_Type_F8E8M0FNU:
      return "f8e8m0fnu";
    case PJRT_Buffer_Type_F4E2M1FN:
      return "f4e2m1fn";
    case PJRT_Buffer_Type_S1:
      return "s1";
    case PJRT_Buffer_Type_U1:
      return "u1";
    default:
      return "invalid";
  }
}

}  // namespace refimpl
