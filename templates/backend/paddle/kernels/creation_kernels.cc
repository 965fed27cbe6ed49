// Tensor creation kernels: full, full_like, uniform, gaussian.
#include "kernel_helpers.h"
#include "paddle/phi/core/generator.h"
#include "paddle/phi/kernels/full_kernel.h"
#include "paddle/phi/kernels/gaussian_kernel.h"
#include "paddle/phi/kernels/uniform_kernel.h"

namespace {{ p }}_kernels {

template <typename T, typename Context>
void FullKernel(const Context& ctx, const phi::IntArray& shape, const phi::Scalar& val,
                phi::DataType dtype, phi::DenseTensor* out) {
  out->Resize(common::make_ddim(shape.GetData()));
  T* data = ctx.template Alloc<T>(out);
  {{ NAME }}_CHECK({{ p }}_fill(stream_of(ctx), dtype_of<T>(), data, out->numel(), val.to<double>()), "full");
}
{{ NAME }}_CHECK_SIGNATURE(FullKernel, phi::FullKernel);

template <typename T, typename Context>
void FullLikeKernel(const Context& ctx, const phi::DenseTensor& x, const phi::Scalar& val,
                    phi::DataType dtype, phi::DenseTensor* out) {
  T* data = ctx.template Alloc<T>(out);
  {{ NAME }}_CHECK({{ p }}_fill(stream_of(ctx), dtype_of<T>(), data, out->numel(), val.to<double>()), "full_like");
}
{{ NAME }}_CHECK_SIGNATURE(FullLikeKernel, phi::FullLikeKernel);

// seed == 0 means "draw from the device generator", which paddle.seed() sets.
inline uint64_t resolve_seed(const phi::CustomContext& ctx, int seed) {
  return seed != 0 ? static_cast<uint64_t>(seed) : generator_seed(ctx);
}

template <typename T, typename Context>
void UniformKernel(const Context& ctx, const phi::IntArray& shape, phi::DataType dtype,
                   const phi::Scalar& min, const phi::Scalar& max, int seed, phi::DenseTensor* out) {
  out->Resize(common::make_ddim(shape.GetData()));
  T* data = ctx.template Alloc<T>(out);
  {{ NAME }}_CHECK({{ p }}_random_uniform(stream_of(ctx), data, out->numel(), min.to<float>(), max.to<float>(),
                               resolve_seed(ctx, seed)),
        "uniform");
}
{{ NAME }}_CHECK_SIGNATURE(UniformKernel, phi::UniformKernel);

template <typename T, typename Context>
void GaussianKernel(const Context& ctx, const phi::IntArray& shape, float mean, float std, int seed,
                    phi::DataType dtype, phi::DenseTensor* out) {
  out->Resize(common::make_ddim(shape.GetData()));
  T* data = ctx.template Alloc<T>(out);
  {{ NAME }}_CHECK({{ p }}_random_normal(stream_of(ctx), data, out->numel(), mean, std, resolve_seed(ctx, seed)),
        "gaussian");
}
{{ NAME }}_CHECK_SIGNATURE(GaussianKernel, phi::GaussianKernel);

}  // namespace {{ p }}_kernels

PD_REGISTER_PLUGIN_KERNEL(full, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::FullKernel,
                          bool, int32_t, int64_t, float, double {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(full_like, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::FullLikeKernel,
                          bool, int32_t, int64_t, float, double {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(uniform, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::UniformKernel, float) {}
PD_REGISTER_PLUGIN_KERNEL(gaussian, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::GaussianKernel, float) {}
