// Data movement kernels: reshape, flatten, assign, cast, scale.
#include "kernel_helpers.h"
#include "paddle/phi/kernels/assign_kernel.h"
#include "paddle/phi/kernels/cast_kernel.h"
#include "paddle/phi/kernels/flatten_grad_kernel.h"
#include "paddle/phi/kernels/flatten_kernel.h"
#include "paddle/phi/kernels/reshape_grad_kernel.h"
#include "paddle/phi/kernels/reshape_kernel.h"
#include "paddle/phi/kernels/scale_kernel.h"

namespace {{ p }}_kernels {

// Paddle's shape inference has already given `out` its dims; a reshape only
// moves the bytes (or nothing, when out already shares x's buffer).
template <typename T, typename Context>
void ReshapeKernel(const Context& ctx, const phi::DenseTensor& x, const phi::IntArray& shape,
                   phi::DenseTensor* out) {
  copy_tensor(ctx, x, out);
}
{{ NAME }}_CHECK_SIGNATURE_ANY_DTYPE(ReshapeKernel, phi::ReshapeKernel);

template <typename T, typename Context>
void ReshapeGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& out_grad,
                       phi::DenseTensor* x_grad) {
  x_grad->Resize(x.dims());
  copy_tensor(ctx, out_grad, x_grad);
}
{{ NAME }}_CHECK_SIGNATURE_ANY_DTYPE(ReshapeGradKernel, phi::ReshapeGradKernel);

template <typename T, typename Context>
void FlattenKernel(const Context& ctx, const phi::DenseTensor& x, int start_axis, int stop_axis,
                   phi::DenseTensor* out) {
  copy_tensor(ctx, x, out);
}
{{ NAME }}_CHECK_SIGNATURE(FlattenKernel, phi::FlattenKernel);

template <typename T, typename Context>
void FlattenGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& out_grad,
                       phi::DenseTensor* x_grad) {
  x_grad->Resize(x.dims());
  copy_tensor(ctx, out_grad, x_grad);
}
{{ NAME }}_CHECK_SIGNATURE(FlattenGradKernel, phi::FlattenGradKernel);

template <typename T, typename Context>
void AssignKernel(const Context& ctx, const phi::DenseTensor& x, phi::DenseTensor* out) {
  out->Resize(x.dims());
  copy_tensor(ctx, x, out);
}
{{ NAME }}_CHECK_SIGNATURE_ANY_DTYPE(AssignKernel, phi::AssignKernel);

template <typename T, typename Context>
void CastKernel(const Context& ctx, const phi::DenseTensor& x, phi::DataType out_dtype, phi::DenseTensor* out) {
  void* o = ctx.Alloc(out, out_dtype);
  if (x.numel() == 0) return;
  check({{ p }}_cast(stream_of(ctx), dtype_of<T>(), x.data(), dtype_of(out_dtype), o, x.numel()), "cast");
}
{{ NAME }}_CHECK_SIGNATURE(CastKernel, phi::CastKernel);

template <typename T, typename Context>
void ScaleKernel(const Context& ctx, const phi::DenseTensor& x, const phi::Scalar& scale,
                 const phi::Scalar& bias, bool bias_after_scale, phi::DenseTensor* out) {
  T* o = ctx.template Alloc<T>(out);
  check({{ p }}_scale(stream_of(ctx), dtype_of<T>(), x.data(), o, x.numel(), scale.to<double>(),
                      bias.to<double>(), bias_after_scale),
        "scale");
}
{{ NAME }}_CHECK_SIGNATURE(ScaleKernel, phi::ScaleKernel);

}  // namespace {{ p }}_kernels

#define {{ NAME }}_REGISTER_ANY_DTYPE(name, fn)                                                  \
  PD_REGISTER_PLUGIN_KERNEL(name, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::fn, bool, uint8_t, \
                            int8_t, int16_t, int32_t, int64_t, float, double) {}

{{ NAME }}_REGISTER_ANY_DTYPE(reshape, ReshapeKernel)
{{ NAME }}_REGISTER_ANY_DTYPE(reshape_grad, ReshapeGradKernel)
{{ NAME }}_REGISTER_ANY_DTYPE(flatten, FlattenKernel)
{{ NAME }}_REGISTER_ANY_DTYPE(flatten_grad, FlattenGradKernel)
{{ NAME }}_REGISTER_ANY_DTYPE(assign, AssignKernel)

PD_REGISTER_PLUGIN_KERNEL(cast, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::CastKernel, bool, uint8_t, int8_t,
                          int16_t, int32_t, int64_t, float, double) {
  kernel->OutputAt(0).SetDataType(phi::DataType::UNDEFINED);
}
PD_REGISTER_PLUGIN_KERNEL(scale, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::ScaleKernel, int32_t, int64_t,
                          float, double) {}
