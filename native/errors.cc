#include "errors.h"

#include "pjrt_args.h"

namespace refimpl {

namespace {
const char* const kCodeNames[] = {
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
};
}  // namespace

PjrtError::PjrtError(int code, const std::string& message)
    : std::runtime_error(message), code_(code) {}

const char* PjrtError::CodeName(int code) {
  if (code < 0 || code >= static_cast<int>(sizeof(kCodeNames) / sizeof(kCodeNames[0]))) {
    return "UNKNOWN";
  }
  return kCodeNames[code];
}

void ErrorDeleter::operator()(PJRT_Error* error) const {
  if (error == nullptr || api == nullptr) return;
  auto args = MakeArgs<PJRT_Error_Destroy_Args>();
  args.error = error;
  api->PJRT_Error_Destroy(&args);
}

std::string ErrorMessage(const PJRT_Api* api, const PJRT_Error* error) {
  auto args = MakeArgs<PJRT_Error_Message_Args>();
  args.error = error;
  api->PJRT_Error_Message(&args);
  if (args.message == nullptr) return std::string();
  return std::string(args.message, args.message_size);
}

int ErrorCode(const PJRT_Api* api, const PJRT_Error* error) {
  auto args = MakeArgs<PJRT_Error_GetCode_Args>();
  args.error = error;
  // GetCode itself returns an error only on misuse; treat that as UNKNOWN.
  ErrorPtr nested(api->PJRT_Error_GetCode(&args), ErrorDeleter{api});
  if (nested) return PJRT_Error_Code_UNKNOWN;
  return static_cast<int>(args.code);
}

void CheckPjrt(const PJRT_Api* api, PJRT_Error* error, const char* what) {
  if (error == nullptr) return;
  ErrorPtr owned(error, ErrorDeleter{api});
  const int code = ErrorCode(api, owned.get());
  std::string message = ErrorMessage(api, owned.get());
  std::string text = std::string(PjrtError::CodeName(code)) + ": " + message;
  if (what != nullptr && *what != '\0') text += " [" + std::string(what) + "]";
  throw PjrtError(code, text);
}

}  // namespace refimpl
