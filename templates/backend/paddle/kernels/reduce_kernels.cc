// Reductions (mean_all, mean, sum) and their gradients.
#include "kernel_helpers.h"
#include "paddle/phi/kernels/mean_all_grad_kernel.h"
#include "paddle/phi/kernels/mean_all_kernel.h"
#include "paddle/phi/kernels/reduce_mean_grad_kernel.h"
#include "paddle/phi/kernels/reduce_mean_kernel.h"
#include "paddle/phi/kernels/reduce_sum_grad_kernel.h"
#include "paddle/phi/kernels/reduce_sum_kernel.h"

namespace {{ p }}_kernels {
namespace {

// Which axes of `x` are reduced: all when `dims` is empty or reduce_all.
std::vector<int> reduce_mask(const phi::DDim& x, const std::vector<int64_t>& dims, bool reduce_all) {
  const int nd = x.size();
  std::vector<int> mask(nd, reduce_all || dims.empty() ? 1 : 0);
  for (int64_t d : dims) {
    const int64_t a = d < 0 ? d + nd : d;
    if (a >= 0 && a < nd) mask[a] = 1;
  }
  return mask;
}

template <typename T>
void reduce(const Context& ctx, {{ p }}_reduce_op_t op, const phi::DenseTensor& x,
            const std::vector<int64_t>& dims, bool reduce_all, phi::DenseTensor* out, const char* name) {
  T* o = ctx.template Alloc<T>(out);
  const std::vector<int> mask = reduce_mask(x.dims(), dims, reduce_all);
  const {{ p }}_shape_t xs = shape_of(x);
  {{ NAME }}_CHECK({{ p }}_reduce(stream_of(ctx), op, dtype_of<T>(), x.data(), &xs, mask.data(), o), name);
}

// x_grad = broadcast(out_grad over the reduced axes) * scale
template <typename T>
void reduce_grad(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& out_grad,
                 const std::vector<int64_t>& dims, bool reduce_all, bool mean, phi::DenseTensor* x_grad) {
  x_grad->Resize(x.dims());
  T* g = ctx.template Alloc<T>(x_grad);
  if (x.numel() == 0) return;
  const std::vector<int> mask = reduce_mask(x.dims(), dims, reduce_all);
  {{ p }}_shape_t kept = shape_of(x), xs = shape_of(x);
  int64_t group = 1;
  for (int i = 0; i < kept.ndim; ++i)
    if (mask[i]) {
      group *= kept.dims[i];
      kept.dims[i] = 1;
    }
  auto s = stream_of(ctx);
  {{ NAME }}_CHECK({{ p }}_broadcast(s, dtype_of<T>(), out_grad.data(), &kept, g, &xs), "reduce_grad");
  if (mean) {{ NAME }}_CHECK({{ p }}_scale(s, dtype_of<T>(), g, g, x.numel(), 1.0 / group, 0.0, 1), "reduce_grad");
}

}  // namespace

template <typename T, typename Context>
void MeanAllKernel(const Context& ctx, const phi::DenseTensor& x, phi::DenseTensor* out) {
  reduce<T>(ctx, {{ NAME }}_REDUCE_MEAN, x, {}, true, out, "mean_all");
}
{{ NAME }}_CHECK_SIGNATURE(MeanAllKernel, phi::MeanAllKernel);

template <typename T, typename Context>
void MeanAllGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& out_grad,
                       phi::DenseTensor* x_grad) {
  reduce_grad<T>(ctx, x, out_grad, {}, true, true, x_grad);
}
{{ NAME }}_CHECK_SIGNATURE(MeanAllGradKernel, phi::MeanAllGradKernel);

template <typename T, typename Context>
void MeanKernel(const Context& ctx, const phi::DenseTensor& x, const phi::IntArray& dims, bool keep_dim,
                phi::DenseTensor* out) {
  reduce<T>(ctx, {{ NAME }}_REDUCE_MEAN, x, dims.GetData(), false, out, "mean");
}
{{ NAME }}_CHECK_SIGNATURE(MeanKernel, phi::MeanKernel);

template <typename T, typename Context>
void ReduceMeanGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& out_grad,
                          const phi::IntArray& dims, bool keep_dim, bool reduce_all,
                          phi::DenseTensor* x_grad) {
  reduce_grad<T>(ctx, x, out_grad, dims.GetData(), reduce_all, true, x_grad);
}
{{ NAME }}_CHECK_SIGNATURE(ReduceMeanGradKernel, phi::ReduceMeanGradKernel);

template <typename T, typename Context>
void SumKernel(const Context& ctx, const phi::DenseTensor& x, const phi::IntArray& dims,
               phi::DataType out_dtype, bool keep_dim, phi::DenseTensor* out) {
  // Paddle sums int32 (and bool) into int64: out_dtype is then UNDEFINED and the dtype is the one
  // its shape inference gave `out`. Another dtype than x's: x is cast to it on the device first.
  phi::DataType want = out_dtype != phi::DataType::UNDEFINED ? out_dtype : out->dtype();
  if (want == phi::DataType::UNDEFINED) want = x.dtype();
  if (want == x.dtype()) return reduce<T>(ctx, {{ NAME }}_REDUCE_SUM, x, dims.GetData(), false, out, "sum");
  phi::DenseTensor wide;
  wide.Resize(x.dims());
  void* w = ctx.Alloc(&wide, want);
  if (x.numel() > 0)
    {{ NAME }}_CHECK({{ p }}_cast(stream_of(ctx), dtype_of<T>(), x.data(), dtype_of(want), w, x.numel()), "sum");
  switch (want) {
    case phi::DataType::INT64: return reduce<int64_t>(ctx, {{ NAME }}_REDUCE_SUM, wide, dims.GetData(), false, out, "sum");
    case phi::DataType::INT32: return reduce<int32_t>(ctx, {{ NAME }}_REDUCE_SUM, wide, dims.GetData(), false, out, "sum");
    case phi::DataType::FLOAT32: return reduce<float>(ctx, {{ NAME }}_REDUCE_SUM, wide, dims.GetData(), false, out, "sum");
    case phi::DataType::FLOAT64: return reduce<double>(ctx, {{ NAME }}_REDUCE_SUM, wide, dims.GetData(), false, out, "sum");
    default:
      PADDLE_THROW(common::errors::Unimplemented("{{ device_type }} cannot sum into %s", phi::DataTypeToString(want)));
  }
}
{{ NAME }}_CHECK_SIGNATURE(SumKernel, phi::SumKernel);

template <typename T, typename Context>
void ReduceSumGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& out_grad,
                         const phi::IntArray& dims, bool keep_dim, bool reduce_all,
                         phi::DenseTensor* x_grad) {
  reduce_grad<T>(ctx, x, out_grad, dims.GetData(), reduce_all, false, x_grad);
}
{{ NAME }}_CHECK_SIGNATURE(ReduceSumGradKernel, phi::ReduceSumGradKernel);

}  // namespace {{ p }}_kernels

PD_REGISTER_PLUGIN_KERNEL(mean_all, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::MeanAllKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(mean_all_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::MeanAllGradKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(mean, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::MeanKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(mean_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::ReduceMeanGradKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(sum, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::SumKernel, int32_t, int64_t, float,
                          double {{ NAME }}_AND_HALF_TYPES) {
  kernel->OutputAt(0).SetDataType(phi::DataType::UNDEFINED);
}
PD_REGISTER_PLUGIN_KERNEL(sum_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::ReduceSumGradKernel, float,
                          double {{ NAME }}_AND_HALF_TYPES) {}
