// gelu, dropout, embedding and gather, with their gradients.
#include "kernel_helpers.h"
#include "paddle/phi/kernels/dropout_grad_kernel.h"
#include "paddle/phi/kernels/dropout_kernel.h"
#include "paddle/phi/kernels/embedding_grad_kernel.h"
#include "paddle/phi/kernels/embedding_kernel.h"
#include "paddle/phi/kernels/gather_grad_kernel.h"
#include "paddle/phi/kernels/gather_kernel.h"
#include "paddle/phi/kernels/gelu_grad_kernel.h"
#include "paddle/phi/kernels/gelu_kernel.h"

namespace {{ p }}_kernels {
namespace {

{{ p }}_dtype_t index_dtype_of(const phi::DenseTensor& index, const char* op) {
  PADDLE_ENFORCE_EQ(index.dtype() == phi::DataType::INT32 || index.dtype() == phi::DataType::INT64, true,
                    common::errors::InvalidArgument("{{ device_type }}: %s indices must be int32 or int64, got %s",
                                                    op, phi::DataTypeToString(index.dtype())));
  return dtype_of(index.dtype());
}

// An int32 scalar that may live on the device or on the host (dropout's Seed tensor).
int read_int(const phi::DenseTensor& t) {
  int value = 0;
  if (t.place().GetType() == phi::AllocationType::CUSTOM) {
    {{ NAME }}_CHECK({{ p }}_memcpy(&value, t.data(), sizeof(int), {{ NAME }}_COPY_DEVICE_TO_HOST), "dropout");
  } else {
    value = *t.data<int>();
  }
  return value;
}

}  // namespace

template <typename T, typename Context>
void GeluKernel(const Context& ctx, const phi::DenseTensor& x, bool approximate, phi::DenseTensor* out) {
  T* o = ctx.template Alloc<T>(out);
  {{ NAME }}_CHECK({{ p }}_gelu_forward(stream_of(ctx), dtype_of<T>(), x.data(), o, x.numel(), approximate), "gelu");
}
{{ NAME }}_CHECK_SIGNATURE(GeluKernel, phi::GeluKernel);

template <typename T, typename Context>
void GeluGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& out_grad, bool approximate,
                    phi::DenseTensor* x_grad) {
  T* dx = ctx.template Alloc<T>(x_grad);
  {{ NAME }}_CHECK({{ p }}_gelu_backward(stream_of(ctx), dtype_of<T>(), x.data(), out_grad.data(), dx, x.numel(), approximate),
        "gelu_grad");
}
{{ NAME }}_CHECK_SIGNATURE(GeluGradKernel, phi::GeluGradKernel);

// Paddle's dropout modes: upscale_in_train (kept values scaled by 1/(1-p) in training,
// identity at test time) and downgrade_in_infer (kept values unscaled in training,
// scaled by 1-p at test time). A Seed tensor or fix_seed gives a deterministic mask:
// the device draws it from std::mt19937_64(seed), the stream of Paddle's CPU kernel,
// so a fixed-seed dropout masks the same elements on {{ device_type }} and CPU. Otherwise the
// seed comes from the device generator (paddle.seed) and the counter-based stream.
template <typename T, typename Context>
void DropoutRawKernel(const Context& ctx, const phi::DenseTensor& x,
                      const paddle::optional<phi::DenseTensor>& seed_tensor, const phi::Scalar& p, bool is_test,
                      const std::string& mode, int seed, bool fix_seed, phi::DenseTensor* out,
                      phi::DenseTensor* mask) {
  PADDLE_ENFORCE_EQ(mode == "upscale_in_train" || mode == "downgrade_in_infer", true,
                    common::errors::InvalidArgument("{{ device_type }}: unknown dropout mode %s", mode.c_str()));
  const bool upscale = mode == "upscale_in_train";
  const float prob = p.to<float>();
  T* y = ctx.template Alloc<T>(out);
  if (is_test || !mask) {
    {{ NAME }}_CHECK({{ p }}_scale(stream_of(ctx), dtype_of<T>(), x.data(), y, x.numel(), upscale ? 1.0 : 1.0 - prob, 0.0, 1),
          "dropout");
    return;
  }
  mask->Resize(x.dims());
  uint8_t* m = ctx.template Alloc<uint8_t>(mask);
  const int fixed = seed_tensor ? read_int(*seed_tensor) : (fix_seed ? seed : 0);
  if (fixed != 0) {
    {{ NAME }}_CHECK({{ p }}_dropout_mask(stream_of(ctx), m, x.numel(), prob, static_cast<uint64_t>(static_cast<int64_t>(fixed)),
                               {{ NAME }}_RNG_MT19937_64),
          "dropout");
  } else {
    {{ NAME }}_CHECK({{ p }}_dropout_mask(stream_of(ctx), m, x.numel(), prob, generator_seed(ctx),
                               {{ NAME }}_RNG_COUNTER),
          "dropout");
  }
  const double keep_scale = !upscale ? 1.0 : (prob >= 1.f ? 0.0 : 1.0 / (1.0 - prob));
  {{ NAME }}_CHECK({{ p }}_masked_scale(stream_of(ctx), dtype_of<T>(), x.data(), m, x.numel(), keep_scale, y), "dropout");
}
{{ NAME }}_CHECK_SIGNATURE(DropoutRawKernel, phi::DropoutRawKernel);

template <typename T, typename Context>
void DropoutGradRawKernel(const Context& ctx, const phi::DenseTensor& mask, const phi::DenseTensor& out_grad,
                          const phi::Scalar& p, bool is_test, const std::string& mode, phi::DenseTensor* x_grad) {
  PADDLE_ENFORCE_EQ(mode == "upscale_in_train" || mode == "downgrade_in_infer", true,
                    common::errors::InvalidArgument("{{ device_type }}: unknown dropout mode %s", mode.c_str()));
  const bool upscale = mode == "upscale_in_train";
  const float prob = p.to<float>();
  x_grad->Resize(out_grad.dims());
  T* dx = ctx.template Alloc<T>(x_grad);
  if (is_test) {
    {{ NAME }}_CHECK({{ p }}_scale(stream_of(ctx), dtype_of<T>(), out_grad.data(), dx, out_grad.numel(),
                        upscale ? 1.0 : 1.0 - prob, 0.0, 1),
          "dropout_grad");
    return;
  }
  const double keep_scale = !upscale ? 1.0 : (prob >= 1.f ? 0.0 : 1.0 / (1.0 - prob));
  {{ NAME }}_CHECK({{ p }}_masked_scale(stream_of(ctx), dtype_of<T>(), out_grad.data(), mask.data<uint8_t>(), out_grad.numel(),
                             keep_scale, dx),
        "dropout_grad");
}
{{ NAME }}_CHECK_SIGNATURE(DropoutGradRawKernel, phi::DropoutGradRawKernel);

// padding_idx: rows looked up with that id are zeros and get no gradient (-1: none).
template <typename T, typename Context>
void EmbeddingKernel(const Context& ctx, const phi::DenseTensor& inputx, const phi::DenseTensor& weight,
                     int64_t padding_idx, phi::DenseTensor* out) {
  T* o = ctx.template Alloc<T>(out);
  const int64_t rows = weight.dims()[0], width = weight.numel() / std::max<int64_t>(rows, 1);
  {{ NAME }}_CHECK({{ p }}_gather(stream_of(ctx), dtype_of<T>(), weight.data(), 1, rows, width,
                       index_dtype_of(inputx, "embedding"), inputx.data(), inputx.numel(), padding_idx, o),
        "embedding");
}
{{ NAME }}_CHECK_SIGNATURE(EmbeddingKernel, phi::EmbeddingKernel);

template <typename T, typename Context>
void EmbeddingGradKernel(const Context& ctx, const phi::DenseTensor& input, const phi::DenseTensor& weight,
                         const phi::DenseTensor& out_grad, int64_t padding_idx, phi::DenseTensor* weight_grad) {
  weight_grad->Resize(weight.dims());
  T* dw = ctx.template Alloc<T>(weight_grad);
  const int64_t rows = weight.dims()[0], width = weight.numel() / std::max<int64_t>(rows, 1);
  {{ NAME }}_CHECK({{ p }}_gather_backward(stream_of(ctx), dtype_of<T>(), out_grad.data(), 1, rows, width,
                                index_dtype_of(input, "embedding_grad"), input.data(), input.numel(), padding_idx,
                                dw),
        "embedding_grad");
}
{{ NAME }}_CHECK_SIGNATURE(EmbeddingGradKernel, phi::EmbeddingGradKernel);

// out = x's slices at `index` along `axis` (negative counts from the end).
template <typename T, typename Context>
void GatherKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& index,
                  const phi::Scalar& axis, phi::DenseTensor* out) {
  T* o = ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  const AxisView v = axis_view(x.dims(), axis.to<int>());
  {{ NAME }}_CHECK({{ p }}_gather(stream_of(ctx), dtype_of<T>(), x.data(), v.outer, v.axis, v.inner,
                       index_dtype_of(index, "gather"), index.data(), index.numel(), -1, o),
        "gather");
}
{{ NAME }}_CHECK_SIGNATURE(GatherKernel, phi::GatherKernel);

template <typename T, typename Context>
void GatherGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& index,
                      const phi::DenseTensor& out_grad, const phi::Scalar& axis, phi::DenseTensor* x_grad) {
  x_grad->Resize(x.dims());
  T* dx = ctx.template Alloc<T>(x_grad);
  if (x_grad->numel() == 0) return;
  const AxisView v = axis_view(x.dims(), axis.to<int>());
  {{ NAME }}_CHECK({{ p }}_gather_backward(stream_of(ctx), dtype_of<T>(), out_grad.data(), v.outer, v.axis, v.inner,
                                index_dtype_of(index, "gather_grad"), index.data(), index.numel(), -1, dx),
        "gather_grad");
}
{{ NAME }}_CHECK_SIGNATURE(GatherGradKernel, phi::GatherGradKernel);

}  // namespace {{ p }}_kernels

PD_REGISTER_PLUGIN_KERNEL(gelu, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::GeluKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(gelu_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::GeluGradKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(dropout, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::DropoutRawKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {
  kernel->InputAt(1).SetBackend(phi::Backend::ALL_BACKEND);  // the Seed tensor may stay on the host
  kernel->OutputAt(1).SetDataType(phi::DataType::UINT8);
}
PD_REGISTER_PLUGIN_KERNEL(dropout_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::DropoutGradRawKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(embedding, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::EmbeddingKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(embedding_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::EmbeddingGradKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(gather, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::GatherKernel, float, double,
                          int32_t, int64_t {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(gather_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::GatherGradKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {}
