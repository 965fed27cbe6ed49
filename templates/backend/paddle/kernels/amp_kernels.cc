// Loss scaling of mixed-precision training: check_finite_and_unscale (what paddle.amp.GradScaler
// runs on the gradients every step) and update_loss_scaling (the static-graph scaler's update).
// The found-inf flag, the scale and the step counters stay on the device: nothing here reads
// them on the host (Paddle reads the flag itself, through a synchronising copy, when it decides
// to skip a step).
#include "kernel_helpers.h"
#include "paddle/phi/kernels/amp_kernel.h"

namespace {{ p }}_kernels {

namespace {

// The device pointers and element counts of a tensor list, `outs` allocated like `xs`.
template <typename T>
struct Lists {
  std::vector<const void*> in;
  std::vector<void*> out;
  std::vector<int64_t> numels;
  Lists(const Context& ctx, const std::vector<const phi::DenseTensor*>& xs, const std::vector<phi::DenseTensor*>& outs) {
    PADDLE_ENFORCE_EQ(xs.size(), outs.size(),
                      common::errors::InvalidArgument("{{ device_type }}: %d inputs but %d outputs", xs.size(),
                                                      outs.size()));
    for (size_t i = 0; i < xs.size(); ++i) {
      outs[i]->Resize(xs[i]->dims());
      out.push_back(ctx.template Alloc<T>(outs[i]));
      in.push_back(xs[i]->data());
      numels.push_back(xs[i]->numel());
    }
  }
  int count() const { return static_cast<int>(in.size()); }
};

// `dst` made a device copy of `src` unless it is the same memory (Paddle runs these in place).
void carry(const Context& ctx, const phi::DenseTensor& src, phi::DenseTensor* dst) {
  dst->Resize(src.dims());
  copy_tensor(ctx, src, dst);
}

}  // namespace

template <typename T, typename Context>
void CheckFiniteAndUnscaleKernel(const Context& ctx, const std::vector<const phi::DenseTensor*>& xs,
                                 const phi::DenseTensor& scale, std::vector<phi::DenseTensor*> outs,
                                 phi::DenseTensor* found_infinite) {
  const Lists<T> lists(ctx, xs, outs);
  found_infinite->Resize(common::make_ddim({1}));
  bool* found = ctx.template Alloc<bool>(found_infinite);
  {{ NAME }}_CHECK({{ p }}_fill(stream_of(ctx), {{ NAME }}_BOOL, found, 1, 0.0), "check_finite_and_unscale");
  {{ NAME }}_CHECK({{ p }}_check_finite_and_unscale(stream_of(ctx), dtype_of<T>(), lists.count(), lists.in.data(),
                                                  lists.out.data(), lists.numels.data(), scale.data<float>(), 1,
                                                  {{ NAME }}_BOOL, found),
                   "check_finite_and_unscale");
}
{{ NAME }}_CHECK_SIGNATURE(CheckFiniteAndUnscaleKernel, phi::CheckFiniteAndUnscaleKernel);

template <typename T, typename Context>
void UpdateLossScalingKernel(const Context& ctx, const std::vector<const phi::DenseTensor*>& xs,
                             const phi::DenseTensor& found_infinite, const phi::DenseTensor& prev_loss_scaling,
                             const phi::DenseTensor& in_good_steps, const phi::DenseTensor& in_bad_steps,
                             int incr_every_n_steps, int decr_every_n_nan_or_inf, float incr_ratio, float decr_ratio,
                             const phi::Scalar& stop_update, std::vector<phi::DenseTensor*> outs,
                             phi::DenseTensor* loss_scaling, phi::DenseTensor* out_good_steps,
                             phi::DenseTensor* out_bad_steps) {
  const Lists<T> lists(ctx, xs, outs);
  PADDLE_ENFORCE_EQ(found_infinite.numel(), 1,
                    common::errors::InvalidArgument("FoundInfinite must have one element"));
  {{ NAME }}_CHECK({{ p }}_zero_if_found(stream_of(ctx), dtype_of<T>(), lists.count(), lists.in.data(),
                                       lists.out.data(), lists.numels.data(), {{ NAME }}_BOOL, found_infinite.data()),
                   "update_loss_scaling");
  carry(ctx, prev_loss_scaling, loss_scaling);
  carry(ctx, in_good_steps, out_good_steps);
  carry(ctx, in_bad_steps, out_bad_steps);
  if (stop_update.to<bool>()) return;
  // Paddle's rule: a shrunk scale is at least 1.
  const {{ p }}_loss_scale_params_t params = {incr_every_n_steps, decr_every_n_nan_or_inf, incr_ratio, decr_ratio, 1.f};
  {{ NAME }}_CHECK({{ p }}_update_loss_scale(stream_of(ctx), &params, {{ NAME }}_BOOL, found_infinite.data(),
                                           loss_scaling->data<float>(), out_good_steps->data<int32_t>(),
                                           out_bad_steps->data<int32_t>()),
                   "update_loss_scaling");
}
{{ NAME }}_CHECK_SIGNATURE(UpdateLossScalingKernel, phi::UpdateLossScalingKernel);

}  // namespace {{ p }}_kernels

// The scale is float32 whatever the gradients' dtype (Paddle's master type); the flag is BOOL.
PD_REGISTER_PLUGIN_KERNEL(check_finite_and_unscale, {{ device_type }}, ALL_LAYOUT,
                          {{ p }}_kernels::CheckFiniteAndUnscaleKernel, float {{ NAME }}_AND_HALF_TYPES) {
  kernel->InputAt(1).SetDataType(phi::DataType::FLOAT32);
  kernel->OutputAt(1).SetDataType(phi::DataType::BOOL);
}
PD_REGISTER_PLUGIN_KERNEL(update_loss_scaling, {{ device_type }}, ALL_LAYOUT,
                          {{ p }}_kernels::UpdateLossScalingKernel, float {{ NAME }}_AND_HALF_TYPES) {
  kernel->InputAt(1).SetDataType(phi::DataType::BOOL);
  kernel->InputAt(2).SetDataType(phi::DataType::FLOAT32);
  kernel->OutputAt(1).SetDataType(phi::DataType::FLOAT32);
  kernel->OutputAt(2).SetDataType(phi::DataType::INT32);
  kernel->OutputAt(3).SetDataType(phi::DataType::INT32);
}
