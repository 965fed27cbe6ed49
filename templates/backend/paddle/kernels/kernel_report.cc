// Run-time kernel signature report: each {{ device_type }} kernel's argument definitions
// (inputs, attributes, outputs, as Paddle parsed them at registration) next to those
// of the same kernel in the Paddle that loaded the plugin (its CPU kernel). A kernel
// compiled against other Paddle headers shows up here before a model calls it.
// Read by `devkit check-kernels` and `devkit verify` through ctypes.
#include <sstream>
#include <string>
#include <typeindex>

#include "paddle/phi/common/backend.h"
#include "paddle/phi/core/kernel_factory.h"

namespace {

std::string describe(const phi::KernelArgsDef& args) {
  std::ostringstream s;
  s << "inputs " << args.input_defs().size() << " [";
  for (size_t i = 0; i < args.input_defs().size(); ++i) s << (i ? "," : "") << args.input_defs()[i].type_index.name();
  s << "], attributes " << args.attribute_defs().size() << " [";
  for (size_t i = 0; i < args.attribute_defs().size(); ++i)
    s << (i ? "," : "") << static_cast<int>(args.attribute_defs()[i].type_index);
  s << "], outputs " << args.output_defs().size() << " [";
  for (size_t i = 0; i < args.output_defs().size(); ++i) s << (i ? "," : "") << args.output_defs()[i].type_index.name();
  s << "]";
  return s.str();
}

}  // namespace

// One line per kernel: "<name>\t<ours>\t<paddle's, or '-' when Paddle has no CPU kernel>".
extern "C" const char* {{ p }}_kernel_report() {
  static std::string report;
  report.clear();
  const phi::Backend ours = paddle::experimental::StringToBackend("{{ device_type }}");
  for (const auto& named : phi::KernelFactory::Instance().kernels()) {
    const phi::Kernel* plugin = nullptr;
    const phi::Kernel* paddle = nullptr;
    for (const auto& keyed : named.second) {
      if (keyed.first.backend() == ours && !plugin) plugin = &keyed.second;
      if (keyed.first.backend() == phi::Backend::CPU && !paddle) paddle = &keyed.second;
    }
    if (!plugin) continue;
    report += named.first + "\t" + describe(plugin->args_def()) + "\t" +
              (paddle ? describe(paddle->args_def()) : std::string("-")) + "\n";
  }
  return report.c_str();
}
