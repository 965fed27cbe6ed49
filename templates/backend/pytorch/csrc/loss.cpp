// Losses (device/src/loss_ops.cc): log-softmax and NLL loss (cross_entropy is log_softmax +
// nll_loss), in float32/float64.
#include <ATen/native/Resize.h>

#include "common.h"

namespace torch_{{ p }} {
namespace loss {

// ---- log-softmax and NLL loss ------------------------------------------------------------
struct AxisView {
  int64_t outer = 1, axis = 1, inner = 1;
};

AxisView axis_view(const at::Tensor& t, int64_t dim) {
  AxisView v;
  if (t.dim() == 0) return v;
  dim = at::maybe_wrap_dim(dim, t.dim());
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (i < dim) v.outer *= t.size(i);
    else if (i == dim) v.axis = t.size(i);
    else v.inner *= t.size(i);
  }
  return v;
}

at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  KernelName k("aten::_log_softmax");
  if (!real_dtype(self) || half_to_float) return run_on_cpu<ATEN_OP(_log_softmax)>(self, dim, half_to_float);
  const c10::DeviceGuard guard(self.device());
  const AxisView v = axis_view(self, dim);
  at::Tensor x = contiguous(self);
  at::Tensor y = empty_device(self.sizes(), self.options());
  if (y.numel() > 0)
    check({{ p }}_log_softmax_forward(current_stream(), device_dtype(self.scalar_type()), x.const_data_ptr(), y.data_ptr(), v.outer,
                                   v.axis, v.inner),
          "log_softmax_forward");
  return y;
}

at::Tensor log_softmax_backward(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim, at::ScalarType input_dtype) {
  KernelName k("aten::_log_softmax_backward_data");
  if (!real_dtype(output) || grad_output.scalar_type() != output.scalar_type() || input_dtype != output.scalar_type())
    return run_on_cpu<ATEN_OP(_log_softmax_backward_data)>(grad_output, output, dim, input_dtype);
  const c10::DeviceGuard guard(output.device());
  const AxisView v = axis_view(output, dim);
  at::Tensor y = contiguous(output), dy = contiguous(grad_output);
  at::Tensor dx = empty_device(output.sizes(), output.options());
  if (dx.numel() > 0)
    check({{ p }}_log_softmax_backward(current_stream(), device_dtype(output.scalar_type()), y.const_data_ptr(), dy.const_data_ptr(),
                                    dx.data_ptr(), v.outer, v.axis, v.inner),
          "log_softmax_backward");
  return dx;
}

// nll_loss takes input [N, C] or [C] and target [N] or [].
bool nll_supported(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight) {
  return real_dtype(self) && target.scalar_type() == at::kLong && (self.dim() == 1 || self.dim() == 2) &&
         (!weight.has_value() || !weight->defined() || weight->scalar_type() == self.scalar_type());
}

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                                    int64_t ignore_index) {
  KernelName k("aten::nll_loss_forward");
  if (!nll_supported(self, target, weight))
    return run_on_cpu<ATEN_OP(nll_loss_forward)>(self, target, weight, reduction, ignore_index);
  const int64_t n = self.dim() == 2 ? self.size(0) : 1, classes = self.size(-1);
  TORCH_CHECK(target.numel() == n, "nll_loss: expected target of ", n, " elements, got shape ", target.sizes());
  const c10::DeviceGuard guard(self.device());
  at::Tensor x = contiguous(self), t = contiguous(target);
  at::Tensor w = given(weight) ? contiguous(*weight) : at::Tensor();
  if (w.defined()) TORCH_CHECK(w.numel() == classes, "nll_loss: weight has ", w.numel(), " elements, expected ", classes);
  at::Tensor loss = reduction == at::Reduction::None && self.dim() == 2 ? empty_device({n}, self.options())
                                                                        : empty_device({}, self.options());
  at::Tensor total_weight = empty_device({}, self.options());
  check({{ p }}_nll_loss_forward(current_stream(), device_dtype(self.scalar_type()), x.const_data_ptr(), t.const_data_ptr<int64_t>(),
                              w.defined() ? w.const_data_ptr() : nullptr, static_cast<{{ p }}_reduction_t>(reduction), ignore_index,
                              n, classes, 1, loss.data_ptr(), total_weight.data_ptr()),
        "nll_loss_forward (a target outside [0, classes)?)");
  return {loss, total_weight};
}

at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight) {
  KernelName k("aten::nll_loss_backward");
  if (!nll_supported(self, target, weight) || grad_output.scalar_type() != self.scalar_type() ||
      total_weight.device() != self.device())
    return run_on_cpu<ATEN_OP(nll_loss_backward)>(grad_output, self, target, weight, reduction, ignore_index, total_weight);
  const int64_t n = self.dim() == 2 ? self.size(0) : 1, classes = self.size(-1);
  const c10::DeviceGuard guard(self.device());
  at::Tensor dy = contiguous(grad_output), t = contiguous(target), tw = contiguous_as(total_weight, self.scalar_type());
  at::Tensor w = given(weight) ? contiguous(*weight) : at::Tensor();
  at::Tensor dx = empty_device(self.sizes(), self.options());
  check({{ p }}_nll_loss_backward(current_stream(), device_dtype(self.scalar_type()), dy.const_data_ptr(), t.const_data_ptr<int64_t>(),
                               w.defined() ? w.const_data_ptr() : nullptr, static_cast<{{ p }}_reduction_t>(reduction), ignore_index,
                               tw.const_data_ptr(), n, classes, 1, dx.data_ptr()),
        "nll_loss_backward");
  return dx;
}

}  // namespace loss

}  // namespace torch_{{ p }}
