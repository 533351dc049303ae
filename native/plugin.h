// A loaded PJRT plugin: the shared library, its api table and attributes.
#ifndef REFIMPL_NATIVE_PLUGIN_H_
#define REFIMPL_NATIVE_PLUGIN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "pjrt_abi.h"

namespace refimpl {

// A plugin attribute or option value (mirrors PJRT_NamedValue).
using NamedValue = std::variant<std::string, int64_t, std::vector<int64_t>, float, bool>;

struct Attribute {
  std::string name;
  NamedValue value;
};

class Plugin {
 public:
  // Loads (once per process and resolved path) the shared library at `path`,
  // checks its API version against pjrt_abi.h, and initialises it.
  // Throws PluginLoadError or PjrtError.
  static std::shared_ptr<Plugin> Load(const std::string& path);

  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  const PJRT_Api* api() const { return api_; }
  const std::string& path() const { return path_; }
  std::pair<int, int> api_version() const { return {major_, minor_}; }
  const std::vector<Attribute>& attributes() const { return attributes_; }

 private:
  Plugin() = default;

  // The dlopen handle is never closed: PJRT plugins start threads and
  // register global state, and unloading them is not supported. Loaded
  // plugins therefore live for the rest of the process.
  void* library_ = nullptr;
  const PJRT_Api* api_ = nullptr;
  std::string path_;
  int major_ = 0;
  int minor_ = 0;
  std::vector<Attribute> attributes_;
};

// Converts a PJRT_NamedValue into its C++ value.
NamedValue ToNamedValue(const PJRT_NamedValue& value);

}  // namespace refimpl

#endif  // REFIMPL_NATIVE_PLUGIN_H_
