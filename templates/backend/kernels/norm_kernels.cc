// batch_norm (training and inference, channels-first and channels-last) and
// layer_norm, with their gradients.
#include "kernel_helpers.h"
#include "paddle/phi/kernels/batch_norm_grad_kernel.h"
#include "paddle/phi/kernels/batch_norm_kernel.h"
#include "paddle/phi/kernels/layer_norm_grad_kernel.h"
#include "paddle/phi/kernels/layer_norm_kernel.h"

namespace {{ p }}_kernels {
namespace {

// [outer, channels, inner] view of a batch-norm input. Channels-first layouts
// (NCHW, NCDHW, NCL, AnyLayout) keep channels at axis 1; channels-last (NHWC,
// NDHWC, NLC) at the last axis. A 2-D input is [N, C] either way.
AxisView channel_view(const phi::DDim& dims, const std::string& layout) {
  const bool channels_last = !layout.empty() && layout.back() == 'C' && layout != "NC";
  const bool channels_first = layout == "AnyLayout" || layout.rfind("NC", 0) == 0;
  PADDLE_ENFORCE_EQ(channels_last || channels_first, true,
                    common::errors::InvalidArgument("{{ device_type }}: batch_norm: unknown data_layout %s",
                                                    layout.c_str()));
  if (dims.size() <= 2) return axis_view(dims, 1);
  return axis_view(dims, channels_last ? dims.size() - 1 : 1);
}

template <typename T>
const void* data_or_null(const paddle::optional<phi::DenseTensor>& t) {
  return t ? t->data() : nullptr;
}

template <typename T>
void* alloc_or_null(const Context& ctx, phi::DenseTensor* t) {
  return t ? ctx.template Alloc<T>(t) : nullptr;
}

}  // namespace

// Paddle's modes: batch statistics unless is_test (and not trainable_statistics)
// or use_global_stats; in training the running statistics are updated with
// momentum and saved_mean / saved_variance (the inverse std) feed the gradient.
template <typename T, typename Context>
void BatchNormKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& mean,
                     const phi::DenseTensor& variance, const paddle::optional<phi::DenseTensor>& scale,
                     const paddle::optional<phi::DenseTensor>& bias, bool is_test, float momentum, float epsilon,
                     const std::string& data_layout, bool use_global_stats, bool trainable_statistics,
                     phi::DenseTensor* y, phi::DenseTensor* mean_out, phi::DenseTensor* variance_out,
                     phi::DenseTensor* saved_mean, phi::DenseTensor* saved_variance,
                     phi::DenseTensor* reserve_space) {
  const bool global_stats = (is_test && !trainable_statistics) || use_global_stats;
  const AxisView v = channel_view(x.dims(), data_layout);
  T* out = ctx.template Alloc<T>(y);
  for (phi::DenseTensor* stat : {saved_mean, saved_variance}) {
    if (stat) stat->Resize(common::make_ddim({v.axis}));
  }
  void* sm = alloc_or_null<T>(ctx, saved_mean);
  void* sv = alloc_or_null<T>(ctx, saved_variance);
  if (reserve_space) {
    reserve_space->Resize(common::make_ddim({0}));
    ctx.template Alloc<T>(reserve_space);
  }
  if (global_stats) {
    {{ NAME }}_CHECK({{ p }}_batch_norm_normalize(stream_of(ctx), dtype_of<T>(), x.data(), mean.data(), variance.data(),
                                       data_or_null<T>(scale), data_or_null<T>(bias), epsilon, v.outer, v.axis,
                                       v.inner, out),
          "batch_norm");
    if (mean_out) copy_tensor(ctx, mean, mean_out);  // unchanged (often the same buffer)
    if (variance_out) copy_tensor(ctx, variance, variance_out);
    for (void* stat : {sm, sv}) {
      if (stat) {{ NAME }}_CHECK({{ p }}_fill(stream_of(ctx), dtype_of<T>(), stat, v.axis, 0.0), "batch_norm");
    }
    return;
  }
  // mean_out / variance_out usually share mean's / variance's buffer (Paddle's inplace).
  void* mo = alloc_or_null<T>(ctx, mean_out);
  void* vo = alloc_or_null<T>(ctx, variance_out);
  {{ NAME }}_CHECK({{ p }}_batch_norm_training(stream_of(ctx), dtype_of<T>(), x.data(), data_or_null<T>(scale),
                                    data_or_null<T>(bias), epsilon, momentum, v.outer, v.axis, v.inner, out, sm, sv,
                                    mean.data(), variance.data(), mo, vo),
        "batch_norm");
}
{{ NAME }}_CHECK_SIGNATURE(BatchNormKernel, phi::BatchNormKernel);

template <typename T, typename Context>
void BatchNormGradKernel(const Context& ctx, const phi::DenseTensor& x, const paddle::optional<phi::DenseTensor>& scale,
                         const paddle::optional<phi::DenseTensor>& bias,
                         const paddle::optional<phi::DenseTensor>& mean,
                         const paddle::optional<phi::DenseTensor>& variance, const phi::DenseTensor& saved_mean,
                         const phi::DenseTensor& saved_variance,
                         const paddle::optional<phi::DenseTensor>& reserve_space, const phi::DenseTensor& y_grad,
                         float momentum, float epsilon, const std::string& data_layout, bool is_test,
                         bool use_global_stats, bool trainable_statistics, phi::DenseTensor* x_grad,
                         phi::DenseTensor* scale_grad, phi::DenseTensor* bias_grad) {
  // As Paddle's CPU kernel: the running statistics normalized x when is_test or use_global_stats.
  const bool global_stats = is_test || use_global_stats;
  PADDLE_ENFORCE_EQ(!global_stats || (mean && variance), true,
                    common::errors::InvalidArgument("{{ device_type }}: batch_norm_grad with global statistics "
                                                    "needs the running mean and variance"));
  const AxisView v = channel_view(x.dims(), data_layout);
  for (phi::DenseTensor* g : {scale_grad, bias_grad}) {
    if (g) g->Resize(common::make_ddim({v.axis}));
  }
  void* ds = alloc_or_null<T>(ctx, scale_grad);
  void* db = alloc_or_null<T>(ctx, bias_grad);
  void* dx = alloc_or_null<T>(ctx, x_grad);
  {{ NAME }}_CHECK({{ p }}_batch_norm_backward(stream_of(ctx), dtype_of<T>(), x.data(), y_grad.data(),
                                    global_stats ? mean->data() : saved_mean.data(),
                                    global_stats ? variance->data() : saved_variance.data(), global_stats, epsilon,
                                    data_or_null<T>(scale), v.outer, v.axis, v.inner, dx, ds, db),
        "batch_norm_grad");
}
{{ NAME }}_CHECK_SIGNATURE(BatchNormGradKernel, phi::BatchNormGradKernel);

// x is [rows, cols] split at begin_norm_axis (negative counts from the end).
template <typename T, typename Context>
void LayerNormKernel(const Context& ctx, const phi::DenseTensor& x, const paddle::optional<phi::DenseTensor>& scale,
                     const paddle::optional<phi::DenseTensor>& bias, float epsilon, int begin_norm_axis,
                     phi::DenseTensor* out, phi::DenseTensor* mean, phi::DenseTensor* variance) {
  const auto& d = x.dims();
  const int axis = begin_norm_axis < 0 ? begin_norm_axis + d.size() : begin_norm_axis;
  const auto matrix = common::flatten_to_2d(d, axis);
  T* y = ctx.template Alloc<T>(out);
  for (phi::DenseTensor* stat : {mean, variance}) {
    if (stat) stat->Resize(common::make_ddim({matrix[0]}));
  }
  void* m = alloc_or_null<T>(ctx, mean);
  void* var = alloc_or_null<T>(ctx, variance);
  {{ NAME }}_CHECK({{ p }}_layer_norm_forward(stream_of(ctx), dtype_of<T>(), x.data(), data_or_null<T>(scale),
                                   data_or_null<T>(bias), epsilon, matrix[0], matrix[1], y, m, var),
        "layer_norm");
}
{{ NAME }}_CHECK_SIGNATURE(LayerNormKernel, phi::LayerNormKernel);

template <typename T, typename Context>
void LayerNormGradKernel(const Context& ctx, const phi::DenseTensor& x,
                         const paddle::optional<phi::DenseTensor>& scale,
                         const paddle::optional<phi::DenseTensor>& bias, const phi::DenseTensor& mean,
                         const phi::DenseTensor& variance, const phi::DenseTensor& out_grad, float epsilon,
                         int begin_norm_axis, phi::DenseTensor* x_grad, phi::DenseTensor* scale_grad,
                         phi::DenseTensor* bias_grad) {
  const auto& d = x.dims();
  const int axis = begin_norm_axis < 0 ? begin_norm_axis + d.size() : begin_norm_axis;
  const auto matrix = common::flatten_to_2d(d, axis);
  if (scale_grad && scale) scale_grad->Resize(scale->dims());
  if (bias_grad && bias) bias_grad->Resize(bias->dims());
  void* ds = alloc_or_null<T>(ctx, scale_grad);
  void* db = alloc_or_null<T>(ctx, bias_grad);
  void* dx = alloc_or_null<T>(ctx, x_grad);
  {{ NAME }}_CHECK({{ p }}_layer_norm_backward(stream_of(ctx), dtype_of<T>(), x.data(), out_grad.data(), mean.data(),
                                    variance.data(), data_or_null<T>(scale), epsilon, matrix[0], matrix[1], dx, ds,
                                    db),
        "layer_norm_grad");
}
{{ NAME }}_CHECK_SIGNATURE(LayerNormGradKernel, phi::LayerNormGradKernel);

}  // namespace {{ p }}_kernels

PD_REGISTER_PLUGIN_KERNEL(batch_norm, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::BatchNormKernel, float,
                          double) {}
PD_REGISTER_PLUGIN_KERNEL(batch_norm_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::BatchNormGradKernel,
                          float, double) {}
PD_REGISTER_PLUGIN_KERNEL(layer_norm, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::LayerNormKernel, float,
                          double) {}
PD_REGISTER_PLUGIN_KERNEL(layer_norm_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::LayerNormGradKernel,
                          float, double) {}
