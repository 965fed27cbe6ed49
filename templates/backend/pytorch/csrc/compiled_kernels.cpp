// The launch op of torch.compile's generated code (torch_{{ p }}/_inductor.py): each kernel
// Inductor generated is queued, like an eager kernel, on the current stream of its device
// through the device library's launch_kernel; the tensors' device pointers go to the library,
// which hands the kernel its own view of them. Only kernels the adapter loaded itself run:
// load_kernel opens the module Inductor compiled and gives out a handle, launch_kernel takes
// that handle (never an address, which would send the device's worker wherever a caller says).
#include <dlfcn.h>
#include <torch/library.h>

#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common.h"

namespace torch_{{ p }} {
namespace {

// A kernel load_kernel opened: its entry point and the kinds of its arguments, as the module
// itself declares them ({{ p }}_entry, {{ p }}_entry_kinds: _inductor.py's entry source).
struct LoadedKernel {
  {{ p }}_kernel_entry_t entry = nullptr;
  std::string kinds;
};

class LoadedKernels {
 public:
  int64_t load(const std::string& path) {
    void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    const char* why = module == nullptr ? dlerror() : nullptr;
    TORCH_CHECK(module != nullptr, "load_kernel: cannot load ", path, ": ", why ? why : "dlopen failed");
    auto entry = reinterpret_cast<{{ p }}_kernel_entry_t>(dlsym(module, "{{ p }}_entry"));
    const auto* kinds = static_cast<const char*>(dlsym(module, "{{ p }}_entry_kinds"));
    if (entry == nullptr || kinds == nullptr) {
      dlclose(module);
      TORCH_CHECK(false, "load_kernel: ", path, " is no kernel torch.compile generated for {{ device_type }} (it lacks ",
                  "{{ p }}_entry or {{ p }}_entry_kinds)");
    }
    // The module stays loaded for the process: launches of it may still be queued.
    std::lock_guard<std::mutex> lock(mutex_);
    auto [known, added] = handles_.try_emplace(reinterpret_cast<void*>(entry), kernels_.size() + 1);
    if (added) kernels_.push_back({entry, kinds});
    return known->second;
  }

  LoadedKernel find(int64_t handle, const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    TORCH_CHECK(handle >= 1 && handle <= static_cast<int64_t>(kernels_.size()), "launch_kernel: ", handle,
                " (for ", name, ") is no kernel handle load_kernel gave out: launch only kernels loaded with ",
                "torch.ops.{{ p }}.load_kernel");
    return kernels_[handle - 1];
  }

 private:
  mutable std::mutex mutex_;
  std::vector<LoadedKernel> kernels_;            // handle h is kernels_[h - 1]
  std::unordered_map<void*, int64_t> handles_;  // entry point -> its handle (a module loaded again)
};

LoadedKernels& loaded_kernels() {
  static LoadedKernels* kernels = new LoadedKernels();  // never destroyed: a late launch may still look one up
  return *kernels;
}

int64_t load_kernel(c10::string_view path) { return loaded_kernels().load(std::string(path)); }

// kinds[i] says what argument i is: 'b' a tensor (the next of `buffers`), 'i' an int64 (the
// next of `ints`), 'f' a float32 or 'd' a float64 (the next of `floats`).
void launch_kernel(int64_t handle, c10::string_view name, int64_t device, c10::string_view kinds,
                   at::TensorList buffers, at::IntArrayRef ints, at::ArrayRef<double> floats) {
  const std::string kernel(name);
  const LoadedKernel loaded = loaded_kernels().find(handle, kernel);
  TORCH_CHECK(std::string(kinds) == loaded.kinds, "launch_kernel: ", kernel, " takes arguments of kinds '", loaded.kinds,
              "', not '", std::string(kinds), "'");
  const c10::Device on = device_of(static_cast<c10::DeviceIndex>(device));
  std::vector<{{ p }}_kernel_arg_t> args(kinds.size());
  size_t b = 0, i = 0, f = 0;
  for (size_t n = 0; n < kinds.size(); ++n) {
    {{ p }}_kernel_arg_t& a = args[n];
    const char kind = kinds[n];
    if (kind == 'b') {
      TORCH_CHECK(b < buffers.size(), "launch_kernel: ", kernel, " lacks tensor argument ", n);
      const at::Tensor& t = buffers[b++];
      if (t.device().is_cpu() && t.dim() == 0 && t.element_size() <= sizeof(a.value)) {
        // A zero-dim CPU tensor (Adam's step count) read by a device kernel: its value now, in
        // program order, as Inductor passes one to a GPU kernel; the kernel gets a pointer to the
        // library's copy of it.
        a.kind = {{ NAME }}_KERNEL_ARG_INT64;
        a.value.i64 = 0;
        std::memcpy(&a.value, t.const_data_ptr(), t.element_size());
        continue;
      }
      TORCH_CHECK(t.device() == on, "launch_kernel: argument ", n, " of ", kernel, " is on ", t.device(),
                  ", not on ", on, " where the kernel runs");
      a.kind = {{ NAME }}_KERNEL_ARG_BUFFER;
      a.value.buffer = t.data_ptr();
    } else if (kind == 'i') {
      TORCH_CHECK(i < ints.size(), "launch_kernel: ", kernel, " lacks int argument ", n);
      a.kind = {{ NAME }}_KERNEL_ARG_INT64;
      a.value.i64 = ints[i++];
    } else if (kind == 'f' || kind == 'd') {
      TORCH_CHECK(f < floats.size(), "launch_kernel: ", kernel, " lacks float argument ", n);
      a.kind = kind == 'f' ? {{ NAME }}_KERNEL_ARG_FLOAT32 : {{ NAME }}_KERNEL_ARG_FLOAT64;
      if (kind == 'f') a.value.f32 = static_cast<float>(floats[f++]);
      else a.value.f64 = floats[f++];
    } else {
      TORCH_CHECK(false, "launch_kernel: argument kind '", kind, "' of ", kernel, " is none of b, i, f, d");
    }
  }
  TORCH_CHECK(b == buffers.size() && i == ints.size() && f == floats.size(), "launch_kernel: ", kernel,
              " got more arguments than its kinds '", std::string(kinds), "' name");
  c10::DeviceGuard guard(on);
  KernelName named("torch.compile");
  check({{ p }}_launch_kernel(current_stream(), kernel.c_str(), loaded.entry, args.data(), args.size()),
        "launch_kernel");
}

}  // namespace

TORCH_LIBRARY_FRAGMENT({{ p }}, m) {
  m.def("load_kernel(str path) -> int", &load_kernel);
  m.def("launch_kernel(int kernel, str name, int device, str kinds, Tensor[] buffers, int[] ints, float[] floats) -> ()",
        &launch_kernel);
}

}  // namespace torch_{{ p }}
