// The launch op of torch.compile's generated code (torch_{{ p }}/_inductor.py): each kernel
// Inductor generated is queued, like an eager kernel, on the current stream of its device
// through the device library's launch_kernel; the tensors' device pointers go to the library,
// which hands the kernel its own view of them.
#include <torch/library.h>

#include <string>
#include <vector>

#include "common.h"

namespace torch_{{ p }} {
namespace {

// kinds[i] says what argument i is: 'b' a tensor (the next of `buffers`), 'i' an int64 (the
// next of `ints`), 'f' a float32 or 'd' a float64 (the next of `floats`).
void launch_kernel(int64_t entry, c10::string_view name, int64_t device, c10::string_view kinds,
                   at::TensorList buffers, at::IntArrayRef ints, at::ArrayRef<double> floats) {
  const std::string kernel(name);
  TORCH_CHECK(entry != 0, "launch_kernel: ", kernel, " has no entry point");
  const c10::Device on = device_of(static_cast<c10::DeviceIndex>(device));
  std::vector<{{ p }}_kernel_arg_t> args(kinds.size());
  size_t b = 0, i = 0, f = 0;
  for (size_t n = 0; n < kinds.size(); ++n) {
    {{ p }}_kernel_arg_t& a = args[n];
    const char kind = kinds[n];
    if (kind == 'b') {
      TORCH_CHECK(b < buffers.size(), "launch_kernel: ", kernel, " lacks tensor argument ", n);
      const at::Tensor& t = buffers[b++];
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
  check({{ p }}_launch_kernel(current_stream(), kernel.c_str(), reinterpret_cast<{{ p }}_kernel_entry_t>(entry),
                              args.data(), args.size()),
        "launch_kernel");
}

}  // namespace

TORCH_LIBRARY_FRAGMENT({{ p }}, m) {
  m.def("launch_kernel(int entry, str name, int device, str kinds, Tensor[] buffers, int[] ints, float[] floats) -> ()",
        &launch_kernel);
}

}  // namespace torch_{{ p }}
