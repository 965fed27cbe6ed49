// The library Paddle opens: site-packages/paddle_custom_device/lib{{ plugin_target }}.so.
//
// Paddle dlopens every *.so in paddle_custom_device/ at `import paddle`, and one it cannot
// open makes the import raise: a plugin whose vendor SDK runtime (the driver) is not
// installed, or is another version, would break Paddle for CPU work too. So the plugin proper
// ({{ device_type }}/lib{{ plugin_target }}-impl.so, a directory Paddle does not scan) is opened
// here, by InitPlugin. This library needs only the C and C++ runtimes (Paddle's own), so it
// always loads. When the plugin proper cannot be loaded it prints one line naming what is
// missing and returns without a device type: Paddle skips the plugin and goes on without
// the device.
//
// Paddle's parameters are handed on untouched: the plugin proper checks their version.
#include <dlfcn.h>

#include <cstdio>
#include <string>

namespace {

// Set by CMakeLists.txt from what the build knew.
constexpr char kImplementation[] = {{ NAME }}_LOADER_IMPLEMENTATION;  // relative to this library
constexpr char kPaddleVersion[] = {{ NAME }}_PADDLE_VERSION;
constexpr char kSdk[] = {{ NAME }}_SDK_LABEL;                  // "name version", "" without an SDK
constexpr char kRuntimeLibs[] = {{ NAME }}_SDK_RUNTIME_LIBS;  // ';'-separated sonames

std::string own_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_directory), &info) == 0 || info.dli_fname == nullptr) return ".";
  std::string path(info.dli_fname);
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The SDK runtime library the dynamic loader's error names ("libX.so.1: cannot open ..."), if any.
std::string missing_runtime_lib(const std::string& error) {
  std::string libs(kRuntimeLibs);
  for (size_t start = 0; start < libs.size();) {
    size_t end = libs.find(';', start);
    if (end == std::string::npos) end = libs.size();
    const std::string lib = libs.substr(start, end - start);
    if (!lib.empty() && error.find(lib + ":") != std::string::npos) return lib;
    start = end + 1;
  }
  return "";
}

void unavailable(const std::string& what, const std::string& fix) {
  std::fprintf(stderr,
               "{{ project_name }}: the {{ device_type }} device is unavailable: %s. %s; Paddle works without it "
               "on the CPU.\n",
               what.c_str(), fix.c_str());
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void InitPlugin(void* params) {
  const std::string path = own_directory() + "/" + kImplementation;
  // RTLD_NOW: a symbol the installed SDK runtime lacks is named here, not at the first call.
  void* plugin = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (plugin == nullptr) {
    const char* said = dlerror();
    const std::string error = said ? said : "unknown error";
    const std::string runtime_lib = missing_runtime_lib(error);
    if (!runtime_lib.empty()) {
      // "libX.so.1: version `X_2.0' not found": an older runtime than the one built against
      const bool other_version = error.find("version `") != std::string::npos;
      unavailable(std::string("it needs the ") + kSdk + " runtime, and " +
                      (other_version ? "the " + runtime_lib + " found is of another version (" + error + ")"
                                     : runtime_lib + " could not be loaded (" + error + ")"),
                  std::string("Install the ") + kSdk + " runtime (the driver package) to use it");
    } else {
      const std::string sdk = kSdk[0] ? std::string("the ") + kSdk + " runtime and " : "";
      unavailable("the plugin library could not be loaded (" + error + ")",  // the error names it
                  "It was built for " + sdk + "Paddle " + kPaddleVersion +
                      ": install those, or rebuild the plugin against what is installed (devkit build; "
                      "devkit check-abi names what differs)");
    }
    return;  // no device type: Paddle skips this plugin
  }
  using InitFn = void (*)(void*);
  auto init = reinterpret_cast<InitFn>(dlsym(plugin, "InitPlugin"));
  if (init == nullptr) {
    unavailable(path + " has no InitPlugin", "Reinstall {{ project_name }}");
    return;
  }
  init(params);
}
