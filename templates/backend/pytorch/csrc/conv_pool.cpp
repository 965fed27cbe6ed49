// Convolution and pooling (device/src/conv_pool_ops.cc): 2-D convolution and its backward,
// max pooling with indices, in float32.
#include <ATen/native/Pool.h>

#include "common.h"

namespace torch_{{ p }} {
namespace conv_pool {

// ---- convolution ----------------------------------------------------------------------
// at::convolution sends PrivateUse1 tensors here. The device implements 2-D, non-transposed
// convolution in float32 (NCHW input, OIHW weight, any groups/stride/padding/dilation).
bool conv_supported(const at::Tensor& input, const at::Tensor& weight, bool transposed) {
  return !transposed && input.dim() == 4 && weight.dim() == 4 && gemm_dtype_device({&input, &weight});
}

{{ p }}_conv2d_params_t conv_params(const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
                                   at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups) {
  auto pick = [](at::IntArrayRef v, size_t i) { return v.size() == 1 ? v[0] : v[i]; };
  {{ p }}_conv2d_params_t p{};
  p.batch = input.size(0), p.in_channels = input.size(1), p.in_h = input.size(2), p.in_w = input.size(3);
  p.out_channels = weight.size(0), p.kernel_h = weight.size(2), p.kernel_w = weight.size(3);
  p.stride_h = pick(stride, 0), p.stride_w = pick(stride, 1);
  p.pad_top = pick(padding, 0), p.pad_left = pick(padding, 1);
  p.dilation_h = pick(dilation, 0), p.dilation_w = pick(dilation, 1);
  p.groups = groups;
  p.out_h = (p.in_h + 2 * p.pad_top - p.dilation_h * (p.kernel_h - 1) - 1) / p.stride_h + 1;
  p.out_w = (p.in_w + 2 * p.pad_left - p.dilation_w * (p.kernel_w - 1) - 1) / p.stride_w + 1;
  TORCH_CHECK(p.in_channels == weight.size(1) * groups, "convolution: input has ", p.in_channels, " channels, weight expects ",
              weight.size(1) * groups);
  TORCH_CHECK(p.out_h > 0 && p.out_w > 0, "convolution: output size is too small (", p.out_h, "x", p.out_w, ")");
  return p;
}

// Convolutions are never left to the boxed CPU fallback: it would call the CPU's
// convolution_overrideable, which does not exist. Cases the device does not implement
// (transposed, 1-D/3-D, other dtypes) and {{ NAME }}_FALLBACK_OPS=convolution.* run
// at::convolution on CPU copies instead, counted like any fallback.
bool conv_on_cpu() {
  static const bool requested = fallback_requested("aten::convolution_overrideable");
  return requested;
}

at::Tensor cpu_copy(const std::optional<at::Tensor>& t) {
  return given(t) ? t->cpu() : at::Tensor();
}

at::Tensor convolution_cpu(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                           at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                           at::IntArrayRef output_padding, int64_t groups) {
  note_cpu_fallback("aten::convolution_overrideable");
  return at::convolution(input.cpu(), weight.cpu(), cpu_copy(bias), stride, padding, dilation, transposed,
                         output_padding, groups)
      .to(input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_cpu(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
  note_cpu_fallback("aten::convolution_backward_overrideable");
  const int64_t channels = transposed ? weight.size(1) * groups : weight.size(0);
  const std::vector<int64_t> bias_sizes{channels};
  auto [dx, dw, db] = at::convolution_backward(
      grad_output.cpu(), input.cpu(), weight.cpu(),
      output_mask[2] ? at::OptionalIntArrayRef(bias_sizes) : at::OptionalIntArrayRef(), stride, padding, dilation,
      transposed, output_padding, groups, output_mask);
  auto back = [&](const at::Tensor& t) { return t.defined() ? t.to(input.device()) : t; };
  return {back(dx), back(dw), back(db)};
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                       at::IntArrayRef output_padding, int64_t groups) {
  KernelName k("aten::convolution_overrideable");
  if (conv_on_cpu() || !conv_supported(input, weight, transposed) ||
      (given(bias) && bias->scalar_type() != input.scalar_type()))
    return convolution_cpu(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  const c10::DeviceGuard guard(input.device());
  const {{ p }}_conv2d_params_t p = conv_params(input, weight, stride, padding, dilation, groups);
  at::Tensor x = contiguous(input), w = contiguous(weight);
  at::Tensor y = empty_device({p.batch, p.out_channels, p.out_h, p.out_w}, input.options());
  if (y.numel() == 0) return y;
  const {{ p }}_dtype_t dtype = device_dtype(input.scalar_type());
  check({{ p }}_conv2d_forward(current_stream(), dtype, &p, x.const_data_ptr(), w.const_data_ptr(), y.data_ptr()),
        "conv2d_forward");
  if (given(bias)) {
    at::Tensor b = contiguous(*bias);
    {{ p }}_shape_t ys = shape_of(y.sizes()), bs = shape_of({p.out_channels, 1, 1});
    check({{ p }}_binary(current_stream(), {{ NAME }}_BINARY_ADD, dtype, y.const_data_ptr(), &ys, b.const_data_ptr(), &bs,
                      y.data_ptr(), &ys),
          "binary");
  }
  return y;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
  KernelName k("aten::convolution_backward_overrideable");
  if (conv_on_cpu() || !conv_supported(input, weight, transposed) || grad_output.scalar_type() != input.scalar_type())
    return convolution_backward_cpu(grad_output, input, weight, stride, padding, dilation, transposed, output_padding,
                                    groups, output_mask);
  const c10::DeviceGuard guard(input.device());
  const {{ p }}_conv2d_params_t p = conv_params(input, weight, stride, padding, dilation, groups);
  at::Tensor x = contiguous(input), w = contiguous(weight), dy = contiguous(grad_output);
  at::Tensor dx, dw, db;
  if (output_mask[0]) dx = empty_device(input.sizes(), input.options());
  if (output_mask[1]) dw = empty_device(weight.sizes(), weight.options());
  if ((output_mask[0] || output_mask[1]) && x.numel() > 0)
    check({{ p }}_conv2d_backward(current_stream(), device_dtype(input.scalar_type()), &p, x.const_data_ptr(),
                               w.const_data_ptr(), dy.const_data_ptr(), output_mask[0] ? dx.data_ptr() : nullptr,
                               output_mask[1] ? dw.data_ptr() : nullptr),
          "conv2d_backward");
  if (output_mask[1] && x.numel() == 0) dw.zero_();
  if (output_mask[2]) db = grad_output.sum({0, 2, 3});
  return {dx, dw, db};
}

// ---- max pooling ----------------------------------------------------------------------
struct PoolArgs {
  {{ p }}_pool2d_params_t p{};
  int64_t dilation_h = 1, dilation_w = 1;
  std::vector<int64_t> out_sizes;
};

PoolArgs pool_args(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride, at::IntArrayRef padding,
                   at::IntArrayRef dilation, bool ceil_mode) {
  auto pick = [](at::IntArrayRef v, size_t i, int64_t dflt) { return v.empty() ? dflt : (v.size() == 1 ? v[0] : v[i]); };
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "max_pool2d: expected 3-D or 4-D input, got ", self.dim(), "-D");
  PoolArgs a;
  const int64_t nb = self.dim() == 4 ? self.size(0) : 1;
  a.p.batch = nb, a.p.channels = self.size(-3), a.p.in_h = self.size(-2), a.p.in_w = self.size(-1);
  a.p.kernel_h = pick(kernel, 0, 1), a.p.kernel_w = pick(kernel, 1, 1);
  a.p.stride_h = pick(stride, 0, a.p.kernel_h), a.p.stride_w = pick(stride, 1, a.p.kernel_w);
  a.p.pad_top = pick(padding, 0, 0), a.p.pad_left = pick(padding, 1, 0);
  a.dilation_h = pick(dilation, 0, 1), a.dilation_w = pick(dilation, 1, 1);
  a.p.is_max = 1;
  a.p.out_h = at::native::pooling_output_shape<int64_t>(a.p.in_h, a.p.kernel_h, a.p.pad_top, a.p.stride_h, a.dilation_h, ceil_mode);
  a.p.out_w = at::native::pooling_output_shape<int64_t>(a.p.in_w, a.p.kernel_w, a.p.pad_left, a.p.stride_w, a.dilation_w, ceil_mode);
  at::native::pool2d_shape_check(self, a.p.kernel_h, a.p.kernel_w, a.p.stride_h, a.p.stride_w, a.p.pad_top, a.p.pad_left,
                                 a.dilation_h, a.dilation_w, a.p.channels, a.p.in_h, a.p.in_w, a.p.out_h, a.p.out_w,
                                 self.suggest_memory_format());
  a.out_sizes = self.sizes().vec();
  a.out_sizes[self.dim() - 2] = a.p.out_h;
  a.out_sizes[self.dim() - 1] = a.p.out_w;
  return a;
}

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                                                           at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  KernelName k("aten::max_pool2d_with_indices");
  if (!real_dtype(self)) return run_on_cpu<ATEN_OP(max_pool2d_with_indices)>(self, kernel, stride, padding, dilation, ceil_mode);
  const c10::DeviceGuard guard(self.device());
  const PoolArgs a = pool_args(self, kernel, stride, padding, dilation, ceil_mode);
  at::Tensor x = contiguous(self);
  at::Tensor y = empty_device(a.out_sizes, self.options());
  at::Tensor idx = empty_device(a.out_sizes, self.options().dtype(at::kLong));
  if (y.numel() > 0)
    check({{ p }}_max_pool2d_with_indices_forward(current_stream(), device_dtype(self.scalar_type()), &a.p, a.dilation_h, a.dilation_w,
                                               x.const_data_ptr(), y.data_ptr(), idx.data_ptr<int64_t>()),
          "max_pool2d_with_indices_forward");
  return {y, idx};
}

at::Tensor max_pool2d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel,
                                            at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                                            bool ceil_mode, const at::Tensor& indices) {
  KernelName k("aten::max_pool2d_with_indices_backward");
  if (!real_dtype(self) || grad_output.scalar_type() != self.scalar_type())
    return run_on_cpu<ATEN_OP(max_pool2d_with_indices_backward)>(grad_output, self, kernel, stride, padding, dilation, ceil_mode, indices);
  const c10::DeviceGuard guard(self.device());
  const PoolArgs a = pool_args(self, kernel, stride, padding, dilation, ceil_mode);
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(a.out_sizes), "max_pool2d backward: grad_output has shape ",
              grad_output.sizes(), ", expected ", at::IntArrayRef(a.out_sizes));
  at::Tensor dy = contiguous(grad_output), idx = contiguous(indices);
  at::Tensor dx = empty_device(self.sizes(), self.options());
  if (dx.numel() > 0)
    check({{ p }}_max_pool2d_with_indices_backward(current_stream(), device_dtype(self.scalar_type()), &a.p, dy.const_data_ptr(),
                                                idx.const_data_ptr<int64_t>(), dx.data_ptr()),
          "max_pool2d_with_indices_backward");
  return dx;
}

}  // namespace conv_pool

}  // namespace torch_{{ p }}
