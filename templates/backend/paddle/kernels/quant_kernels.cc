// Quantized models: quantize_linear and dequantize_linear, the QDQ pair Paddle's
// post-training quantization and QAT put around every quantized tensor (x -> integers in
// float32 -> x * s / qmax). Per-tensor or per-channel scales, both round types; in training
// mode (is_test false) quantize_linear observes the scales itself. The arithmetic is the device
// library's (device/src/quant_ops.cc), element for element Paddle's CPU kernels'.
#include "kernel_helpers.h"
#include "paddle/phi/kernels/quantize_linear_kernel.h"

namespace {{ p }}_kernels {

namespace {

// The device library's view of a quantized tensor: one scale, or one per slice along quant_axis.
{{ p }}_quant_params_t quant_params(const phi::DenseTensor& x, int quant_axis, int qmax, int round_type,
                                   const char* kernel) {
  PADDLE_ENFORCE_EQ(qmax >= 1 && qmax != 448 && qmax != 57344, true,
                    common::errors::Unimplemented("{{ device_type }} %s: qmax %d is not an integer quantization "
                                                  "({{ device_type }} quantizes to int8-like integers, not float8)",
                                                  kernel, qmax));
  PADDLE_ENFORCE_EQ(quant_axis < x.dims().size(), true,
                    common::errors::InvalidArgument("{{ device_type }} %s: quant_axis %d of a %d-d tensor", kernel,
                                                    quant_axis, x.dims().size()));
  {{ p }}_quant_params_t p{1, 1, x.numel(), qmax, round_type};
  if (quant_axis >= 0) {
    const AxisView v = axis_view(x.dims(), quant_axis);
    p.outer = v.outer;
    p.channels = v.axis;
    p.inner = v.inner;
  }
  return p;
}

void check_scale(const phi::DenseTensor& scale, int64_t channels, const char* kernel) {
  PADDLE_ENFORCE_EQ(scale.dtype(), phi::DataType::FLOAT32,
                    common::errors::Unimplemented("{{ device_type }} %s: scales of dtype %s; the device takes "
                                                  "float32 scales (export the model with float32 scales)",
                                                  kernel, phi::DataTypeToString(scale.dtype())));
  PADDLE_ENFORCE_EQ(scale.numel(), channels,
                    common::errors::InvalidArgument("{{ device_type }} %s: %d scales for %d channels", kernel,
                                                    scale.numel(), channels));
}

}  // namespace

template <typename T, typename Context>
void QuantizeLinearKernel(const Context& ctx, const phi::DenseTensor& x, const paddle::optional<phi::DenseTensor>& scale,
                          const phi::DenseTensor& zero_point, const paddle::optional<phi::DenseTensor>& in_accum,
                          const paddle::optional<phi::DenseTensor>& in_state, int quant_axis, int bit_length, int qmin,
                          int qmax, int round_type, bool is_test, bool only_observer, phi::DenseTensor* out,
                          phi::DenseTensor* out_state, phi::DenseTensor* out_accum, phi::DenseTensor* out_scale) {
  constexpr const char* kKernel = "quantize_linear";
  PADDLE_ENFORCE_NOT_NULL(scale.get_ptr(), common::errors::PreconditionNotMet("quantize_linear needs its scale"));
  const {{ p }}_quant_params_t p = quant_params(x, quant_axis, qmax, round_type, kKernel);
  out->Resize(x.dims());
  float* y = ctx.template Alloc<float>(out);
  const float* scales = scale->data<float>();
  check_scale(*scale, p.channels, kKernel);
  if (!is_test) {  // training: the scales come from x (a moving average of one, or each channel's abs-max)
    const bool moving = quant_axis < 0;
    PADDLE_ENFORCE_EQ(!moving || (in_accum && in_state && out_accum && out_state), true,
                      common::errors::PreconditionNotMet("quantize_linear in training needs InAccum and InState"));
    out_scale->Resize(scale->dims());
    float* observed = ctx.template Alloc<float>(out_scale);
    float *accum = nullptr, *state = nullptr;
    if (moving) {
      out_accum->Resize(in_accum->dims());
      out_state->Resize(in_state->dims());
      accum = ctx.template Alloc<float>(out_accum);
      state = ctx.template Alloc<float>(out_state);
    }
    {{ NAME }}_CHECK({{ p }}_quant_observe(stream_of(ctx), &p, dtype_of<T>(), x.data(), 0.9f,
                                         moving ? in_accum->data<float>() : nullptr,
                                         moving ? in_state->data<float>() : nullptr, accum, state, observed),
                     kKernel);
    scales = observed;
  }
  if (only_observer) {
    copy_tensor(ctx, x, out);
    return;
  }
  {{ NAME }}_CHECK({{ p }}_quantize_linear(stream_of(ctx), &p, dtype_of<T>(), x.data(), scales, {{ NAME }}_FLOAT32, y),
                   kKernel);
}
{{ NAME }}_CHECK_SIGNATURE(QuantizeLinearKernel, phi::QuantizeLinearKernel);

template <typename T, typename Context>
void DequantizeLinearKernel(const Context& ctx, const phi::DenseTensor& x,
                            const paddle::optional<phi::DenseTensor>& scale, const phi::DenseTensor& zero_point,
                            const paddle::optional<phi::DenseTensor>& in_accum,
                            const paddle::optional<phi::DenseTensor>& in_state, int quant_axis, int bit_length,
                            int qmin, int qmax, int round_type, bool is_test, bool only_observer, phi::DenseTensor* out,
                            phi::DenseTensor* out_state, phi::DenseTensor* out_accum, phi::DenseTensor* out_scale) {
  constexpr const char* kKernel = "dequantize_linear";
  PADDLE_ENFORCE_NOT_NULL(scale.get_ptr(), common::errors::PreconditionNotMet("dequantize_linear needs its scale"));
  const {{ p }}_quant_params_t p = quant_params(x, quant_axis, qmax, round_type, kKernel);
  check_scale(*scale, p.channels, kKernel);
  out->Resize(x.dims());
  float* y = ctx.template Alloc<float>(out);
  if (only_observer) {  // (x's values, in the scale's dtype)
    {{ NAME }}_CHECK({{ p }}_cast(stream_of(ctx), dtype_of<T>(), x.data(), {{ NAME }}_FLOAT32, y, x.numel()), kKernel);
    return;
  }
  {{ NAME }}_CHECK({{ p }}_dequantize_linear(stream_of(ctx), &p, dtype_of<T>(), x.data(), scale->data<float>(), y),
                   kKernel);
}
{{ NAME }}_CHECK_SIGNATURE(DequantizeLinearKernel, phi::DeQuantizeLinearKernel);

}  // namespace {{ p }}_kernels

// The output is float32 (integers held in float32, or the dequantized values) whatever x is.
PD_REGISTER_PLUGIN_KERNEL(quantize_linear, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::QuantizeLinearKernel,
                          float) {
  kernel->OutputAt(0).SetDataType(phi::DataType::FLOAT32);
}
PD_REGISTER_PLUGIN_KERNEL(dequantize_linear, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::DequantizeLinearKernel,
                          int8_t, float) {
  kernel->OutputAt(0).SetDataType(phi::DataType::FLOAT32);
}
