// Activations (device/src/activation_ops.cc): relu and its backward (threshold_backward at 0),
// sqrt, on the device's unary ops in float32/float64 (and float16/bfloat16 where the device has them).
#include <ATen/ExpandUtils.h>

#include "common.h"

namespace torch_{{ p }} {
namespace {

std::optional<at::Tensor> unary(const at::Tensor& self, {{ p }}_unary_op_t op) {
  if (!real_dtype(self)) return std::nullopt;
  const c10::DeviceGuard guard(self.device());
  at::Tensor x = contiguous(self);
  at::Tensor out = empty_device(self.sizes(), self.options());
  if (out.numel() > 0)
    check({{ p }}_unary(current_stream(), op, device_dtype(self.scalar_type()), x.const_data_ptr(), out.data_ptr(), x.numel()),
          "unary");
  return out;
}

at::Tensor relu(const at::Tensor& self) {
  KernelName k("aten::relu");
  auto r = unary(self, {{ NAME }}_UNARY_RELU);
  return r ? *r : run_on_cpu<ATEN_OP(relu)>(self);
}

at::Tensor& relu_(at::Tensor& self) {
  KernelName k("aten::relu_");
  auto r = unary(self, {{ NAME }}_UNARY_RELU);
  return r ? store(*r, self) : run_on_cpu<ATEN_OP(relu_)>(self);
}

at::Tensor sqrt(const at::Tensor& self) {
  KernelName k("aten::sqrt");
  auto r = unary(self, {{ NAME }}_UNARY_SQRT);
  return r ? *r : run_on_cpu<ATEN_OP(sqrt)>(self);
}

at::Tensor& sqrt_out(const at::Tensor& self, at::Tensor& out) {
  KernelName k("aten::sqrt.out");
  auto r = unary(self, {{ NAME }}_UNARY_SQRT);
  return r ? store(*r, out) : run_on_cpu<ATEN_OP2(sqrt, out)>(self, out);
}

// grad_input = self <= threshold ? 0 : grad. The device's relu gradient is exactly that
// for threshold 0 (relu's backward, given its output or input).
at::Tensor threshold_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& threshold) {
  KernelName k("aten::threshold_backward");
  const bool ok = threshold.toDouble() == 0.0 && grad.scalar_type() == self.scalar_type() &&
                  real_dtype(self) &&
                  grad.device() == self.device();
  if (!ok) return run_on_cpu<ATEN_OP(threshold_backward)>(grad, self, threshold);
  const auto sizes = at::infer_size(grad.sizes(), self.sizes());
  const c10::DeviceGuard guard(self.device());
  at::Tensor y = contiguous(self.expand(sizes)), g = contiguous(grad.expand(sizes));
  at::Tensor out = empty_device(sizes, self.options());
  if (out.numel() > 0)
    check({{ p }}_unary_grad(current_stream(), {{ NAME }}_UNARY_RELU, device_dtype(self.scalar_type()), y.const_data_ptr(),
                          g.const_data_ptr(), out.data_ptr(), out.numel()),
          "unary_grad");
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  Kernels(m)
      .impl("relu", TORCH_FN(relu)).impl("relu_", TORCH_FN(relu_))
      .impl("sqrt", TORCH_FN(sqrt)).impl("sqrt.out", TORCH_FN(sqrt_out))
      .impl("threshold_backward", TORCH_FN(threshold_backward));
}

}  // namespace torch_{{ p }}
