// {{ NAME }} device library: kernels a compiler generated (torch.compile's Inductor), run
// by a stream's worker like any op.
//
// The caller hands device pointers, as for every op; the kernel gets the library's views of
// them, so it loads and stores memory the host cannot. A real device would copy the
// arguments into a launch packet and start the kernel on its cores; here the worker calls
// the generated code (which the framework compiled for the host CPU) directly.
#include <cctype>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {
namespace {

// The kernel's name as the queue, the fault handler and errors name it: kept for the
// process, since a queued item and the last-op record hold the pointer.
const char* interned(const char* name) {
  static std::mutex mu;
  static auto* names = new std::set<std::string, std::less<>>();  // leaked: read during exit
  std::lock_guard<std::mutex> lock(mu);
  auto known = names->find(std::string_view(name));  // a kernel launched again: no string made
  return (known != names->end() ? known : names->emplace(name).first)->c_str();
}

bool identifier(const char* name) {
  if (name == nullptr || *name == '\0' || std::isdigit(static_cast<unsigned char>(*name))) return false;
  for (const char* c = name; *c; ++c)
    if (!std::isalnum(static_cast<unsigned char>(*c)) && *c != '_') return false;
  return true;
}

}  // namespace
}  // namespace {{ p }}

extern "C" {

{{ p }}_status_t {{ p }}_launch_kernel({{ p }}_stream_t s, const char* name, {{ p }}_kernel_entry_t entry,
                                const {{ p }}_kernel_arg_t* args, size_t num_args) {
  using namespace {{ p }};
  if (entry == nullptr || !identifier(name) || (args == nullptr && num_args > 0))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  const char* kernel = interned(name);
  debug::Trace trace_(kernel);
  if (trace_.wants_attrs()) {  // (the stream's id only for the trace)
    uint64_t stream_id = 0;
    {{ p }}_stream_get_id(s, &stream_id);
    trace_.attr("launch", "compiled").attr("device", stream_device(s)).attr("stream", stream_id).attr("args", num_args);
  }
  std::vector<{{ p }}_kernel_arg_t> argv(args, args + num_args);
  for (size_t i = 0; i < num_args; ++i) {
    {{ p }}_kernel_arg_t& a = argv[i];
    if (a.kind == {{ NAME }}_KERNEL_ARG_BUFFER) {
      // An empty tensor's pointer may be NULL: the kernel does not touch it.
      if (a.value.buffer != nullptr && !device_views(s, a.value.buffer)) {
        return fail_call(kernel, {{ NAME }}_ERROR_INVALID_VALUE,
                         "argument " + std::to_string(i) + " is not memory of device " +
                             std::to_string(stream_device(s)) + " (the stream's)");
      }
    } else if (a.kind != {{ NAME }}_KERNEL_ARG_INT64 && a.kind != {{ NAME }}_KERNEL_ARG_FLOAT32 &&
               a.kind != {{ NAME }}_KERNEL_ARG_FLOAT64) {
      return fail_call(kernel, {{ NAME }}_ERROR_INVALID_VALUE, "argument " + std::to_string(i) + " has no known kind");
    }
  }
  return submit(s, kernel, [entry, argv]() mutable -> {{ p }}_status_t {
    std::vector<void*> pointers(argv.size());
    for (size_t i = 0; i < argv.size(); ++i)
      pointers[i] = argv[i].kind == {{ NAME }}_KERNEL_ARG_BUFFER ? argv[i].value.buffer : &argv[i].value;
    entry(pointers.data());
    return {{ NAME }}_OK;
  });
}

}  // extern "C"
