// conv2d, depthwise_conv2d and pool2d (NCHW; pool2d forward also NHWC) with their gradients.
#include "conv_geometry.h"
#include "kernel_helpers.h"
#include "paddle/phi/kernels/conv_grad_kernel.h"
#include "paddle/phi/kernels/conv_kernel.h"
#include "paddle/phi/kernels/pool_grad_kernel.h"
#include "paddle/phi/kernels/pool_kernel.h"

namespace {{ p }}_kernels {
namespace {

void require_nchw(const std::string& data_format, const char* op) {
  PADDLE_ENFORCE_EQ(data_format == "NCHW" || data_format == "AnyLayout", true,
                    common::errors::Unimplemented("{{ device_type }}: %s supports NCHW only, got %s", op,
                                                  data_format.c_str()));
}

// conv2d_params (conv_geometry.h), held to the output Paddle allocated: a geometry that disagrees
// with Paddle's InferMeta is refused in words, never written past the output.
{{ p }}_conv2d_params_t conv_params(const phi::DenseTensor& input, const phi::DenseTensor& filter,
                                   const phi::DDim& out, const std::vector<int>& strides,
                                   const std::vector<int>& paddings, const std::string& algorithm,
                                   const std::vector<int>& dilations, int groups) {
  const auto p = conv2d_params(input.dims(), filter.dims(), strides, paddings, algorithm, dilations, groups);
  PADDLE_ENFORCE_EQ(p.out_h == out[2] && p.out_w == out[3], true,
                    common::errors::InvalidArgument("{{ device_type }} conv2d: the geometry gives an output of %d x %d, "
                                                    "Paddle's is %d x %d", p.out_h, p.out_w, out[2], out[3]));
  return p;
}

{{ p }}_pool2d_params_t pool_params(const phi::DenseTensor& x, const phi::DDim& out,
                                   const phi::IntArray& kernel_size, const std::vector<int64_t>& strides,
                                   const std::vector<int64_t>& paddings, bool exclusive,
                                   const std::string& pooling_type, bool global_pooling, bool adaptive,
                                   const std::string& algorithm) {
  {{ p }}_pool2d_params_t p;
  const auto k = kernel_size.GetData();
  p.batch = x.dims()[0];
  p.channels = x.dims()[1];
  p.in_h = x.dims()[2];
  p.in_w = x.dims()[3];
  p.out_h = out[2];
  p.out_w = out[3];
  // (Paddle's InferMeta checks neither the pooling type nor the kernel's size: its CPU kernels refuse them)
  PADDLE_ENFORCE_EQ(pooling_type == "max" || pooling_type == "avg", true,
                    common::errors::InvalidArgument("{{ device_type }} pool2d: pooling_type is '%s', where max or "
                                                    "avg is due", pooling_type));
  p.is_max = pooling_type == "max";
  p.exclusive = exclusive;
  p.adaptive = adaptive;
  if (global_pooling) {
    p.kernel_h = p.in_h;
    p.kernel_w = p.in_w;
    p.stride_h = p.stride_w = 1;
    p.pad_top = p.pad_left = 0;
    p.adaptive = 0;
    return p;
  }
  std::string shown;
  for (int64_t v : k) shown += (shown.empty() ? "" : ", ") + std::to_string(v);
  PADDLE_ENFORCE_EQ(!k.empty() && k.size() <= 2 && k.front() > 0 && k.back() > 0, true,
                    common::errors::InvalidArgument("{{ device_type }} pool2d: kernel_size is [%s], where 1 or 2 "
                                                    "ints > 0 are due", shown));
  p.kernel_h = k[0];
  p.kernel_w = k.size() > 1 ? k[1] : k[0];
  p.stride_h = strides[0];
  p.stride_w = strides.size() > 1 ? strides[1] : strides[0];
  p.pad_top = axis_geometry(p.in_h, p.kernel_h, p.stride_h, 1, paddings, 0, algorithm).pad_before;
  p.pad_left = axis_geometry(p.in_w, p.kernel_w, p.stride_w, 1, paddings, 1, algorithm).pad_before;
  return p;
}

}  // namespace

template <typename T, typename Context>
void ConvKernel(const Context& ctx, const phi::DenseTensor& input, const phi::DenseTensor& filter,
                const std::vector<int>& strides, const std::vector<int>& paddings,
                const std::string& padding_algorithm, const std::vector<int>& dilations, int groups,
                const std::string& data_format, phi::DenseTensor* out) {
  require_nchw(data_format, "conv2d");
  T* y = ctx.template Alloc<T>(out);
  const auto p = conv_params(input, filter, out->dims(), strides, paddings, padding_algorithm, dilations, groups);
  {{ NAME }}_CHECK({{ p }}_conv2d_forward(stream_of(ctx), dtype_of<T>(), &p, input.data<T>(), filter.data<T>(), y), "conv2d");
}
{{ NAME }}_CHECK_SIGNATURE(ConvKernel, phi::ConvKernel);

template <typename T, typename Context>
void ConvGradKernel(const Context& ctx, const phi::DenseTensor& input, const phi::DenseTensor& filter,
                    const phi::DenseTensor& out_grad, const std::vector<int>& strides,
                    const std::vector<int>& paddings, const std::string& padding_algorithm,
                    const std::vector<int>& dilations, int groups, const std::string& data_format,
                    phi::DenseTensor* input_grad, phi::DenseTensor* filter_grad) {
  require_nchw(data_format, "conv2d_grad");
  T* dx = input_grad ? ctx.template Alloc<T>(input_grad) : nullptr;
  T* dw = filter_grad ? ctx.template Alloc<T>(filter_grad) : nullptr;
  const auto p = conv_params(input, filter, out_grad.dims(), strides, paddings, padding_algorithm, dilations, groups);
  {{ NAME }}_CHECK({{ p }}_conv2d_backward(stream_of(ctx), dtype_of<T>(), &p, input.data<T>(), filter.data<T>(), out_grad.data<T>(), dx, dw),
        "conv2d_grad");
}
{{ NAME }}_CHECK_SIGNATURE(ConvGradKernel, phi::ConvGradKernel);

// depthwise_conv2d is conv2d with groups == channels; Paddle orders its
// parameters differently (groups before dilations).
template <typename T, typename Context>
void DepthwiseConvKernel(const Context& ctx, const phi::DenseTensor& input, const phi::DenseTensor& filter,
                         const std::vector<int>& strides, const std::vector<int>& paddings,
                         const std::string& padding_algorithm, int groups, const std::vector<int>& dilations,
                         const std::string& data_format, phi::DenseTensor* out) {
  // Qualified: ADL would also find phi::ConvKernel.
  {{ p }}_kernels::ConvKernel<T, Context>(ctx, input, filter, strides, paddings, padding_algorithm, dilations, groups, data_format, out);
}
{{ NAME }}_CHECK_SIGNATURE(DepthwiseConvKernel, phi::DepthwiseConvKernel);

template <typename T, typename Context>
void DepthwiseConvGradKernel(const Context& ctx, const phi::DenseTensor& input, const phi::DenseTensor& filter,
                             const phi::DenseTensor& out_grad, const std::vector<int>& strides,
                             const std::vector<int>& paddings, const std::string& padding_algorithm, int groups,
                             const std::vector<int>& dilations, const std::string& data_format,
                             phi::DenseTensor* input_grad, phi::DenseTensor* filter_grad) {
  {{ p }}_kernels::ConvGradKernel<T, Context>(ctx, input, filter, out_grad, strides, paddings, padding_algorithm,
                                             dilations, groups, data_format, input_grad, filter_grad);
}
{{ NAME }}_CHECK_SIGNATURE(DepthwiseConvGradKernel, phi::DepthwiseConvGradKernel);

template <typename T, typename Context>
void Pool2dKernel(const Context& ctx, const phi::DenseTensor& x, const phi::IntArray& kernel_size,
                  const std::vector<int64_t>& strides, const std::vector<int64_t>& paddings,
                  bool ceil_mode, bool exclusive, const std::string& data_format,
                  const std::string& pooling_type, bool global_pooling, bool adaptive,
                  const std::string& padding_algorithm, phi::DenseTensor* out) {
  T* y = ctx.template Alloc<T>(out);
  if (data_format == "NHWC") {
    // Paddle's layout passes may hand pooling NHWC tensors: pool in NCHW between two transposes.
    const int to_nchw[] = {0, 3, 1, 2}, to_nhwc[] = {0, 2, 3, 1};
    const auto& xd = x.dims();
    const auto& od = out->dims();
    phi::DenseTensor x_nchw = scratch<T>(ctx, common::make_ddim({xd[0], xd[3], xd[1], xd[2]}));
    phi::DenseTensor y_nchw = scratch<T>(ctx, common::make_ddim({od[0], od[3], od[1], od[2]}));
    const {{ p }}_shape_t xs = shape_of(x), ys = shape_of(y_nchw);
    {{ NAME }}_CHECK({{ p }}_transpose(stream_of(ctx), dtype_of<T>(), x.data(), &xs, to_nchw, x_nchw.data()), "pool2d");
    const auto p = pool_params(x_nchw, y_nchw.dims(), kernel_size, strides, paddings, exclusive, pooling_type,
                               global_pooling, adaptive, padding_algorithm);
    {{ NAME }}_CHECK({{ p }}_pool2d_forward(stream_of(ctx), dtype_of<T>(), &p, x_nchw.data<T>(), y_nchw.data<T>()), "pool2d");
    {{ NAME }}_CHECK({{ p }}_transpose(stream_of(ctx), dtype_of<T>(), y_nchw.data(), &ys, to_nhwc, y), "pool2d");
    return;
  }
  require_nchw(data_format, "pool2d");
  const auto p = pool_params(x, out->dims(), kernel_size, strides, paddings, exclusive, pooling_type,
                             global_pooling, adaptive, padding_algorithm);
  {{ NAME }}_CHECK({{ p }}_pool2d_forward(stream_of(ctx), dtype_of<T>(), &p, x.data<T>(), y), "pool2d");
}
{{ NAME }}_CHECK_SIGNATURE(Pool2dKernel, phi::Pool2dKernel);

template <typename T, typename Context>
void Pool2dGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& out,
                      const phi::DenseTensor& dout, const phi::IntArray& kernel_size,
                      const std::vector<int64_t>& strides, const std::vector<int64_t>& paddings,
                      bool ceil_mode, bool exclusive, const std::string& data_format,
                      const std::string& pooling_type, bool global_pooling, bool adaptive,
                      const std::string& padding_algorithm, phi::DenseTensor* dx) {
  require_nchw(data_format, "pool2d_grad");
  T* g = ctx.template Alloc<T>(dx);
  const auto p = pool_params(x, out.dims(), kernel_size, strides, paddings, exclusive, pooling_type,
                             global_pooling, adaptive, padding_algorithm);
  {{ NAME }}_CHECK({{ p }}_pool2d_backward(stream_of(ctx), dtype_of<T>(), &p, x.data<T>(), out.data<T>(), dout.data<T>(), g), "pool2d_grad");
}
{{ NAME }}_CHECK_SIGNATURE(Pool2dGradKernel, phi::Pool2dGradKernel);

}  // namespace {{ p }}_kernels

PD_REGISTER_PLUGIN_KERNEL(conv2d, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::ConvKernel,
                          float {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(conv2d_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::ConvGradKernel,
                          float {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(depthwise_conv2d, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::DepthwiseConvKernel,
                          float {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(depthwise_conv2d_grad, {{ device_type }}, ALL_LAYOUT,
                          {{ p }}_kernels::DepthwiseConvGradKernel, float {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(pool2d, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::Pool2dKernel,
                          float {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(pool2d_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::Pool2dGradKernel,
                          float {{ NAME }}_AND_HALF_TYPES) {}
