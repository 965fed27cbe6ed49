// batch_norm for inference (running statistics), NCHW.
#include "kernel_helpers.h"
#include "paddle/phi/kernels/batch_norm_kernel.h"

namespace {{ p }}_kernels {
namespace {

void batch_norm(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& mean,
                const phi::DenseTensor& variance, const float* scale, const float* bias, float epsilon,
                const std::string& data_layout, phi::DenseTensor* y) {
  PADDLE_ENFORCE_EQ(data_layout == "NCHW" || data_layout == "AnyLayout", true,
                    common::errors::Unimplemented("{{ device_type }}: batch_norm supports NCHW only, got %s",
                                                  data_layout.c_str()));
  float* out = ctx.template Alloc<float>(y);
  const auto& d = x.dims();
  const int64_t batch = d[0], channels = d.size() > 1 ? d[1] : 1;
  const int64_t spatial = batch * channels > 0 ? x.numel() / (batch * channels) : 0;
  check({{ p }}_batch_norm_inference(stream_of(ctx), x.data<float>(), mean.data<float>(), variance.data<float>(),
                                     scale, bias, epsilon, batch, channels, spatial, out),
        "batch_norm");
}

// Statistics outputs of an inference batch norm: the running values, unchanged.
void pass_through(const Context& ctx, const phi::DenseTensor& src, phi::DenseTensor* dst) {
  if (dst) copy_tensor(ctx, src, dst);
}

}  // namespace

template <typename T, typename Context>
void BatchNormKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& mean,
                     const phi::DenseTensor& variance, const paddle::optional<phi::DenseTensor>& scale,
                     const paddle::optional<phi::DenseTensor>& bias, bool is_test, float momentum, float epsilon,
                     const std::string& data_layout, bool use_global_stats, bool trainable_statistics,
                     phi::DenseTensor* y, phi::DenseTensor* mean_out, phi::DenseTensor* variance_out,
                     phi::DenseTensor* saved_mean, phi::DenseTensor* saved_variance,
                     phi::DenseTensor* reserve_space) {
  PADDLE_ENFORCE_EQ(is_test || use_global_stats, true,
                    common::errors::Unimplemented("{{ device_type }}: batch_norm is implemented for inference "
                                                  "(is_test or use_global_stats); training mode is not"));
  batch_norm(ctx, x, mean, variance, scale ? scale->data<float>() : nullptr, bias ? bias->data<float>() : nullptr,
             epsilon, data_layout, y);
  pass_through(ctx, mean, mean_out);
  pass_through(ctx, variance, variance_out);
  for (phi::DenseTensor* unused : {saved_mean, saved_variance}) {
    if (unused) {
      unused->Resize(mean.dims());
      check({{ p }}_fill(stream_of(ctx), {{ NAME }}_FLOAT32, ctx.template Alloc<float>(unused), unused->numel(), 0.0),
            "batch_norm");
    }
  }
  if (reserve_space) {
    reserve_space->Resize(common::make_ddim({0}));
    ctx.template Alloc<float>(reserve_space);
  }
}
{{ NAME }}_CHECK_SIGNATURE(BatchNormKernel, phi::BatchNormKernel);

}  // namespace {{ p }}_kernels

PD_REGISTER_PLUGIN_KERNEL(batch_norm, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::BatchNormKernel, float) {}
