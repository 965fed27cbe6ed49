// {{ NAME }}_FALLBACK_OPS: kernels not to register, so Paddle runs those ops on the CPU
// (with FLAGS_enable_api_kernel_fallback, Paddle's default). A comma-separated list of
// regular expressions matched against whole kernel names, e.g. "matmul.*,conv2d_grad".
// Use it to isolate a suspect kernel without rebuilding.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "paddle/phi/common/backend.h"
#include "paddle/phi/core/custom_kernel.h"
#include "op_patterns.h"

namespace {{ p }}_kernels {

// Kernels the device library cannot run (ops it does not implement, see device/src): never
// registered, whatever the environment says. Empty for the host-backed device library.
constexpr char kUnimplemented[] = R"patterns({{ unregistered.paddle | join(",") }})patterns";  // (raw: the patterns hold backslashes)

namespace {

// Removes our kernels whose names match; returns " name1, name2" of those removed.
std::string remove_kernels(const {{ p }}::core::OpPatterns& patterns) {
  const phi::Backend ours = paddle::experimental::StringToBackend("{{ device_type }}");
  auto& kernels = phi::CustomKernelMap::Instance().Kernels();
  std::string removed;
  for (auto it = kernels.begin(); it != kernels.end();) {
    if (patterns.matches(it->first)) {
      auto& keys = it->second;
      for (auto k = keys.begin(); k != keys.end();) {
        k = k->first.backend() == ours ? keys.erase(k) : std::next(k);
      }
      if (removed.find(" " + it->first + ",") == std::string::npos) removed += " " + it->first + ",";
    }
    it = it->second.empty() ? kernels.erase(it) : std::next(it);
  }
  if (!removed.empty()) removed.pop_back();
  return removed;
}

}  // namespace

// Called from InitPlugin: Paddle has loaded the library (our kernels sit in its
// custom-kernel map) and moves them into its kernel factory after InitPlugin returns.
void ApplyFallbackOps() {
  if (kUnimplemented[0]) remove_kernels({{ p }}::core::OpPatterns(kUnimplemented, "the unimplemented kernels"));
  const char* spec = std::getenv("{{ NAME }}_FALLBACK_OPS");
  if (!spec || !*spec) return;
  const std::string removed = remove_kernels({{ p }}::core::OpPatterns(spec, "{{ NAME }}_FALLBACK_OPS"));
  std::fprintf(stderr, "[{{ NAME }}] {{ NAME }}_FALLBACK_OPS=%s: not registering%s; these ops run on the CPU\n",
               spec, removed.empty() ? " nothing (no kernel matched)" : removed.c_str());
}

}  // namespace {{ p }}_kernels

// The patterns of kernels left unregistered because the device library lacks their ops;
// read by devkit verify (through ctypes), which counts their CPU fallbacks as by design.
extern "C" const char* {{ p }}_unimplemented_kernels() { return {{ p }}_kernels::kUnimplemented; }
