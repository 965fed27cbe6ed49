// batch_norm (training and inference, channels-first and channels-last) and
// layer_norm, with their gradients.
#include <type_traits>

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

// Mixed precision: a float16/bfloat16 norm keeps its statistics (and batch norm its scale, bias
// and their gradients) in float32, as Paddle does (the registrations below declare them so), and
// is computed in float32: 16-bit tensors pass through float32 copies on the device, and 16-bit
// outputs are computed in float32 buffers cast into them.
template <typename T>
constexpr bool kHalf = std::is_same<T, phi::dtype::float16>::value || std::is_same<T, phi::dtype::bfloat16>::value;
template <typename T>
using Compute = std::conditional_t<kHalf<T>, float, T>;

bool is_half(phi::DataType dtype) { return dtype == phi::DataType::FLOAT16 || dtype == phi::DataType::BFLOAT16; }

// `t` as the op computes it: itself, or a float32 copy of a 16-bit tensor.
phi::DenseTensor computed(const Context& ctx, const phi::DenseTensor& t) {
  if (!is_half(t.dtype())) return t;  // (shares the buffer)
  phi::DenseTensor f = scratch<float>(ctx, t.dims());
  {{ NAME }}_CHECK({{ p }}_cast(stream_of(ctx), dtype_of(t.dtype()), t.data(), {{ NAME }}_FLOAT32, f.data(), t.numel()),
                   "cast");
  return f;
}

paddle::optional<phi::DenseTensor> computed(const Context& ctx, const paddle::optional<phi::DenseTensor>& t) {
  return t ? paddle::optional<phi::DenseTensor>(computed(ctx, *t)) : paddle::none;
}

// Where the op writes an output of `dtype`: the output itself, or (16-bit) a float32 buffer that
// finish() casts into it. A null output stays null.
class ComputedOutput {
 public:
  ComputedOutput(const Context& ctx, phi::DenseTensor* out, const phi::DDim& dims, phi::DataType dtype)
      : ctx_(ctx), out_(out) {
    if (out == nullptr) return;
    out->Resize(dims);
    ctx.Alloc(out, dtype);
    if (is_half(dtype)) buffer_ = scratch<float>(ctx, dims);
  }
  void* data() { return out_ == nullptr ? nullptr : buffer_.initialized() ? buffer_.data() : out_->data(); }
  void finish() {
    if (out_ == nullptr || !buffer_.initialized()) return;
    {{ NAME }}_CHECK({{ p }}_cast(stream_of(ctx_), {{ NAME }}_FLOAT32, buffer_.data(), dtype_of(out_->dtype()), out_->data(),
                                out_->numel()),
                     "cast");
  }

 private:
  const Context& ctx_;
  phi::DenseTensor* out_;
  phi::DenseTensor buffer_;
};

}  // namespace

// Paddle's modes: batch statistics unless is_test (and not trainable_statistics)
// or use_global_stats; in training the running statistics are updated with
// momentum and saved_mean / saved_variance (the inverse std) feed the gradient.
// A 16-bit x comes with float32 statistics, scale and bias under AMP; each input is taken in
// its own dtype (test-ops passes them all 16-bit) and the running statistics keep theirs.
template <typename T, typename Context>
void BatchNormKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& mean,
                     const phi::DenseTensor& variance, const paddle::optional<phi::DenseTensor>& scale,
                     const paddle::optional<phi::DenseTensor>& bias, bool is_test, float momentum, float epsilon,
                     const std::string& data_layout, bool use_global_stats, bool trainable_statistics,
                     phi::DenseTensor* y, phi::DenseTensor* mean_out, phi::DenseTensor* variance_out,
                     phi::DenseTensor* saved_mean, phi::DenseTensor* saved_variance,
                     phi::DenseTensor* reserve_space) {
  using S = Compute<T>;  // the arithmetic's type, and the saved statistics'
  const bool global_stats = (is_test && !trainable_statistics) || use_global_stats;
  const AxisView v = channel_view(x.dims(), data_layout);
  const phi::DenseTensor xs = computed(ctx, x), ms = computed(ctx, mean), vs = computed(ctx, variance);
  const paddle::optional<phi::DenseTensor> ss = computed(ctx, scale), bs = computed(ctx, bias);
  ComputedOutput out(ctx, y, x.dims(), x.dtype());
  for (phi::DenseTensor* stat : {saved_mean, saved_variance}) {
    if (stat) stat->Resize(common::make_ddim({v.axis}));
  }
  void* sm = alloc_or_null<S>(ctx, saved_mean);
  void* sv = alloc_or_null<S>(ctx, saved_variance);
  if (reserve_space) {
    reserve_space->Resize(common::make_ddim({0}));
    ctx.template Alloc<T>(reserve_space);
  }
  if (global_stats) {
    {{ NAME }}_CHECK({{ p }}_batch_norm_normalize(stream_of(ctx), dtype_of<S>(), xs.data(), ms.data(), vs.data(),
                                       data_or_null<S>(ss), data_or_null<S>(bs), epsilon, v.outer, v.axis, v.inner,
                                       out.data()),
          "batch_norm");
    if (mean_out) copy_tensor(ctx, mean, mean_out);  // unchanged (often the same buffer)
    if (variance_out) copy_tensor(ctx, variance, variance_out);
    for (void* stat : {sm, sv}) {
      if (stat) {{ NAME }}_CHECK({{ p }}_fill(stream_of(ctx), dtype_of<S>(), stat, v.axis, 0.0), "batch_norm");
    }
    out.finish();
    return;
  }
  // mean_out / variance_out usually share mean's / variance's buffer (Paddle's inplace).
  const phi::DDim channels = common::make_ddim({v.axis});
  ComputedOutput mo(ctx, mean_out, channels, mean.dtype()), vo(ctx, variance_out, channels, variance.dtype());
  {{ NAME }}_CHECK({{ p }}_batch_norm_training(stream_of(ctx), dtype_of<S>(), xs.data(), data_or_null<S>(ss),
                                    data_or_null<S>(bs), epsilon, momentum, v.outer, v.axis, v.inner, out.data(), sm,
                                    sv, ms.data(), vs.data(), mo.data(), vo.data()),
        "batch_norm");
  for (ComputedOutput* o : {&out, &mo, &vo}) o->finish();
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
  using S = Compute<T>;
  // As Paddle's CPU kernel: the running statistics normalized x when is_test or use_global_stats.
  const bool global_stats = is_test || use_global_stats;
  PADDLE_ENFORCE_EQ(!global_stats || (mean && variance), true,
                    common::errors::InvalidArgument("{{ device_type }}: batch_norm_grad with global statistics "
                                                    "needs the running mean and variance"));
  const AxisView v = channel_view(x.dims(), data_layout);
  const phi::DDim channels = common::make_ddim({v.axis});
  const phi::DataType param_dtype = scale ? scale->dtype() : bias ? bias->dtype() : phi::CppTypeToDataType<S>::Type();
  ComputedOutput ds(ctx, scale_grad, channels, param_dtype), db(ctx, bias_grad, channels, param_dtype);
  ComputedOutput dx(ctx, x_grad, x.dims(), x.dtype());
  const phi::DenseTensor xs = computed(ctx, x), dys = computed(ctx, y_grad);
  const phi::DenseTensor stat_mean = computed(ctx, global_stats ? *mean : saved_mean);
  const phi::DenseTensor stat = computed(ctx, global_stats ? *variance : saved_variance);
  const paddle::optional<phi::DenseTensor> ss = computed(ctx, scale);
  {{ NAME }}_CHECK({{ p }}_batch_norm_backward(stream_of(ctx), dtype_of<S>(), xs.data(), dys.data(), stat_mean.data(),
                                    stat.data(), global_stats, epsilon, data_or_null<S>(ss), v.outer, v.axis, v.inner,
                                    dx.data(), ds.data(), db.data()),
        "batch_norm_grad");
  for (ComputedOutput* o : {&dx, &ds, &db}) o->finish();
}
{{ NAME }}_CHECK_SIGNATURE(BatchNormGradKernel, phi::BatchNormGradKernel);

// x is [rows, cols] split at begin_norm_axis (negative counts from the end). A 16-bit x may
// come with float32 scale and bias (Paddle's AMP keeps norm parameters in float32) or 16-bit ones.
template <typename T, typename Context>
void LayerNormKernel(const Context& ctx, const phi::DenseTensor& x, const paddle::optional<phi::DenseTensor>& scale,
                     const paddle::optional<phi::DenseTensor>& bias, float epsilon, int begin_norm_axis,
                     phi::DenseTensor* out, phi::DenseTensor* mean, phi::DenseTensor* variance) {
  using S = Compute<T>;
  const auto& d = x.dims();
  const int axis = begin_norm_axis < 0 ? begin_norm_axis + d.size() : begin_norm_axis;
  const auto matrix = common::flatten_to_2d(d, axis);
  const phi::DenseTensor xs = computed(ctx, x);
  const paddle::optional<phi::DenseTensor> ss = computed(ctx, scale), bs = computed(ctx, bias);
  ComputedOutput y(ctx, out, d, x.dtype());
  for (phi::DenseTensor* stat : {mean, variance}) {
    if (stat) stat->Resize(common::make_ddim({matrix[0]}));
  }
  void* m = alloc_or_null<S>(ctx, mean);
  void* var = alloc_or_null<S>(ctx, variance);
  {{ NAME }}_CHECK({{ p }}_layer_norm_forward(stream_of(ctx), dtype_of<S>(), xs.data(), data_or_null<S>(ss),
                                   data_or_null<S>(bs), epsilon, matrix[0], matrix[1], y.data(), m, var),
        "layer_norm");
  y.finish();
}
{{ NAME }}_CHECK_SIGNATURE(LayerNormKernel, phi::LayerNormKernel);

template <typename T, typename Context>
void LayerNormGradKernel(const Context& ctx, const phi::DenseTensor& x,
                         const paddle::optional<phi::DenseTensor>& scale,
                         const paddle::optional<phi::DenseTensor>& bias, const phi::DenseTensor& mean,
                         const phi::DenseTensor& variance, const phi::DenseTensor& out_grad, float epsilon,
                         int begin_norm_axis, phi::DenseTensor* x_grad, phi::DenseTensor* scale_grad,
                         phi::DenseTensor* bias_grad) {
  using S = Compute<T>;
  const auto& d = x.dims();
  const int axis = begin_norm_axis < 0 ? begin_norm_axis + d.size() : begin_norm_axis;
  const auto matrix = common::flatten_to_2d(d, axis);
  const phi::DataType param_dtype = scale ? scale->dtype() : bias ? bias->dtype() : phi::CppTypeToDataType<S>::Type();
  ComputedOutput ds(ctx, scale && scale_grad ? scale_grad : nullptr, scale ? scale->dims() : d, param_dtype);
  ComputedOutput db(ctx, bias && bias_grad ? bias_grad : nullptr, bias ? bias->dims() : d, param_dtype);
  ComputedOutput dx(ctx, x_grad, d, x.dtype());
  const phi::DenseTensor xs = computed(ctx, x), dys = computed(ctx, out_grad);
  const phi::DenseTensor ms = computed(ctx, mean), vs = computed(ctx, variance);
  const paddle::optional<phi::DenseTensor> ss = computed(ctx, scale);
  {{ NAME }}_CHECK({{ p }}_layer_norm_backward(stream_of(ctx), dtype_of<S>(), xs.data(), dys.data(), ms.data(),
                                    vs.data(), data_or_null<S>(ss), epsilon, matrix[0], matrix[1], dx.data(),
                                    ds.data(), db.data()),
        "layer_norm_grad");
  for (ComputedOutput* o : {&dx, &ds, &db}) o->finish();
}
{{ NAME }}_CHECK_SIGNATURE(LayerNormGradKernel, phi::LayerNormGradKernel);

}  // namespace {{ p }}_kernels

// float16/bfloat16: mean, variance, scale and bias (inputs 1-4), the running and saved
// statistics (outputs 1-4) and the gradients of scale and bias are float32, as Paddle keeps them.
PD_REGISTER_PLUGIN_KERNEL(batch_norm, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::BatchNormKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {
  if (kernel_key.dtype() == phi::DataType::FLOAT16 || kernel_key.dtype() == phi::DataType::BFLOAT16) {
    for (size_t i : {1, 2, 3, 4}) kernel->InputAt(i).SetDataType(phi::DataType::FLOAT32);
    for (size_t i : {1, 2, 3, 4}) kernel->OutputAt(i).SetDataType(phi::DataType::FLOAT32);
  }
}
PD_REGISTER_PLUGIN_KERNEL(batch_norm_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::BatchNormGradKernel,
                          float, double {{ NAME }}_AND_HALF_TYPES) {
  if (kernel_key.dtype() == phi::DataType::FLOAT16 || kernel_key.dtype() == phi::DataType::BFLOAT16) {
    for (size_t i : {1, 2, 3, 4, 5, 6}) kernel->InputAt(i).SetDataType(phi::DataType::FLOAT32);
    for (size_t i : {1, 2}) kernel->OutputAt(i).SetDataType(phi::DataType::FLOAT32);
  }
}
// float16/bfloat16: mean and variance are float32; scale and bias may be either (their dtype
// is the kernel's choice: UNDEFINED), and so are their gradients.
PD_REGISTER_PLUGIN_KERNEL(layer_norm, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::LayerNormKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {
  if (kernel_key.dtype() == phi::DataType::FLOAT16 || kernel_key.dtype() == phi::DataType::BFLOAT16) {
    for (size_t i : {1, 2}) kernel->InputAt(i).SetDataType(phi::DataType::UNDEFINED);
    for (size_t i : {1, 2}) kernel->OutputAt(i).SetDataType(phi::DataType::FLOAT32);
  }
}
PD_REGISTER_PLUGIN_KERNEL(layer_norm_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::LayerNormGradKernel,
                          float, double {{ NAME }}_AND_HALF_TYPES) {
  if (kernel_key.dtype() == phi::DataType::FLOAT16 || kernel_key.dtype() == phi::DataType::BFLOAT16) {
    for (size_t i : {1, 2}) kernel->InputAt(i).SetDataType(phi::DataType::UNDEFINED);
    for (size_t i : {3, 4}) kernel->InputAt(i).SetDataType(phi::DataType::FLOAT32);
    for (size_t i : {1, 2}) kernel->OutputAt(i).SetDataType(phi::DataType::UNDEFINED);
  }
}
