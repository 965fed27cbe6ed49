// softmax and softmax cross entropy with their gradients.
#include "kernel_helpers.h"
#include "paddle/phi/kernels/cross_entropy_grad_kernel.h"
#include "paddle/phi/kernels/cross_entropy_kernel.h"
#include "paddle/phi/kernels/softmax_grad_kernel.h"
#include "paddle/phi/kernels/softmax_kernel.h"

namespace {{ p }}_kernels {

template <typename T, typename Context>
void SoftmaxKernel(const Context& ctx, const phi::DenseTensor& x, int axis, phi::DenseTensor* out) {
  T* y = ctx.template Alloc<T>(out);
  const AxisView v = axis_view(x.dims(), axis);
  {{ NAME }}_CHECK({{ p }}_softmax_forward(stream_of(ctx), dtype_of<T>(), x.data<T>(), y, v.outer, v.axis, v.inner), "softmax");
}
{{ NAME }}_CHECK_SIGNATURE(SoftmaxKernel, phi::SoftmaxKernel);

template <typename T, typename Context>
void SoftmaxGradKernel(const Context& ctx, const phi::DenseTensor& out, const phi::DenseTensor& out_grad,
                       int axis, phi::DenseTensor* x_grad) {
  T* dx = ctx.template Alloc<T>(x_grad);
  const AxisView v = axis_view(out.dims(), axis);
  {{ NAME }}_CHECK({{ p }}_softmax_backward(stream_of(ctx), dtype_of<T>(), out.data<T>(), out_grad.data<T>(), dx, v.outer, v.axis, v.inner),
        "softmax_grad");
}
{{ NAME }}_CHECK_SIGNATURE(SoftmaxGradKernel, phi::SoftmaxGradKernel);

namespace {

// Hard labels as int64 on the device (Paddle also accepts int32 labels).
phi::DenseTensor int64_labels(const Context& ctx, const phi::DenseTensor& label) {
  if (label.dtype() == phi::DataType::INT64) return label;
  phi::DenseTensor converted = scratch<int64_t>(ctx, label.dims());
  {{ NAME }}_CHECK({{ p }}_cast(stream_of(ctx), dtype_of(label.dtype()), label.data(), {{ NAME }}_INT64, converted.data(),
                     label.numel()),
        "cross_entropy label cast");
  return converted;
}

void require_softmax(bool use_softmax) {
  PADDLE_ENFORCE_EQ(use_softmax, true,
                    common::errors::Unimplemented("{{ device_type }}: cross_entropy_with_softmax needs use_softmax=True"));
}

}  // namespace

template <typename T, typename Context>
void CrossEntropyWithSoftmaxKernel(const Context& ctx, const phi::DenseTensor& logits,
                                   const phi::DenseTensor& label, bool soft_label, bool use_softmax,
                                   bool numeric_stable_mode, int ignore_index, int axis,
                                   phi::DenseTensor* softmax, phi::DenseTensor* loss) {
  require_softmax(use_softmax);
  T* sm = ctx.template Alloc<T>(softmax);
  T* l = ctx.template Alloc<T>(loss);
  const AxisView v = axis_view(logits.dims(), axis);
  const phi::DenseTensor labels = soft_label ? label : int64_labels(ctx, label);
  {{ NAME }}_CHECK({{ p }}_softmax_cross_entropy_forward(stream_of(ctx), dtype_of<T>(), logits.data<T>(), labels.data(), soft_label,
                                              ignore_index, sm, l, v.outer, v.axis, v.inner),
        "cross_entropy_with_softmax");
}
{{ NAME }}_CHECK_SIGNATURE(CrossEntropyWithSoftmaxKernel, phi::CrossEntropyWithSoftmaxKernel);

template <typename T, typename Context>
void CrossEntropyWithSoftmaxGradKernel(const Context& ctx, const phi::DenseTensor& label,
                                       const phi::DenseTensor& softmax, const phi::DenseTensor& loss_grad,
                                       bool soft_label, bool use_softmax, bool numeric_stable_mode,
                                       int ignore_index, int axis, phi::DenseTensor* logits_grad) {
  require_softmax(use_softmax);
  T* dx = ctx.template Alloc<T>(logits_grad);
  const AxisView v = axis_view(softmax.dims(), axis);
  const phi::DenseTensor labels = soft_label ? label : int64_labels(ctx, label);
  {{ NAME }}_CHECK({{ p }}_softmax_cross_entropy_backward(stream_of(ctx), dtype_of<T>(), softmax.data<T>(), labels.data(), soft_label,
                                               ignore_index, loss_grad.data<T>(), dx, v.outer, v.axis, v.inner),
        "cross_entropy_with_softmax_grad");
}
{{ NAME }}_CHECK_SIGNATURE(CrossEntropyWithSoftmaxGradKernel, phi::CrossEntropyWithSoftmaxGradKernel);

}  // namespace {{ p }}_kernels

PD_REGISTER_PLUGIN_KERNEL(softmax, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::SoftmaxKernel,
                          float {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(softmax_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::SoftmaxGradKernel,
                          float {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(cross_entropy_with_softmax, {{ device_type }}, ALL_LAYOUT,
                          {{ p }}_kernels::CrossEntropyWithSoftmaxKernel, float {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(cross_entropy_with_softmax_grad, {{ device_type }}, ALL_LAYOUT,
                          {{ p }}_kernels::CrossEntropyWithSoftmaxGradKernel, float {{ NAME }}_AND_HALF_TYPES) {}
