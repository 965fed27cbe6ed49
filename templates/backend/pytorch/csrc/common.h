// Shared helpers of the {{ NAME }} PyTorch adapter: device-library calls from ATen
// tensors (dtypes, shapes, streams, status checks), device-side contiguous copies,
// kernel registration through the {{ NAME }}_FALLBACK_OPS filter, and the CPU
// fallback a kernel takes for cases the device library does not implement.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <optional>
#include <string>

#include <c10/core/DeviceGuard.h>

#include "{{ p }}_device.h"
#include "runtime/device.h"
#include "runtime/storage.h"
#include "runtime/streams.h"

namespace torch_{{ p }} {

// ---- device-library calls -------------------------------------------------------
// check(), the current device and stream, storage resizes: runtime/

// Names the torch op the following device-library calls run for, in
// {{ NAME }}_DUMP_OP_ARGS / {{ NAME }}_AUTOCOMPARE output; unnamed again at scope exit.
class KernelName {
 public:
  explicit KernelName(const char* op) { {{ p }}_debug_kernel(op); }
  ~KernelName() { {{ p }}_debug_kernel(nullptr); }
  KernelName(const KernelName&) = delete;
  KernelName& operator=(const KernelName&) = delete;
};

// Whether an optional tensor argument holds a tensor (torch passes an absent one as either an
// empty optional or an undefined tensor).
inline bool given(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

// The device dtype of a torch dtype; false for dtypes the device library has no ops for
// (complex, ...{{ "" if half_precision else "; half and bfloat16: this flavour has no half precision" }}).
bool device_dtype(at::ScalarType type, {{ p }}_dtype_t* out);
{{ p }}_dtype_t device_dtype(at::ScalarType type);  // throws for unsupported dtypes
bool is_device_dtype(at::ScalarType type);

{{ p }}_shape_t shape_of(at::IntArrayRef sizes);

// ---- device tensors ----------------------------------------------------------------

at::Tensor empty_device(at::IntArrayRef sizes, const at::TensorOptions& options,
                        at::MemoryFormat format = at::MemoryFormat::Contiguous);
// An uninitialised device tensor of `like`'s sizes and strides (a dense tensor's), of dtype `type`:
// an element-wise result in its operand's layout (channels_last stays so), as empty_like gives.
at::Tensor empty_device_like(const at::Tensor& like, at::ScalarType type);

// `t` itself when contiguous, else a contiguous device copy (device strided copy).
at::Tensor contiguous(const at::Tensor& t);
// `t` itself when its elements fill one block of memory (contiguous, channels_last, any order of
// its dims), else a dense device copy in the order of its strides: what an element-wise kernel
// reads in storage order, and whose layout its result takes (as on the CPU).
at::Tensor dense(const at::Tensor& t);
// The device tensor `result` laid out as TensorIterator lays out a result of `like`'s shape:
// itself when it already is, else a device copy.
at::Tensor in_layout_of(const at::Tensor& result, const at::Tensor& like);
// A contiguous device copy of `t` converted to `type` (device cast).
at::Tensor contiguous_as(const at::Tensor& t, at::ScalarType type);
// Writes the contiguous device tensor `src` (dst's shape and dtype) into dst's layout.
void copy_into(const at::Tensor& src, const at::Tensor& dst);
// A device tensor from a CPU 0-dim "wrapped number" (x * 2.0) or any scalar tensor, as `type`.
at::Tensor scalar_on_device(const at::Scalar& value, at::ScalarType type, const at::Device& device);
// Writes a kernel's result into an out= / in-place tensor: resized, cast to its dtype (when
// torch's casting rules allow it), in its layout.
at::Tensor& store(const at::Tensor& result, at::Tensor& out);

// ---- registration (fallback.cpp) --------------------------------------------------

// True when {{ NAME }}_FALLBACK_OPS names `op` ("aten::add.Tensor"): its kernel is not
// registered and the op runs on the CPU through the fallback.
bool fallback_requested(const std::string& op);

// The boxed CPU fallback (counts the op; refuses under {{ NAME }}_STRICT_FALLBACK=1).
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// The 16-bit float types, where the device library computes them (flavour.toml: half-precision).
inline bool half_type(at::ScalarType type) {
  return {{ "type == at::kHalf || type == at::kBFloat16" if half_precision else "false" }};
}

// True when the tensors are device tensors of one dtype that gemm and convolution take:
// float32, or float16/bfloat16 (computed in float32).
inline bool gemm_dtype_device(std::initializer_list<const at::Tensor*> ts) {
  const at::ScalarType type = (*ts.begin())->scalar_type();
  if (type != at::kFloat && !half_type(type)) return false;
  for (const at::Tensor* t : ts)
    if (t->scalar_type() != type || t->device().type() != c10::DeviceType::PrivateUse1) return false;
  return true;
}

// True for the floating-point dtypes the device's real-valued ops take (activations, pooling
// with indices, log-softmax, losses): float32, float64, and float16/bfloat16.
inline bool real_dtype(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble || half_type(t.scalar_type());
}

// ---- dtypes at the kernel entry ----------------------------------------------------
// False when an argument is a tensor (or a dtype) the device library has no ops for.
template <class T>
bool device_dtypes(const T&) { return true; }
inline bool device_dtypes(const at::Tensor& t) { return !t.defined() || is_device_dtype(t.scalar_type()); }
inline bool device_dtypes(const std::optional<at::Tensor>& t) { return !t.has_value() || device_dtypes(*t); }
inline bool device_dtypes(const std::optional<at::ScalarType>& d) { return !d.has_value() || is_device_dtype(*d); }
inline bool device_dtypes(at::TensorList ts) {
  for (const at::Tensor& t : ts)
    if (!device_dtypes(t)) return false;
  return true;
}

// ---- the device a kernel runs on ------------------------------------------------------
// The first {{ device_type }} tensor among a kernel's arguments: its device is made current for
// the call (its streams, its memory), as torch's generated CUDA wrappers do, so an op on
// {{ device_type }}:1 works whatever the current device is.
template <class T>
void first_device(std::optional<c10::Device>&, const T&) {}
inline void first_device(std::optional<c10::Device>& d, const at::Tensor& t) {
  if (!d && t.defined() && t.device().type() == c10::DeviceType::PrivateUse1) d = t.device();
}
inline void first_device(std::optional<c10::Device>& d, const std::optional<at::Tensor>& t) {
  if (t.has_value()) first_device(d, *t);
}
inline void first_device(std::optional<c10::Device>& d, at::TensorList ts) {
  for (const at::Tensor& t : ts) first_device(d, t);
}

// A registered kernel behind a dtype check and a device guard: a call with a tensor of a dtype
// the device lacks (half, bfloat16, complex, ...) runs the op on the CPU through the fallback,
// like an op without a kernel, instead of failing inside the kernel ("has no ops for dtype Half").
template <class Fn, class Sig = typename Fn::FuncType>
struct DtypeChecked;
template <class Fn, class Ret, class... Args>
struct DtypeChecked<Fn, Ret(Args...)> {
  static std::optional<c10::OperatorHandle>& op() {
    static std::optional<c10::OperatorHandle> handle;
    return handle;
  }
  static Ret call(Args... args) {
    std::optional<c10::Device> device;
    (first_device(device, args), ...);
    const c10::OptionalDeviceGuard guard(device);
    if ((device_dtypes(args) && ...)) return (*Fn::func_ptr())(std::forward<Args>(args)...);
    return c10::impl::BoxedKernelWrapper<Ret(Args...)>::call(c10::BoxedKernel::makeFromFunction<&cpu_fallback>(), *op(),
                                                             c10::DispatchKeySet(), std::forward<Args>(args)...);
  }
};

// Every kernel registration goes through this, so {{ NAME }}_FALLBACK_OPS can remove it:
//   Kernels k(m); k.impl("add.Tensor", TORCH_FN(add_tensor));
// impl() puts the kernel behind the dtype check; impl_any_dtype() is for kernels that only
// move or describe memory (empty, views, copies), which every dtype has.
class Kernels {
 public:
  explicit Kernels(torch::Library& m) : m_(m) {}
  template <class FuncType, FuncType* func>
  Kernels& impl(const char* op, c10::CompileTimeFunctionPointer<FuncType, func> fn) {
    using Checked = DtypeChecked<decltype(fn)>;
    if (fallback_requested(std::string("aten::") + op)) return *this;
    const std::string name(op);
    const size_t dot = name.find('.');
    Checked::op().emplace(c10::Dispatcher::singleton().findSchemaOrThrow(
        ("aten::" + name.substr(0, dot)).c_str(), dot == std::string::npos ? "" : name.substr(dot + 1).c_str()));
    m_.impl(op, TORCH_FN(Checked::call));
    return *this;
  }
  template <typename Fn>
  Kernels& impl_any_dtype(const char* op, Fn&& fn) {
    if (!fallback_requested(std::string("aten::") + op)) m_.impl(op, std::forward<Fn>(fn));
    return *this;
  }

 private:
  torch::Library& m_;
};
// Counts `op` as run on the CPU, or refuses under {{ NAME }}_STRICT_FALLBACK=1: for kernels
// that run a case on the CPU themselves.
void note_cpu_fallback(const std::string& op);

// Runs the op on the CPU from inside our kernel, for cases the device library does not
// cover (a dtype it lacks): return run_on_cpu<ATEN_OP2(add, Tensor)>(self, other, alpha);
template <class Op, class... Args>
decltype(auto) run_on_cpu(Args&&... args) {
  return at::native::call_fallback_fn<&cpu_fallback, Op>::call(std::forward<Args>(args)...);
}

}  // namespace torch_{{ p }}
