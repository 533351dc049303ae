#include "matmul_precision.h"

#include <atomic>
#include <cstdint>

namespace py = pybind11;

namespace refimpl {
namespace bindings {
namespace {

// Written with the GIL held, read with it held too: atomic only so that a
// read never tears.
std::atomic<uint64_t> g_flag_key{0};
thread_local int64_t t_thread_key = -1;  // -1: no block in this thread

void SetKeys(uint64_t flag_key, int64_t thread_key) {
  g_flag_key.store(flag_key, std::memory_order_relaxed);
  t_thread_key = thread_key;
}

}  // namespace

uint64_t MatmulPrecisionKey() {
  // A thread's block key names only the settings its blocks set; the flags'
  // key completes it, so a flag that another thread changes while this one is
  // in a block of another setting is seen at once.
  const uint64_t flag = g_flag_key.load(std::memory_order_relaxed);
  return t_thread_key >= 0 ? ((static_cast<uint64_t>(t_thread_key) + 1) << 32) | flag : flag;
}

void RegisterMatmulPrecision(py::module_& m) {
  m.def("set_matmul_precision_keys", &SetKeys, py::arg("flag_key"), py::arg("thread_key"),
        "The default matmul precision's keys: the flag's (every thread) and this thread's "
        "innermost default_matmul_precision block's (-1: none). The fast paths' signatures "
        "carry the key in effect.");
  m.def("matmul_precision_key", &MatmulPrecisionKey,
        "The key of the default matmul precision in effect in this thread.");
}

}  // namespace bindings
}  // namespace refimpl
