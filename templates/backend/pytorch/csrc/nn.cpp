// Neural-network kernels: matrix products (mm, addmm, bmm), 2-D convolution and its
// backward, max pooling with indices, log-softmax and NLL loss (cross_entropy is
// log_softmax + nll_loss). Float32 (gemm, convolution) or float32/float64 (the rest);
// other dtypes take the CPU from inside the kernel.
#include <ATen/native/Pool.h>
#include <ATen/native/Resize.h>

#include "common.h"

namespace torch_{{ p }} {
namespace {

// ---- matrix products ------------------------------------------------------------------
// A 2-D operand for gemm: row-major with leading dimension `ld`, or the transpose of one
// (a .t() view costs no copy); anything else is made contiguous first.
struct GemmOperand {
  at::Tensor t;
  bool trans = false;
  int64_t ld = 0;
};

GemmOperand gemm_operand(const at::Tensor& m) {
  const int64_t rows = m.size(0), cols = m.size(1);
  if (m.stride(1) == 1 && m.stride(0) >= std::max<int64_t>(1, cols)) return {m, false, m.stride(0)};
  if (m.stride(0) == 1 && m.stride(1) >= std::max<int64_t>(1, rows)) return {m, true, m.stride(1)};
  at::Tensor c = contiguous(m);
  return {c, false, std::max<int64_t>(1, cols)};
}

// out[M,N] (contiguous, float32) = alpha * a @ b + beta * out
void gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out, double alpha, double beta) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: out = beta * out
    check({{ p }}_scale(current_stream(), {{ NAME }}_FLOAT32, out.const_data_ptr(), out.data_ptr(), out.numel(), beta, 0, 1), "scale");
    return;
  }
  GemmOperand A = gemm_operand(a), B = gemm_operand(b);
  check({{ p }}_gemm(current_stream(), A.trans, B.trans, m, n, k, static_cast<float>(alpha), A.t.const_data_ptr<float>(), A.ld,
                  B.t.const_data_ptr<float>(), B.ld, static_cast<float>(beta), out.data_ptr<float>(), n),
        "gemm");
}

bool float32_device(std::initializer_list<const at::Tensor*> ts) {
  for (const at::Tensor* t : ts)
    if (t->scalar_type() != at::kFloat || t->device().type() != c10::DeviceType::PrivateUse1) return false;
  return true;
}

at::Tensor mm_device(const at::Tensor& self, const at::Tensor& mat2) {
  TORCH_CHECK(self.dim() == 2 && mat2.dim() == 2, "mm: both arguments must be 2-D, got ", self.dim(), "-D and ", mat2.dim(), "-D");
  TORCH_CHECK(self.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", self.size(0), "x", self.size(1),
              " and ", mat2.size(0), "x", mat2.size(1), ")");
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = empty_device({self.size(0), mat2.size(1)}, self.options());
  if (self.size(1) == 0) return out.zero_();
  gemm(self, mat2, out, 1.0, 0.0);
  return out;
}

at::Tensor mm(const at::Tensor& self, const at::Tensor& mat2) {
  KernelName k("aten::mm");
  if (!float32_device({&self, &mat2})) return run_on_cpu<ATEN_OP(mm)>(self, mat2);
  return mm_device(self, mat2);
}

at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  KernelName k("aten::mm.out");
  if (!float32_device({&self, &mat2, &out})) return run_on_cpu<ATEN_OP2(mm, out)>(self, mat2, out);
  return store(mm_device(self, mat2), out);
}

at::Tensor addmm_device(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                        const at::Scalar& alpha) {
  TORCH_CHECK(mat1.dim() == 2 && mat2.dim() == 2, "addmm: mat1 and mat2 must be 2-D");
  TORCH_CHECK(mat1.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", mat1.size(0), "x", mat1.size(1),
              " and ", mat2.size(0), "x", mat2.size(1), ")");
  const c10::DeviceGuard guard(mat1.device());
  const std::vector<int64_t> sizes{mat1.size(0), mat2.size(1)};
  at::Tensor out = empty_device(sizes, mat1.options());
  if (out.numel() == 0) return out;
  const double b = beta.toDouble();
  if (b == 0.0) {  // self is ignored, NaNs included (as in PyTorch)
    out.zero_();
  } else {
    at::Tensor s = contiguous(self);
    {{ p }}_shape_t ss = shape_of(s.sizes()), os = shape_of(sizes);
    check({{ p }}_broadcast(current_stream(), {{ NAME }}_FLOAT32, s.const_data_ptr(), &ss, out.data_ptr(), &os), "broadcast");
  }
  gemm(mat1, mat2, out, alpha.toDouble(), b);
  return out;
}

at::Tensor addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  KernelName k("aten::addmm");
  if (!float32_device({&self, &mat1, &mat2})) return run_on_cpu<ATEN_OP(addmm)>(self, mat1, mat2, beta, alpha);
  return addmm_device(self, mat1, mat2, beta, alpha);
}

at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                      const at::Scalar& alpha, at::Tensor& out) {
  KernelName k("aten::addmm.out");
  if (!float32_device({&self, &mat1, &mat2, &out})) return run_on_cpu<ATEN_OP2(addmm, out)>(self, mat1, mat2, beta, alpha, out);
  return store(addmm_device(self, mat1, mat2, beta, alpha), out);
}

at::Tensor bmm_device(const at::Tensor& self, const at::Tensor& mat2) {
  TORCH_CHECK(self.dim() == 3 && mat2.dim() == 3, "bmm: both arguments must be 3-D");
  TORCH_CHECK(self.size(0) == mat2.size(0) && self.size(2) == mat2.size(1), "bmm: shapes cannot be multiplied (",
              self.sizes(), " and ", mat2.sizes(), ")");
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = empty_device({self.size(0), self.size(1), mat2.size(2)}, self.options());
  if (out.numel() == 0) return out;
  if (self.size(2) == 0) return out.zero_();
  for (int64_t i = 0; i < self.size(0); ++i) gemm(self[i], mat2[i], out[i], 1.0, 0.0);  // one launch per matrix
  return out;
}

at::Tensor bmm(const at::Tensor& self, const at::Tensor& mat2) {
  KernelName k("aten::bmm");
  if (!float32_device({&self, &mat2})) return run_on_cpu<ATEN_OP(bmm)>(self, mat2);
  return bmm_device(self, mat2);
}

at::Tensor& bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  KernelName k("aten::bmm.out");
  if (!float32_device({&self, &mat2, &out})) return run_on_cpu<ATEN_OP2(bmm, out)>(self, mat2, out);
  return store(bmm_device(self, mat2), out);
}

// ---- convolution ----------------------------------------------------------------------
// at::convolution sends PrivateUse1 tensors here. The device implements 2-D, non-transposed
// convolution in float32 (NCHW input, OIHW weight, any groups/stride/padding/dilation).
bool conv_supported(const at::Tensor& input, const at::Tensor& weight, bool transposed) {
  return !transposed && input.dim() == 4 && weight.dim() == 4 && float32_device({&input, &weight});
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
  return t.has_value() && t->defined() ? t->cpu() : at::Tensor();
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
      (bias.has_value() && bias->defined() && bias->scalar_type() != at::kFloat))
    return convolution_cpu(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  const c10::DeviceGuard guard(input.device());
  const {{ p }}_conv2d_params_t p = conv_params(input, weight, stride, padding, dilation, groups);
  at::Tensor x = contiguous(input), w = contiguous(weight);
  at::Tensor y = empty_device({p.batch, p.out_channels, p.out_h, p.out_w}, input.options());
  if (y.numel() == 0) return y;
  check({{ p }}_conv2d_forward(current_stream(), &p, x.const_data_ptr<float>(), w.const_data_ptr<float>(), y.data_ptr<float>()),
        "conv2d_forward");
  if (bias.has_value() && bias->defined()) {
    at::Tensor b = contiguous(*bias);
    {{ p }}_shape_t ys = shape_of(y.sizes()), bs = shape_of({p.out_channels, 1, 1});
    check({{ p }}_binary(current_stream(), {{ NAME }}_BINARY_ADD, {{ NAME }}_FLOAT32, y.const_data_ptr(), &ys, b.const_data_ptr(), &bs,
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
  if (conv_on_cpu() || !conv_supported(input, weight, transposed) || grad_output.scalar_type() != at::kFloat)
    return convolution_backward_cpu(grad_output, input, weight, stride, padding, dilation, transposed, output_padding,
                                    groups, output_mask);
  const c10::DeviceGuard guard(input.device());
  const {{ p }}_conv2d_params_t p = conv_params(input, weight, stride, padding, dilation, groups);
  at::Tensor x = contiguous(input), w = contiguous(weight), dy = contiguous(grad_output);
  at::Tensor dx, dw, db;
  if (output_mask[0]) dx = empty_device(input.sizes(), input.options());
  if (output_mask[1]) dw = empty_device(weight.sizes(), weight.options());
  if ((output_mask[0] || output_mask[1]) && x.numel() > 0)
    check({{ p }}_conv2d_backward(current_stream(), &p, x.const_data_ptr<float>(), w.const_data_ptr<float>(),
                               dy.const_data_ptr<float>(), output_mask[0] ? dx.data_ptr<float>() : nullptr,
                               output_mask[1] ? dw.data_ptr<float>() : nullptr),
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

bool pool_supported(const at::Tensor& t) { return t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble; }

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                                                           at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  KernelName k("aten::max_pool2d_with_indices");
  if (!pool_supported(self)) return run_on_cpu<ATEN_OP(max_pool2d_with_indices)>(self, kernel, stride, padding, dilation, ceil_mode);
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
  if (!pool_supported(self) || grad_output.scalar_type() != self.scalar_type())
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
  if (!pool_supported(self) || half_to_float) return run_on_cpu<ATEN_OP(_log_softmax)>(self, dim, half_to_float);
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
  if (!pool_supported(output) || grad_output.scalar_type() != output.scalar_type() || input_dtype != output.scalar_type())
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
  return pool_supported(self) && target.scalar_type() == at::kLong && (self.dim() == 1 || self.dim() == 2) &&
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
  at::Tensor w = weight.has_value() && weight->defined() ? contiguous(*weight) : at::Tensor();
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
  at::Tensor w = weight.has_value() && weight->defined() ? contiguous(*weight) : at::Tensor();
  at::Tensor dx = empty_device(self.sizes(), self.options());
  check({{ p }}_nll_loss_backward(current_stream(), device_dtype(self.scalar_type()), dy.const_data_ptr(), t.const_data_ptr<int64_t>(),
                               w.defined() ? w.const_data_ptr() : nullptr, static_cast<{{ p }}_reduction_t>(reduction), ignore_index,
                               tw.const_data_ptr(), n, classes, 1, dx.data_ptr()),
        "nll_loss_backward");
  return dx;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  Kernels(m)
      .impl("mm", TORCH_FN(mm)).impl("mm.out", TORCH_FN(mm_out))
      .impl("addmm", TORCH_FN(addmm)).impl("addmm.out", TORCH_FN(addmm_out))
      .impl("bmm", TORCH_FN(bmm)).impl("bmm.out", TORCH_FN(bmm_out))
      .impl("max_pool2d_with_indices", TORCH_FN(max_pool2d_with_indices))
      .impl("max_pool2d_with_indices_backward", TORCH_FN(max_pool2d_with_indices_backward))
      .impl("_log_softmax", TORCH_FN(log_softmax))
      .impl("_log_softmax_backward_data", TORCH_FN(log_softmax_backward))
      .impl("nll_loss_forward", TORCH_FN(nll_loss_forward))
      .impl("nll_loss_backward", TORCH_FN(nll_loss_backward));
  // Registered whatever {{ NAME }}_FALLBACK_OPS says (see conv_on_cpu).
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward));
}

}  // namespace torch_{{ p }}
