// argmax, top_k and accuracy.
#include "kernel_helpers.h"
#include "paddle/phi/kernels/accuracy_kernel.h"
#include "paddle/phi/kernels/arg_min_max_kernel.h"
#include "paddle/phi/kernels/top_k_kernel.h"

namespace {{ p }}_kernels {

template <typename T, typename Context>
void ArgMaxKernel(const Context& ctx, const phi::DenseTensor& x, const phi::Scalar& axis, bool keepdims,
                  bool flatten, phi::DataType dtype, phi::DenseTensor* out) {
  const bool as_int32 = dtype == phi::DataType::INT32;
  void* o = ctx.Alloc(out, as_int32 ? phi::DataType::INT32 : phi::DataType::INT64);
  AxisView v;
  if (flatten || x.dims().size() == 0) {
    v.axis = x.numel();
  } else {
    v = axis_view(x.dims(), axis.to<int>());
  }
  auto s = stream_of(ctx);
  if (!as_int32) {
    {{ NAME }}_CHECK({{ p }}_argmax(s, dtype_of<T>(), x.data(), v.outer, v.axis, v.inner, static_cast<int64_t*>(o)), "argmax");
    return;
  }
  phi::DenseTensor tmp = scratch<int64_t>(ctx, out->dims());
  {{ NAME }}_CHECK({{ p }}_argmax(s, dtype_of<T>(), x.data(), v.outer, v.axis, v.inner, tmp.data<int64_t>()), "argmax");
  {{ NAME }}_CHECK({{ p }}_cast(s, {{ NAME }}_INT64, tmp.data(), {{ NAME }}_INT32, o, out->numel()), "argmax");
}
{{ NAME }}_CHECK_SIGNATURE(ArgMaxKernel, phi::ArgMaxKernel);

template <typename T, typename Context>
void TopkKernel(const Context& ctx, const phi::DenseTensor& x, const phi::Scalar& k_scalar, int axis,
                bool largest, bool sorted, phi::DenseTensor* out, phi::DenseTensor* indices) {
  T* values = ctx.template Alloc<T>(out);
  int64_t* idx = ctx.template Alloc<int64_t>(indices);
  const AxisView v = axis_view(x.dims(), axis);
  {{ NAME }}_CHECK({{ p }}_topk(stream_of(ctx), x.data<T>(), v.outer, v.axis, v.inner, k_scalar.to<int64_t>(), largest,
                     values, idx),
        "topk");
}
{{ NAME }}_CHECK_SIGNATURE(TopkKernel, phi::TopkKernel);

template <typename T, typename Context>
void AccuracyKernel(const Context& ctx, const phi::DenseTensor& out, const phi::DenseTensor& indices,
                    const phi::DenseTensor& label, phi::DenseTensor* accuracy, phi::DenseTensor* correct,
                    phi::DenseTensor* total) {
  float* acc = ctx.template Alloc<float>(accuracy);
  int32_t* c = ctx.template Alloc<int32_t>(correct);
  int32_t* t = ctx.template Alloc<int32_t>(total);
  const int64_t rows = indices.dims()[0];
  const int64_t k = rows > 0 ? indices.numel() / rows : 0;
  {{ NAME }}_CHECK({{ p }}_accuracy(stream_of(ctx), indices.data<int64_t>(), label.data<int64_t>(), rows, k, acc, c, t),
        "accuracy");
}
{{ NAME }}_CHECK_SIGNATURE(AccuracyKernel, phi::AccuracyKernel);

}  // namespace {{ p }}_kernels

PD_REGISTER_PLUGIN_KERNEL(argmax, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::ArgMaxKernel, int32_t, int64_t,
                          float, double) {
  kernel->OutputAt(0).SetDataType(phi::DataType::UNDEFINED);
}
PD_REGISTER_PLUGIN_KERNEL(topk, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::TopkKernel, float) {
  kernel->OutputAt(1).SetDataType(phi::DataType::INT64);
}
PD_REGISTER_PLUGIN_KERNEL(accuracy, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::AccuracyKernel, float) {
  kernel->InputAt(1).SetDataType(phi::DataType::INT64);
  kernel->InputAt(2).SetDataType(phi::DataType::INT64);
  kernel->OutputAt(0).SetDataType(phi::DataType::FLOAT32);
  kernel->OutputAt(1).SetDataType(phi::DataType::INT32);
  kernel->OutputAt(2).SetDataType(phi::DataType::INT32);
}
