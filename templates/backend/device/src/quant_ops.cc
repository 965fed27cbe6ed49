// {{ NAME }} device library: symmetric linear int8 quantization -- quantize, dequantize and
// the scale observers of quantization-aware training (the device side of
// kernels/quant_kernels.cc). The arithmetic is Paddle's quantize_linear/dequantize_linear on
// the CPU, element for element, so a quantized model gives the same integers on the device.
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared helpers
// (dispatch, submission) are in internal.h. A vendor replaces each body with a launch on the
// device; signatures stay. Scales are device memory, read on the stream.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {
namespace {

bool valid_layout(const {{ p }}_quant_params_t* p) {
  return p && p->outer >= 0 && p->channels >= 1 && p->inner >= 0 && p->qmax >= 1 && (p->round_type == 0 || p->round_type == 1);
}

int64_t quant_numel(const {{ p }}_quant_params_t* p) { return p->outer * p->channels * p->inner; }

// 1/s as Paddle takes it: a zero (or denormal) scale does not divide by zero.
float inverse(float s) { return s <= 1e-30f ? 1.f / (s + 1e-6f) : 1.f / s; }

// Round half to even without the floating-point environment's rounding mode (a caller may
// have changed it); NaN stays NaN.
float round_half_even(float v) {
  const float lower = std::floor(v), upper = std::ceil(v);
  const float d_lower = v - lower, d_upper = upper - v;
  return (d_lower == d_upper ? std::fmod(lower, 2.f) == 0.f : d_lower < d_upper) ? lower : upper;
}

// One element quantized with the scale of its channel (see {{ p }}_quant_params_t).
float quantize_one(float x, float s, const {{ p }}_quant_params_t& p) {
  const float qmax = static_cast<float>(p.qmax);
  if (p.round_type == 1) {
    const float clipped = x < -s ? -s : (x > s ? s : x);
    return std::round(qmax * inverse(s) * clipped);
  }
  const float q = round_half_even(qmax * inverse(s) * x);
  return q > qmax ? qmax : (q < -qmax - 1.f ? -qmax - 1.f : q);
}

// Calls f(index, channel) over a [outer, channels, inner] array.
template <typename F>
void for_each_channel(const {{ p }}_quant_params_t& p, F&& f) {
  int64_t i = 0;
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t c = 0; c < p.channels; ++c)
      for (int64_t k = 0; k < p.inner; ++k) f(i++, c);
}

}  // namespace
}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_quantize_linear({{ p }}_stream_t s, const {{ p }}_quant_params_t* p,
                                  {{ p }}_dtype_t x_dtype, const void* x, const float* scale,
                                  {{ p }}_dtype_t out_dtype, void* out) {
  debug::Trace trace_("quantize_linear");
  if (!float_body_dtype(x_dtype) || (out_dtype != {{ NAME }}_INT8 && out_dtype != {{ NAME }}_FLOAT32))
    return {{ NAME }}_ERROR_UNSUPPORTED;
  if (!valid_layout(p) || (out_dtype == {{ NAME }}_INT8 && p->qmax > 127)) return {{ NAME }}_ERROR_INVALID_VALUE;
  trace_.attr("channels", p->channels).attr("qmax", p->qmax).attr("round_type", p->round_type);
  const int64_t n = quant_numel(p);
  if (n == 0) return {{ NAME }}_OK;
  if (!x || !scale || !out) return {{ NAME }}_ERROR_INVALID_VALUE;
  const {{ p }}_quant_params_t params = *p;
  {{ NAME }}_DEVICE_POINTERS(s, x, scale, out);
  {{ NAME }}_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(x_dtype, {
      const T* in = as<T>(x);
      for_each_channel(params, [&](int64_t i, int64_t c) {
        const float q = quantize_one(static_cast<float>(in[i]), scale[c], params);
        if (out_dtype == {{ NAME }}_FLOAT32) as<float>(out)[i] = q;
        else as<int8_t>(out)[i] = std::isnan(q) ? int8_t{0} : static_cast<int8_t>(q);
      });
    });
  });
}

{{ p }}_status_t {{ p }}_dequantize_linear({{ p }}_stream_t s, const {{ p }}_quant_params_t* p,
                                    {{ p }}_dtype_t x_dtype, const void* x, const float* scale,
                                    float* out) {
  debug::Trace trace_("dequantize_linear");
  if (x_dtype != {{ NAME }}_INT8 && x_dtype != {{ NAME }}_FLOAT32) return {{ NAME }}_ERROR_UNSUPPORTED;
  if (!valid_layout(p)) return {{ NAME }}_ERROR_INVALID_VALUE;
  trace_.attr("channels", p->channels).attr("qmax", p->qmax);
  const int64_t n = quant_numel(p);
  if (n == 0) return {{ NAME }}_OK;
  if (!x || !scale || !out) return {{ NAME }}_ERROR_INVALID_VALUE;
  const {{ p }}_quant_params_t params = *p;
  {{ NAME }}_DEVICE_POINTERS(s, x, scale, out);
  {{ NAME }}_SUBMIT(s, {
    const float qmax = static_cast<float>(params.qmax);
    for_each_channel(params, [&](int64_t i, int64_t c) {
      const float v = x_dtype == {{ NAME }}_INT8 ? as<int8_t>(x)[i] : as<float>(x)[i];
      out[i] = v * scale[c] / qmax;  // (in this order, as Paddle's CPU kernel: bit for bit)
    });
  });
}

{{ p }}_status_t {{ p }}_quant_observe({{ p }}_stream_t s, const {{ p }}_quant_params_t* p,
                                {{ p }}_dtype_t x_dtype, const void* x, float rate,
                                const float* in_accum, const float* in_state, float* out_accum,
                                float* out_state, float* scale) {
  debug::Trace trace_("quant_observe");
  if (!float_body_dtype(x_dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  const bool moving = in_accum || in_state;
  if (!valid_layout(p) || !scale || (moving && (p->channels != 1 || !in_accum || !in_state || !out_accum || !out_state)))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  if (!x && quant_numel(p) > 0) return {{ NAME }}_ERROR_INVALID_VALUE;
  trace_.attr("channels", p->channels).attr("moving_average", moving ? 1 : 0);
  const {{ p }}_quant_params_t params = *p;
  {{ NAME }}_DEVICE_POINTERS(s, x, in_accum, in_state, out_accum, out_state, scale);
  {{ NAME }}_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(x_dtype, {
      const T* in = as<T>(x);
      std::vector<float> abs_max(static_cast<size_t>(params.channels), 0.f);
      for_each_channel(params, [&](int64_t i, int64_t c) {
        abs_max[c] = std::max(abs_max[c], std::fabs(static_cast<float>(in[i])));
      });
      if (moving) {
        const float state = rate * *in_state + 1.f, accum = rate * *in_accum + abs_max[0];
        *out_state = state;
        *out_accum = accum;
        *scale = accum / state;
      } else {
        std::copy(abs_max.begin(), abs_max.end(), scale);
      }
    });
  });
}

}  // extern "C"
