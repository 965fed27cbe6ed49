// Activations (device/src/activation_ops.cc): relu and its backward (threshold_backward at 0),
// both keeping NaN as torch's CPU kernels do (the device's RELU_KEEP_NAN: its RELU is Paddle's),
// sigmoid and tanh with their backwards, sqrt, on the device's unary ops in float32/float64 (and
// float16/bfloat16 where the device has them). sigmoid, tanh and sqrt are structured ops: their
// .out kernel is what torch calls for the functional and in-place forms too. A dense input
// (channels_last too) is computed in its storage order, and the result takes its strides.
#include <ATen/ExpandUtils.h>

#include "common.h"

namespace torch_{{ p }} {
namespace activation {

std::optional<at::Tensor> unary(const at::Tensor& self, {{ p }}_unary_op_t op) {
  if (!real_dtype(self)) return std::nullopt;
  const c10::DeviceGuard guard(self.device());
  at::Tensor x = dense(self);
  at::Tensor out = empty_device_like(x, x.scalar_type());
  if (out.numel() > 0)
    check({{ p }}_unary(current_stream(), op, device_dtype(self.scalar_type()), x.const_data_ptr(), out.data_ptr(), x.numel()),
          "unary");
  return out;
}

at::Tensor relu(const at::Tensor& self) {
  KernelName k("aten::relu");
  auto r = unary(self, {{ NAME }}_UNARY_RELU_KEEP_NAN);
  return r ? *r : run_on_cpu<ATEN_OP(relu)>(self);
}

at::Tensor& relu_(at::Tensor& self) {
  KernelName k("aten::relu_");
  auto r = unary(self, {{ NAME }}_UNARY_RELU_KEEP_NAN);
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

at::Tensor& sigmoid_out(const at::Tensor& self, at::Tensor& out) {
  KernelName k("aten::sigmoid.out");
  auto r = unary(self, {{ NAME }}_UNARY_SIGMOID);
  return r ? store(*r, out) : run_on_cpu<ATEN_OP2(sigmoid, out)>(self, out);
}

at::Tensor& tanh_out(const at::Tensor& self, at::Tensor& out) {
  KernelName k("aten::tanh.out");
  auto r = unary(self, {{ NAME }}_UNARY_TANH);
  return r ? store(*r, out) : run_on_cpu<ATEN_OP2(tanh, out)>(self, out);
}

// The gradient through the forward's output, for same-shaped, same-dtype operands.
std::optional<at::Tensor> unary_grad(const at::Tensor& grad, const at::Tensor& output, {{ p }}_unary_op_t op) {
  if (grad.sizes() != output.sizes() || grad.scalar_type() != output.scalar_type() || !real_dtype(output) ||
      grad.device() != output.device())
    return std::nullopt;
  const c10::DeviceGuard guard(output.device());
  at::Tensor y = dense(output), g = dense(grad);
  if (y.strides() != g.strides()) y = contiguous(y), g = contiguous(g);
  at::Tensor out = empty_device_like(y, y.scalar_type());
  if (out.numel() > 0)
    check({{ p }}_unary_grad(current_stream(), op, device_dtype(output.scalar_type()), y.const_data_ptr(),
                          g.const_data_ptr(), out.data_ptr(), out.numel()),
          "unary_grad");
  return out;
}

at::Tensor& sigmoid_backward_out(const at::Tensor& grad, const at::Tensor& output, at::Tensor& grad_input) {
  KernelName k("aten::sigmoid_backward.grad_input");
  auto r = unary_grad(grad, output, {{ NAME }}_UNARY_SIGMOID);
  return r ? store(*r, grad_input) : run_on_cpu<ATEN_OP2(sigmoid_backward, grad_input)>(grad, output, grad_input);
}

at::Tensor& tanh_backward_out(const at::Tensor& grad, const at::Tensor& output, at::Tensor& grad_input) {
  KernelName k("aten::tanh_backward.grad_input");
  auto r = unary_grad(grad, output, {{ NAME }}_UNARY_TANH);
  return r ? store(*r, grad_input) : run_on_cpu<ATEN_OP2(tanh_backward, grad_input)>(grad, output, grad_input);
}

// grad_input = self <= threshold ? 0 : grad (grad where self is NaN). The device's NaN-keeping
// relu gradient is exactly that for threshold 0 (relu's backward, given its output or input).
at::Tensor threshold_backward(const at::Tensor& grad, const at::Tensor& self, const at::Scalar& threshold) {
  KernelName k("aten::threshold_backward");
  std::optional<at::Tensor> r;
  if (threshold.toDouble() == 0.0) {
    const auto sizes = at::infer_size(grad.sizes(), self.sizes());
    r = unary_grad(grad.expand(sizes), self.expand(sizes), {{ NAME }}_UNARY_RELU_KEEP_NAN);
  }
  return r ? *r : run_on_cpu<ATEN_OP(threshold_backward)>(grad, self, threshold);
}

}  // namespace activation

}  // namespace torch_{{ p }}
