// Optimizer updates: sgd (dense float32 parameters) and adam (float32, or float16/bfloat16
// parameters with float32 state and master weights: mixed precision).
#include "kernel_helpers.h"
#include "paddle/phi/kernels/adam_kernel.h"
#include "paddle/phi/kernels/sgd_kernel.h"

namespace {{ p }}_kernels {

template <typename T, typename Context>
void SGDDenseKernel(const Context& ctx, const phi::DenseTensor& param, const phi::DenseTensor& learning_rate,
                    const phi::DenseTensor& grad, const paddle::optional<phi::DenseTensor>& master_param,
                    bool multi_precision, phi::DenseTensor* param_out, phi::DenseTensor* master_param_out) {
  T* out = ctx.template Alloc<T>(param_out);
  {{ NAME }}_CHECK({{ p }}_sgd_update(stream_of(ctx), param.data<T>(), grad.data<T>(), learning_rate.data<T>(), out,
                           param.numel()),
        "sgd");
}
{{ NAME }}_CHECK_SIGNATURE(SGDDenseKernel, phi::SGDDenseKernel);

template <typename T, typename Context>
void AdamDenseKernel(const Context& ctx, const phi::DenseTensor& param, const phi::DenseTensor& grad,
                     const phi::DenseTensor& learning_rate, const phi::DenseTensor& moment1,
                     const phi::DenseTensor& moment2, const paddle::optional<phi::DenseTensor>& moment2_max,
                     const phi::DenseTensor& beta1_pow, const phi::DenseTensor& beta2_pow,
                     const paddle::optional<phi::DenseTensor>& master_param,
                     const paddle::optional<phi::DenseTensor>& skip_update, const phi::Scalar& beta1,
                     const phi::Scalar& beta2, const phi::Scalar& epsilon, bool lazy_mode,
                     int64_t min_row_size_to_use_multithread, bool multi_precision, bool use_global_beta_pow,
                     bool amsgrad, phi::DenseTensor* param_out, phi::DenseTensor* moment1_out,
                     phi::DenseTensor* moment2_out, phi::DenseTensor* moment2_max_out,
                     phi::DenseTensor* beta1_pow_out, phi::DenseTensor* beta2_pow_out,
                     phi::DenseTensor* master_param_outs) {
  PADDLE_ENFORCE_EQ(amsgrad, false, common::errors::Unimplemented("{{ device_type }}: adam amsgrad"));
  if (skip_update) {
    bool skip = false;
    {{ NAME }}_CHECK({{ p }}_memcpy(&skip, skip_update->data(), sizeof(bool), {{ NAME }}_COPY_DEVICE_TO_HOST), "adam");
    if (skip) {
      copy_tensor(ctx, param, param_out);
      copy_tensor(ctx, moment1, moment1_out);
      copy_tensor(ctx, moment2, moment2_out);
      copy_tensor(ctx, beta1_pow, beta1_pow_out);
      copy_tensor(ctx, beta2_pow, beta2_pow_out);
      if (master_param && master_param_outs) copy_tensor(ctx, *master_param, master_param_outs);
      return;
    }
  }
  // float16/bfloat16 parameters (mixed precision) keep their moments, beta pows and learning
  // rate in float32, and with multi_precision a float32 master copy the step updates.
  T* p = ctx.template Alloc<T>(param_out);
  float* m1 = ctx.template Alloc<float>(moment1_out);
  float* m2 = ctx.template Alloc<float>(moment2_out);
  // With a global beta pow, another op advances the accumulators.
  float* b1 = use_global_beta_pow ? nullptr : ctx.template Alloc<float>(beta1_pow_out);
  float* b2 = use_global_beta_pow ? nullptr : ctx.template Alloc<float>(beta2_pow_out);
  const bool master = multi_precision && master_param && !std::is_same<T, float>::value;
  float* master_out = master ? ctx.template Alloc<float>(master_param_outs) : nullptr;
  {{ NAME }}_CHECK({{ p }}_adam_update(stream_of(ctx), dtype_of<T>(), param.data(), grad.data(),
                                     learning_rate.data<float>(), moment1.data<float>(), moment2.data<float>(),
                                     beta1_pow.data<float>(), beta2_pow.data<float>(), beta1.to<float>(),
                                     beta2.to<float>(), epsilon.to<float>(), p, m1, m2, b1, b2,
                                     master ? master_param->data<float>() : nullptr, master_out, param.numel()),
                   "adam");
}
{{ NAME }}_CHECK_SIGNATURE(AdamDenseKernel, phi::AdamDenseKernel);

}  // namespace {{ p }}_kernels

PD_REGISTER_PLUGIN_KERNEL(sgd, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::SGDDenseKernel, float) {}
// For float16/bfloat16 parameters everything but param and grad is float32 (Paddle's master type).
PD_REGISTER_PLUGIN_KERNEL(adam, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::AdamDenseKernel,
                          float {{ NAME }}_AND_HALF_TYPES) {
  if (kernel_key.dtype() == phi::DataType::FLOAT16 || kernel_key.dtype() == phi::DataType::BFLOAT16) {
    for (size_t out = 1; out <= 6; ++out) kernel->OutputAt(out).SetDataType(phi::DataType::FLOAT32);
  }
}
