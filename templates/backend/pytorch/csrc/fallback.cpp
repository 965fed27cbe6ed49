// The CPU fallback and its switches (read when the library is loaded):
//
//   {{ NAME }}_FALLBACK_OPS=re1,re2   kernels not to register: a comma-separated list of
//       regular expressions, each matched against whole operator names with or without
//       the "aten::" prefix (e.g. "aten::add\.Tensor", "add.*", "convolution_.*").
//       Those ops take the CPU fallback; use it to isolate a suspect kernel without
//       rebuilding. The library prints what it did not register, once.
//   {{ NAME }}_STRICT_FALLBACK=1      every fallback raises instead of running on the CPU;
//       torch.{{ device_type }}.strict_fallback(False) lifts it for a block (a fallback report after
//       strict checks, in the same process).
//
// Ops without a {{ device_type }} kernel run on the CPU: at::native::cpu_fallback copies the
// inputs to the host, runs the CPU kernel and copies the results back. Each fallback is
// counted per operator (torch.{{ p }}.fallback_counts()).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>
#include <vector>

#include "common.h"
#include "op_patterns.h"

namespace torch_{{ p }} {
namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

// Ops the device library cannot run (it does not implement what their kernels need, see
// device/src): never registered, whatever the environment says. Comma-separated patterns;
// empty for the host-backed device library. (A constant, not a std::vector: kernels register
// from static initializers of other files, before this file's would have run.)
constexpr char kUnimplemented[] = R"patterns({{ unregistered.torch | join(",") }})patterns";  // (raw: the patterns hold backslashes)

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream stream(list);
  for (std::string item; std::getline(stream, item, ',');) items.push_back(item);
  return items;
}

struct Settings {
  const char* spec = std::getenv("{{ NAME }}_FALLBACK_OPS");
  {{ p }}::core::OpPatterns patterns{spec ? spec : "", "{{ NAME }}_FALLBACK_OPS"};
  {{ p }}::core::OpPatterns unimplemented{kUnimplemented, "the unimplemented kernels"};
};

// Operator names match with or without the "aten::" prefix.
bool matches(const {{ p }}::core::OpPatterns& patterns, const std::string& op) {
  return patterns.matches(op) || (op.rfind("aten::", 0) == 0 && patterns.matches(op.substr(6)));
}

// Function-local statics: kernels register from static initializers of other files.
const Settings& settings() {
  static const Settings s;
  return s;
}

std::atomic<bool>& strict() {
  static std::atomic<bool> s{env_flag("{{ NAME }}_STRICT_FALLBACK")};
  return s;
}

std::mutex g_mu;
std::map<std::string, int64_t>& counts() {
  static std::map<std::string, int64_t> c;
  return c;
}
std::vector<std::string>& skipped() {
  static std::vector<std::string> s;
  return s;
}

}  // namespace

bool fallback_requested(const std::string& op) {
  const Settings& s = settings();
  if (s.patterns.empty() && s.unimplemented.empty()) return false;
  if (matches(s.unimplemented, op)) return true;
  if (!matches(s.patterns, op)) return false;
  std::lock_guard<std::mutex> lock(g_mu);
  skipped().push_back(op);
  return true;
}

void note_cpu_fallback(const std::string& op) {
  // (the ops the device library does not implement fall back by design, strict or not)
  TORCH_CHECK(!strict() || matches(settings().unimplemented, op), "op ", op,
              " has no {{ device_type }} kernel and {{ NAME }}_STRICT_FALLBACK=1 forbids the CPU fallback");
  std::lock_guard<std::mutex> lock(g_mu);
  ++counts()[op];
}

namespace {

// The arguments an op writes although its schema does not mark them (no "(a!)"):
// at::native::cpu_fallback copies back only the marked ones, so these would keep their old
// values on the device. native_batch_norm (and .out) updates running_mean and running_var
// (arguments 3 and 4) in training: BatchNorm's and InstanceNorm's running statistics.
std::vector<size_t> unmarked_writes(const c10::FunctionSchema& schema, const torch::jit::Stack& stack) {
  if (schema.name() != "aten::native_batch_norm") return {};
  const size_t first = stack.size() - schema.arguments().size();
  return stack[first + 5].toBool() ? std::vector<size_t>{3, 4} : std::vector<size_t>{};
}

}  // namespace

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const auto& name = schema.operator_name();
  note_cpu_fallback(name.overload_name.empty() ? name.name : name.name + "." + name.overload_name);
  // Unmarked writes go to host copies put on the stack (the fallback uses a CPU argument as it
  // is), then back to the device tensors.
  const size_t first = stack->size() - schema.arguments().size();
  std::vector<std::pair<at::Tensor, at::Tensor>> written;  // (device tensor, its host copy)
  for (size_t i : unmarked_writes(schema, *stack)) {
    c10::IValue& arg = (*stack)[first + i];
    if (!arg.isTensor()) continue;  // (an absent optional)
    const at::Tensor host = arg.toTensor().cpu();
    written.emplace_back(arg.toTensor(), host);
    arg = host;
  }
  at::native::cpu_fallback(op, stack);
  for (auto& [device, host] : written) device.copy_(host);
}

namespace {

void print_skipped_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    const Settings& s = settings();
    if (!s.spec || !*s.spec) return;
    std::string list;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      for (const auto& op : skipped()) list += (list.empty() ? " " : ", ") + op;
    }
    std::fprintf(stderr, "[{{ NAME }}] {{ NAME }}_FALLBACK_OPS=%s: not registering%s; these ops run on the CPU\n",
                 s.spec, list.empty() ? " anything (no kernel matched)" : list.c_str());
  });
}

// Two lists rather than a dict: TORCH_LIBRARY schemas have no string->int map.
std::tuple<std::vector<std::string>, std::vector<int64_t>> fallback_counts() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<std::string> names;
  std::vector<int64_t> n;
  for (const auto& [op, c] : counts()) {
    names.push_back(op);
    n.push_back(c);
  }
  return {names, n};
}

void reset_fallback_counts() {
  std::lock_guard<std::mutex> lock(g_mu);
  counts().clear();
}

std::vector<std::string> skipped_kernels() {
  print_skipped_once();
  std::lock_guard<std::mutex> lock(g_mu);
  return skipped();
}

bool strict_fallback() { return strict(); }

// The previous setting, for the caller to put back.
bool set_strict_fallback(bool enabled) { return strict().exchange(enabled); }

std::vector<std::string> unimplemented_kernels() { return split(kUnimplemented); }

// Ops whose kernel for every backend is a composite that ends in a CPU-only path or in a
// DispatchStub without a {{ device_type }} entry, so the backend fallback never sees them: sent to
// it by name. (torch 2.13: conj_physical_, which svd's complex out= calls too; mode.values.)
constexpr const char* kRoutedToCpu[] = {"conj_physical_", "mode.values"};

// torch 2.13's own CPU fft_ihfft2.out and fft_ihfftn.out leave `out` unwritten for some arguments
// (ihfft2 with dim=0, ihfftn with s=(8,) or one dim: |diff| 11 against their functional forms, on
// the CPU alone), and the backend fallback would run just those: here the functional form runs on
// the CPU and is stored into `out`.
constexpr const char* kOutOnCpu[] = {"fft_ihfft2.out", "fft_ihfftn.out"};

at::Tensor& fft_ihfft2_out(const at::Tensor& self, at::OptionalSymIntArrayRef s, at::IntArrayRef dim,
                           std::optional<c10::string_view> norm, at::Tensor& out) {
  KernelName k("aten::fft_ihfft2.out");
  const c10::DeviceGuard guard(out.device());
  note_cpu_fallback("aten::fft_ihfft2.out");
  return store(at::fft_ihfft2_symint(self.cpu(), s, dim, norm).to(out.device()), out);
}

at::Tensor& fft_ihfftn_out(const at::Tensor& self, at::OptionalSymIntArrayRef s, at::OptionalIntArrayRef dim,
                           std::optional<c10::string_view> norm, at::Tensor& out) {
  KernelName k("aten::fft_ihfftn.out");
  const c10::DeviceGuard guard(out.device());
  note_cpu_fallback("aten::fft_ihfftn.out");
  return store(at::fft_ihfftn_symint(self.cpu(), s, dim, norm).to(out.device()), out);
}

std::vector<std::string> routed_to_cpu() {
  std::vector<std::string> ops(std::begin(kRoutedToCpu), std::end(kRoutedToCpu));
  ops.insert(ops.end(), std::begin(kOutOnCpu), std::end(kOutOnCpu));
  return ops;
}

}  // namespace

TORCH_LIBRARY_FRAGMENT({{ p }}, m) {
  m.def("fallback_counts() -> (str[], int[])", &fallback_counts);
  m.def("reset_fallback_counts() -> ()", &reset_fallback_counts);
  // Kernels {{ NAME }}_FALLBACK_OPS removed; the first call prints them on stderr.
  m.def("skipped_kernels() -> str[]", &skipped_kernels);
  m.def("strict_fallback() -> bool", &strict_fallback);
  m.def("set_strict_fallback(bool enabled) -> bool", &set_strict_fallback);
  // Patterns of the ops left unregistered because the device library lacks them (by design:
  // devkit verify counts their CPU fallbacks apart).
  m.def("unimplemented_kernels() -> str[]", &unimplemented_kernels);
  // The ops registered only to send them to the CPU fallback (no device kernel behind them).
  m.def("routed_to_cpu() -> str[]", &routed_to_cpu);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* op : kRoutedToCpu) m.impl(op, torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
  // (any dtype: a complex `out`, which the device library has no ops for, is only stored into)
  Kernels(m)
      .impl_any_dtype("fft_ihfft2.out", TORCH_FN(fft_ihfft2_out))
      .impl_any_dtype("fft_ihfftn.out", TORCH_FN(fft_ihfftn_out));
}

}  // namespace torch_{{ p }}
