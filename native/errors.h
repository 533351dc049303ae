// Error handling: every PJRT_Error* becomes a C++ exception.
#ifndef REFIMPL_NATIVE_ERRORS_H_
#define REFIMPL_NATIVE_ERRORS_H_

#include <memory>
#include <stdexcept>
#include <string>

#include "pjrt_abi.h"

namespace refimpl {

// An error reported by a PJRT plugin: its status code and message.
class PjrtError : public std::runtime_error {
 public:
  PjrtError(int code, const std::string& message);
  int code() const { return code_; }
  // "INVALID_ARGUMENT", "UNKNOWN", ...
  static const char* CodeName(int code);

 private:
  int code_;
};

// Loading a plugin failed before the plugin could report anything (missing
// file, dlopen failure, no GetPjrtApi symbol, unsupported API version).
class PluginLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Releases a PJRT_Error with the plugin that made it.
struct ErrorDeleter {
  const PJRT_Api* api = nullptr;
  void operator()(PJRT_Error* error) const;
};
using ErrorPtr = std::unique_ptr<PJRT_Error, ErrorDeleter>;

// Takes ownership of `error`; when non-null, throws PjrtError carrying the
// plugin's code and message. `what` names the PJRT call for context.
void CheckPjrt(const PJRT_Api* api, PJRT_Error* error, const char* what);

// Message and code of `error` without taking ownership.
std::string ErrorMessage(const PJRT_Api* api, const PJRT_Error* error);
int ErrorCode(const PJRT_Api* api, const PJRT_Error* error);

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_ERRORS_H_
