// The floor of a jitted call: the PJRT C API loop with no Python at all.
//
// Loads a plugin, compiles a StableHLO program (made by benchmarks/dispatch.py
// from the same function the fast path runs), and times
//
//     execute(args) -> outputs;  destroy the buffers no longer used
//
// per call. With --donate, each call's outputs are the next call's inputs
// (the program aliases them, so PJRT reuses the buffers) and the old input
// handles are destroyed. Without it, the same inputs are passed every time
// and the previous call's outputs are destroyed after this call's execute
// (the order of `out = f(x)` in a Python loop; --destroy-at-once destroys
// each call's outputs right after its execute instead). Each repeat ends by
// awaiting the last result. Prints the median microseconds per call over
// the repeats, as JSON with --json; --serve keeps the program loaded and
// answers "run ITERS REPEATS" lines on stdin (one report per line).
//
// usage: raw_pjrt_loop --plugin P --program F --options F --shape 1024
//                      [--dtype f32] [--args 1] [--donate] [--iters N]
//                      [--repeats R] [--json] [--destroy-at-once] [--serve]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "buffer.h"
#include "client.h"
#include "element_type.h"
#include "errors.h"
#include "executable.h"
#include "pjrt_args.h"
#include "plugin.h"

namespace {

struct Options {
  std::string plugin, program, compile_options;
  std::vector<int64_t> shape;
  PJRT_Buffer_Type type = PJRT_Buffer_Type_F32;
  int num_args = 1;
  bool donate = false;
  long iters = 20000;
  int repeats = 7;
  bool json = false;
  bool destroy_at_once = false;
  bool serve = false;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<int64_t> ParseShape(const std::string& text) {
  std::vector<int64_t> dims;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) dims.push_back(std::stoll(part));
  }
  return dims;
}

PJRT_Buffer_Type ParseType(const std::string& name) {
  if (name == "f32") return PJRT_Buffer_Type_F32;
  if (name == "s32") return PJRT_Buffer_Type_S32;
  if (name == "f64") return PJRT_Buffer_Type_F64;
  throw std::runtime_error("unsupported --dtype " + name + " (f32, s32, f64)");
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--plugin")
      o.plugin = next();
    else if (a == "--program")
      o.program = next();
    else if (a == "--options")
      o.compile_options = next();
    else if (a == "--shape")
      o.shape = ParseShape(next());
    else if (a == "--dtype")
      o.type = ParseType(next());
    else if (a == "--args")
      o.num_args = std::stoi(next());
    else if (a == "--donate")
      o.donate = true;
    else if (a == "--iters")
      o.iters = std::stol(next());
    else if (a == "--repeats")
      o.repeats = std::stoi(next());
    else if (a == "--destroy-at-once")
      o.destroy_at_once = true;
    else if (a == "--serve")
      o.serve = true;
    else if (a == "--json")
      o.json = true;
    else
      throw std::runtime_error("unknown argument " + a);
  }
  if (o.plugin.empty() || o.program.empty() || o.compile_options.empty()) {
    throw std::runtime_error("--plugin, --program and --options are required");
  }
  return o;
}

void Destroy(const PJRT_Api* api, PJRT_Buffer* buffer) {
  auto args = refimpl::MakeArgs<PJRT_Buffer_Destroy_Args>();
  args.buffer = buffer;
  refimpl::CheckPjrt(api, api->PJRT_Buffer_Destroy(&args), "PJRT_Buffer_Destroy");
}

PJRT_Buffer* Upload(refimpl::Client& client, const Options& o) {
  int64_t count = 1;
  for (int64_t d : o.shape) count *= d;
  std::vector<char> host(static_cast<std::size_t>(count) * refimpl::ElementByteSize(o.type), 0);
  const PJRT_Api* api = client.api();
  auto args = refimpl::MakeArgs<PJRT_Client_BufferFromHostBuffer_Args>();
  args.client = client.raw();
  args.data = host.data();
  args.type = o.type;
  args.dims = o.shape.data();
  args.num_dims = o.shape.size();
  args.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  args.device = client.devices().at(0).device;
  refimpl::CheckPjrt(api, api->PJRT_Client_BufferFromHostBuffer(&args), "BufferFromHostBuffer");
  if (args.done_with_host_buffer != nullptr) {
    auto destroy = refimpl::MakeArgs<PJRT_Event_Destroy_Args>();
    destroy.event = args.done_with_host_buffer;
    refimpl::CheckPjrt(api, api->PJRT_Event_Destroy(&destroy), "PJRT_Event_Destroy");
  }
  return args.buffer;
}

void AwaitReady(const PJRT_Api* api, PJRT_Buffer* buffer) {
  auto ready = refimpl::MakeArgs<PJRT_Buffer_ReadyEvent_Args>();
  ready.buffer = buffer;
  refimpl::CheckPjrt(api, api->PJRT_Buffer_ReadyEvent(&ready), "PJRT_Buffer_ReadyEvent");
  auto wait = refimpl::MakeArgs<PJRT_Event_Await_Args>();
  wait.event = ready.event;
  refimpl::CheckPjrt(api, api->PJRT_Event_Await(&wait), "PJRT_Event_Await");
  auto destroy = refimpl::MakeArgs<PJRT_Event_Destroy_Args>();
  destroy.event = ready.event;
  refimpl::CheckPjrt(api, api->PJRT_Event_Destroy(&destroy), "PJRT_Event_Destroy");
}

// One compiled program and its argument buffers, called in a loop.
class Loop {
 public:
  explicit Loop(const Options& o) : o_(o) {
    auto plugin = refimpl::Plugin::Load(o.plugin);
    client_ = refimpl::Client::Create(plugin);
    executable_ = client_->Compile(ReadFile(o.program), "mlir", ReadFile(o.compile_options));
    api_ = client_->api();
    const std::size_t num_outputs = executable_->num_outputs();
    if (o.donate && num_outputs != static_cast<std::size_t>(o.num_args)) {
      throw std::runtime_error("--donate needs as many outputs as arguments");
    }
    inputs_.resize(o.num_args);
    for (PJRT_Buffer*& b : inputs_) b = Upload(*client_, o);
    outputs_.assign(num_outputs, nullptr);
    previous_.assign(num_outputs, nullptr);
  }
  ~Loop() {
    for (PJRT_Buffer* b : inputs_) Destroy(api_, b);
    for (PJRT_Buffer* b : previous_) {
      if (b != nullptr) Destroy(api_, b);
    }
  }

  // Microseconds per call, one entry per repeat.
  std::vector<double> Measure(long iters, int repeats) {
    for (long i = 0; i < std::min(iters, 1000L); ++i) Call();  // warm up
    std::vector<double> per_call;
    for (int r = 0; r < repeats; ++r) {
      auto start = std::chrono::steady_clock::now();
      for (long i = 0; i < iters; ++i) Call();
      if (o_.donate) AwaitReady(api_, inputs_[0]);
      if (!o_.donate && previous_[0] != nullptr) AwaitReady(api_, previous_[0]);
      auto stop = std::chrono::steady_clock::now();
      per_call.push_back(std::chrono::duration<double, std::micro>(stop - start).count() /
                         static_cast<double>(iters));
    }
    return per_call;
  }

 private:
  // execute, then destroy the buffer that is no longer used: with donation
  // the old inputs (the outputs become the next inputs); without, the
  // previous call's outputs -- as `out = f(x)` drops the old `out` in Python
  // -- or, with --destroy-at-once, this call's outputs right away.
  void Call() {
    PJRT_Buffer* const* argument_list = inputs_.data();
    PJRT_Buffer** output_list = outputs_.data();
    auto options = refimpl::MakeArgs<PJRT_ExecuteOptions>();
    auto exec = refimpl::MakeArgs<PJRT_LoadedExecutable_Execute_Args>();
    exec.executable = executable_->raw();
    exec.options = &options;
    exec.argument_lists = &argument_list;
    exec.num_devices = 1;
    exec.num_args = inputs_.size();
    exec.output_lists = &output_list;
    refimpl::CheckPjrt(api_, api_->PJRT_LoadedExecutable_Execute(&exec), "Execute");
    if (o_.donate) {
      for (std::size_t i = 0; i < inputs_.size(); ++i) {
        Destroy(api_, inputs_[i]);
        inputs_[i] = outputs_[i];
      }
    } else if (o_.destroy_at_once) {
      for (PJRT_Buffer* out : outputs_) Destroy(api_, out);
    } else {
      for (PJRT_Buffer* old : previous_) {
        if (old != nullptr) Destroy(api_, old);
      }
      previous_ = outputs_;
    }
  }

  const Options& o_;
  std::shared_ptr<refimpl::Client> client_;
  std::shared_ptr<refimpl::Executable> executable_;
  const PJRT_Api* api_ = nullptr;
  std::vector<PJRT_Buffer*> inputs_, outputs_, previous_;
};

void Report(const Options& o, long iters, int repeats, const std::vector<double>& per_call) {
  std::vector<double> sorted = per_call;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  if (o.json) {
    std::printf("{\"us_per_call\": %.4f, \"repeats\": [", median);
    for (std::size_t i = 0; i < per_call.size(); ++i) {
      std::printf("%s%.4f", i ? ", " : "", per_call[i]);
    }
    std::printf("], \"iters\": %ld}\n", iters);
  } else {
    std::printf("raw_pjrt_loop: %.3f us/call (median of %d x %ld calls)\n", median, repeats, iters);
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = Parse(argc, argv);
    Loop loop(o);
    if (!o.serve) {
      Report(o, o.iters, o.repeats, loop.Measure(o.iters, o.repeats));
      return 0;
    }
    // --serve: "run ITERS REPEATS" per line on stdin, one report per line on
    // stdout, until "quit" or end of input. The benchmark keeps one process
    // per case and alternates it with the Python contenders call by call.
    std::printf("ready\n");
    std::fflush(stdout);
    std::string line;
    while (std::getline(std::cin, line)) {
      std::istringstream words(line);
      std::string command;
      long iters = 0;
      int repeats = 0;
      words >> command >> iters >> repeats;
      if (command == "quit") break;
      if (command != "run" || iters <= 0 || repeats <= 0) {
        throw std::runtime_error("--serve: expected 'run ITERS REPEATS' or 'quit', got: " + line);
      }
      Report(o, iters, repeats, loop.Measure(iters, repeats));
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "raw_pjrt_loop: %s\n", e.what());
    return 1;
  }
}
