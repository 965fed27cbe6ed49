// {{ NAME }} device library: symmetric linear int8 quantization -- quantize, dequantize and
// the scale observers of quantization-aware training (the device side of
// paddle/kernels/quant_kernels.cc) -- and the int8 arithmetic of the int8 engine (paddle/engine/): int8
// convolution and GEMM into int32, the requantization of their accumulators, the residual add,
// softmax and concatenation of int8 operands. Quantize and dequantize are Paddle's quantize_linear/dequantize_linear
// on the CPU, element for element, so a quantized model gives the same integers on the device.
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

// An integer v taken back to float with its scale: v * s / qmax in this order, as Paddle's CPU
// dequantize_linear computes it, bit for bit (the engine's add and concat rescale with it too).
float dequantize_one(float v, float s, float qmax) { return v * s / qmax; }

// 1/s as Paddle takes it: a zero (or denormal) scale does not divide by zero.
float inverse(float s) { return s <= 1e-30f ? 1.f / (s + 1e-6f) : 1.f / s; }

// Adding and subtracting 1.5 * 2^23 rounds a float below 2^22 in magnitude to an integer, half to
// even (the default rounding mode): what Paddle's floor/ceil tie test computes, with no libm call,
// so the loops vectorize (a MobileNetV1 int8 prediction spent 42 % of its time in a floor-based
// quantize). copysign gives a zero x's sign, as Paddle's ceil does.
constexpr float kRoundHalfEven = 12582912.f;
constexpr int kRoundsExactlyBelow = 1 << 22;

inline float round_half_even(float v) { return std::copysign((v + kRoundHalfEven) - kRoundHalfEven, v); }

// v clipped to round type 0's range [-qmax-1, qmax]; NaN stays NaN. (Two plain selects, and the
// NaN select in store, are what the vectorizer takes: a nested one or a branch kept the int8
// quantize scalar, 25 % of a MobileNetV1 int8 prediction.)
inline float clip(float v, float qmax) {
  const float lowest = -qmax - 1.f;
  v = v > qmax ? qmax : v;
  return v < lowest ? lowest : v;
}

// x quantized with m = qmax * (1 / s), as Paddle computes it: m * x rounded half to even (round
// type 0, then clipped to [-qmax-1, qmax]), or x clipped to [-s, s] and m * x rounded half away
// from zero (round type 1). NaN stays NaN. Clipping before rounding gives the same integers
// (the bounds are integers), and keeps the parity test below in range; the tie test is exact:
// v - floor(v) and ceil(v) - v are exact in float and sum to 1.
inline float quantize_one(float x, float m, float s, const {{ p }}_quant_params_t& p) {
  const float qmax = static_cast<float>(p.qmax);
  if (p.round_type == 1) return std::round(m * (x < -s ? -s : (x > s ? s : x)));
  const float v = clip(m * x, qmax);
  if (p.qmax < kRoundsExactlyBelow) return round_half_even(v);
  const float lower = std::floor(v), fraction = v - lower;
  if (fraction != 0.5f) return fraction < 0.5f ? lower : lower + 1.f;
  return lower + static_cast<float>(static_cast<int64_t>(lower) & 1);  // a tie: to the even one
}

inline void store(float q, float* out) { *out = q; }
inline void store(float q, int8_t* out) {  // NaN: 0
  const float number = q == q ? q : 0.f;
  *out = static_cast<int8_t>(static_cast<int32_t>(number));
}

// in[begin, end) quantized into out; the common case (round type 0, an integer bit length) in a
// loop with no branch or call, which the compiler vectorizes.
template <typename T, typename Out>
void quantize_run(const T* in, Out* out, int64_t begin, int64_t end, float m, float s,
                  const {{ p }}_quant_params_t& p) {
  if (p.round_type == 0 && p.qmax < kRoundsExactlyBelow) {
    const float qmax = static_cast<float>(p.qmax);
    for (int64_t i = begin; i < end; ++i) store(round_half_even(clip(m * static_cast<float>(in[i]), qmax)), out + i);
  } else {
    for (int64_t i = begin; i < end; ++i) store(quantize_one(static_cast<float>(in[i]), m, s, p), out + i);
  }
}

// Calls f(begin, end, channel) over the runs of consecutive elements of one channel of a
// [outer, channels, inner] array, split across the worker threads.
template <typename F>
void for_each_run(const {{ p }}_quant_params_t& p, F&& f) {
  parallel_for(quant_numel(&p), 4, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end;) {
      const int64_t row = i / p.inner, stop = std::min(end, (row + 1) * p.inner);
      f(i, stop, row % p.channels);
      i = stop;
    }
  });
}

// Calls f(index, channel) over a [outer, channels, inner] array.
template <typename F>
void for_each_channel(const {{ p }}_quant_params_t& p, F&& f) {
  int64_t i = 0;
  for (int64_t o = 0; o < p.outer; ++o)
    for (int64_t c = 0; c < p.channels; ++c)
      for (int64_t k = 0; k < p.inner; ++k) f(i++, c);
}

// The [K = in_channels/groups * kernel_h * kernel_w, out_h * out_w] patches of one image and group
// (zero where the window leaves the image): im2col, in int8.
void im2col_int8(const {{ p }}_conv2d_params_t& p, const int8_t* x, int64_t group, int8_t* col) {
  const int64_t icg = p.in_channels / p.groups, plane = p.out_h * p.out_w;
  for (int64_t ic = 0; ic < icg; ++ic) {
    const int8_t* image = x + (group * icg + ic) * p.in_h * p.in_w;
    for (int64_t kh = 0; kh < p.kernel_h; ++kh)
      for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
        int8_t* row = col + ((ic * p.kernel_h + kh) * p.kernel_w + kw) * plane;
        for (int64_t oh = 0; oh < p.out_h; ++oh) {
          const int64_t ih = oh * p.stride_h - p.pad_top + kh * p.dilation_h;
          int8_t* out = row + oh * p.out_w;
          if (ih < 0 || ih >= p.in_h) {
            std::fill(out, out + p.out_w, int8_t{0});
            continue;
          }
          for (int64_t ow = 0; ow < p.out_w; ++ow) {
            const int64_t iw = ow * p.stride_w - p.pad_left + kw * p.dilation_w;
            out[ow] = iw >= 0 && iw < p.in_w ? image[ih * p.in_w + iw] : int8_t{0};
          }
        }
      }
  }
}

// y[oc, j] = sum_k w[oc, k] * col[k, j] for the output channels [oc_begin, oc_end): weight-stationary
// over column chunks that stay in L1, int16 products summed in int32 (what the compiler vectorizes;
// measured: four output channels per pass over a row, which reads each row once for four, ran 3.7x
// slower on MobileNetV1, its loop no longer vectorized).
void gemm_rows_int8(const int8_t* w, const int8_t* col, int64_t k, int64_t n, int32_t* y, int64_t oc_begin,
                    int64_t oc_end) {
  constexpr int64_t kChunk = 512;
  int32_t sums[kChunk];
  for (int64_t oc = oc_begin; oc < oc_end; ++oc)
    for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
      const int64_t len = std::min(kChunk, n - j0);
      std::fill(sums, sums + len, 0);
      for (int64_t q = 0; q < k; ++q) {
        const int16_t wv = w[oc * k + q];
        if (wv == 0) continue;
        const int8_t* c = col + q * n + j0;
        for (int64_t j = 0; j < len; ++j) sums[j] += static_cast<int16_t>(wv * c[j]);
      }
      std::copy(sums, sums + len, y + oc * n + j0);
    }
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
      for_each_run(params, [&](int64_t begin, int64_t end, int64_t c) {
        const float s = scale[c], m = static_cast<float>(params.qmax) * inverse(s);
        if (out_dtype == {{ NAME }}_FLOAT32) quantize_run(in, as<float>(out), begin, end, m, s, params);
        else quantize_run(in, as<int8_t>(out), begin, end, m, s, params);
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
    for_each_run(params, [&](int64_t begin, int64_t end, int64_t c) {
      const float sc = scale[c];
      if (x_dtype == {{ NAME }}_INT8) {
        for (int64_t i = begin; i < end; ++i) out[i] = dequantize_one(as<int8_t>(x)[i], sc, qmax);
      } else {
        for (int64_t i = begin; i < end; ++i) out[i] = dequantize_one(as<float>(x)[i], sc, qmax);
      }
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

{{ p }}_status_t {{ p }}_conv2d_int8({{ p }}_stream_t s, const {{ p }}_conv2d_params_t* p, const int8_t* x,
                              const int8_t* w, int32_t* y) {
  debug::Trace trace_("conv2d_int8");
  if (!valid_conv(p)) return {{ NAME }}_ERROR_INVALID_VALUE;
  trace_.attr("stride", p->stride_h).attr("pad", p->pad_top).attr("groups", p->groups);
  if (p->batch * p->out_channels * p->out_h * p->out_w == 0) return {{ NAME }}_OK;
  if (!x || !w || !y) return {{ NAME }}_ERROR_INVALID_VALUE;
  const {{ p }}_conv2d_params_t params = *p;
  {{ NAME }}_DEVICE_POINTERS(s, x, w, y);
  {{ NAME }}_SUBMIT(s, {
    if (conv2d_int8_through_float(params, x, w, y)) return;  // (exact, and faster: see there)
    const int64_t ocg = params.out_channels / params.groups, plane = params.out_h * params.out_w;
    const int64_t k = (params.in_channels / params.groups) * params.kernel_h * params.kernel_w;
    // a 1x1 convolution without stride or padding reads x as its patches
    const bool direct = params.kernel_h == 1 && params.kernel_w == 1 && params.stride_h == 1 && params.stride_w == 1 &&
                        params.pad_top == 0 && params.pad_left == 0 && params.out_h == params.in_h &&
                        params.out_w == params.in_w;
    // one (image, group) at a time, its output channels across the threads; or, grouped
    // (depthwise) convolutions, the (image, group) pairs across the threads
    const bool by_group = params.groups > 1;
    const size_t col_size = direct ? 0 : static_cast<size_t>(k * plane);
    if (by_group) {
      parallel_for(params.batch * params.groups, ocg * k * plane, [&](int64_t begin, int64_t end) {
        std::vector<int8_t> col(col_size);
        for (int64_t item = begin; item < end; ++item) {
          const int64_t n = item / params.groups, g = item % params.groups;
          const int8_t* image = x + n * params.in_channels * params.in_h * params.in_w;
          if (!direct) im2col_int8(params, image, g, col.data());
          gemm_rows_int8(w + g * ocg * k, direct ? image + g * k * plane : col.data(), k, plane,
                         y + (n * params.out_channels + g * ocg) * plane, 0, ocg);
        }
      });
    } else {
      std::vector<int8_t> col(col_size);
      for (int64_t n = 0; n < params.batch; ++n) {
        const int8_t* image = x + n * params.in_channels * params.in_h * params.in_w;
        if (!direct) im2col_int8(params, image, 0, col.data());
        const int8_t* patches = direct ? image : col.data();
        parallel_for(ocg, k * plane, [&](int64_t begin, int64_t end) {
          gemm_rows_int8(w, patches, k, plane, y + n * params.out_channels * plane, begin, end);
        });
      }
    }
  });
}

{{ p }}_status_t {{ p }}_gemm_int8({{ p }}_stream_t s, int trans_a, int trans_b, int64_t m, int64_t n,
                            int64_t k, const int8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                            int32_t* c, int64_t ldc) {
  debug::Trace trace_("gemm_int8");
  trace_.attr("m", m).attr("n", n).attr("k", k);
  if (m < 0 || n < 0 || k < 0 || ldc < n || lda < (trans_a ? m : k) || ldb < (trans_b ? k : n))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  if (m == 0 || n == 0) return {{ NAME }}_OK;
  if ((k > 0 && (!a || !b)) || !c) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, a, b, c);
  {{ NAME }}_SUBMIT(s, {
    parallel_for(m, n * k, [&](int64_t begin, int64_t end) {
      std::vector<int32_t> row(static_cast<size_t>(n));
      for (int64_t i = begin; i < end; ++i) {
        std::fill(row.begin(), row.end(), 0);
        for (int64_t q = 0; q < k; ++q) {
          const int32_t av = trans_a ? a[q * lda + i] : a[i * lda + q];
          if (av == 0) continue;
          if (trans_b) {
            for (int64_t j = 0; j < n; ++j) row[j] += av * b[j * ldb + q];
          } else {
            const int8_t* brow = b + q * ldb;
            for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
          }
        }
        std::copy(row.begin(), row.end(), c + i * ldc);
      }
    });
  });
}

{{ p }}_status_t {{ p }}_requantize({{ p }}_stream_t s, const {{ p }}_quant_params_t* p, const int32_t* acc,
                             const float* x_scale, const float* w_scales, {{ p }}_dtype_t out_dtype,
                             const float* out_scale, void* out) {
  debug::Trace trace_("requantize");
  if (out_dtype != {{ NAME }}_FLOAT32 && out_dtype != {{ NAME }}_INT8) return {{ NAME }}_ERROR_UNSUPPORTED;
  if (!valid_layout(p) || (out_dtype == {{ NAME }}_INT8 && (!out_scale || p->qmax > 127)))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  trace_.attr("channels", p->channels).attr("qmax", p->qmax);
  if (quant_numel(p) == 0) return {{ NAME }}_OK;
  if (!acc || !x_scale || !w_scales || !out) return {{ NAME }}_ERROR_INVALID_VALUE;
  const {{ p }}_quant_params_t params = *p;
  {{ NAME }}_DEVICE_POINTERS(s, acc, x_scale, w_scales, out_scale, out);
  {{ NAME }}_SUBMIT(s, {
    const double qmax = params.qmax;
    std::vector<double> factor(static_cast<size_t>(params.channels));
    for (int64_t c = 0; c < params.channels; ++c) factor[c] = (*x_scale / qmax) * (w_scales[c] / qmax);
    const float s = out_scale ? *out_scale : 1.f, m = static_cast<float>(params.qmax) * inverse(s);
    for_each_run(params, [&](int64_t begin, int64_t end, int64_t c) {
      for (int64_t i = begin; i < end; ++i) {
        const float v = static_cast<float>(acc[i] * factor[c]);
        if (out_dtype == {{ NAME }}_FLOAT32) as<float>(out)[i] = v;
        else as<int8_t>(out)[i] = static_cast<int8_t>(quantize_one(v, m, s, params));
      }
    });
  });
}

{{ p }}_status_t {{ p }}_add_int8({{ p }}_stream_t s, int64_t numel, const int8_t* a, const float* a_scale,
                           const int8_t* b, const float* b_scale, int32_t qmax, float* y) {
  debug::Trace trace_("add_int8");
  trace_.attr("numel", numel).attr("qmax", qmax);
  if (numel < 0 || qmax < 1 || qmax > 127) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (numel == 0) return {{ NAME }}_OK;
  if (!a || !a_scale || !b || !b_scale || !y) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, a, a_scale, b, b_scale, y);
  {{ NAME }}_SUBMIT(s, {
    // each operand as dequantize_linear takes it back, then the float add: bit for bit the QDQ
    // program's add of the two dequantized operands
    const float sa = *a_scale, sb = *b_scale, q = static_cast<float>(qmax);
    parallel_for(numel, 4, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) y[i] = dequantize_one(a[i], sa, q) + dequantize_one(b[i], sb, q);
    });
  });
}

{{ p }}_status_t {{ p }}_softmax_int8({{ p }}_stream_t s, int64_t outer, int64_t axis, int64_t inner,
                               const int8_t* x, const float* x_scale, int32_t qmax, float* y) {
  debug::Trace trace_("softmax_int8");
  trace_.attr("outer", outer).attr("axis", axis).attr("inner", inner).attr("qmax", qmax);
  if (outer < 0 || axis < 0 || inner < 0 || qmax < 1 || qmax > 127) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (outer * axis * inner == 0) return {{ NAME }}_OK;
  if (!x || !x_scale || !y) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, x, x_scale, y);
  {{ NAME }}_SUBMIT(s, {
    // x_i - max x is (q_i - max q) steps of the grid: one of 256 values, whose exponentials are a
    // table (what an NPU's int8 softmax looks up instead of computing exp per element)
    const float step = *x_scale / static_cast<float>(qmax);
    float table[256];
    for (int d = 0; d < 256; ++d) table[d] = std::exp(-static_cast<float>(d) * step);
    parallel_for(outer * inner, 4 * axis, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int8_t* in = x + (row / inner) * axis * inner + row % inner;
        float* out = y + (row / inner) * axis * inner + row % inner;
        int top = -128;
        for (int64_t j = 0; j < axis; ++j) top = std::max<int>(top, in[j * inner]);
        double sum = 0;
        for (int64_t j = 0; j < axis; ++j) sum += table[top - in[j * inner]];
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t j = 0; j < axis; ++j) out[j * inner] = table[top - in[j * inner]] * inv;
      }
    });
  });
}

{{ p }}_status_t {{ p }}_concat_int8({{ p }}_stream_t s, int count, const int8_t* const* xs, const float* const* scales,
                              const int64_t* axis_lens, int64_t outer, int64_t inner, int32_t qmax, float* y) {
  debug::Trace trace_("concat_int8");
  trace_.attr("count", count).attr("outer", outer).attr("inner", inner).attr("qmax", qmax);
  if (count < 1 || !xs || !scales || !axis_lens || outer < 0 || inner < 0 || qmax < 1 || qmax > 127)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  // (the lists are the caller's: copied, with each pointer re-pointed at its view, before queueing)
  std::vector<const int8_t*> in(static_cast<size_t>(count));
  std::vector<const float*> in_scales(in.size());
  std::vector<int64_t> lens(in.size());
  int64_t total = 0;
  for (size_t k = 0; k < in.size(); ++k) {
    in[k] = xs[k];
    in_scales[k] = scales[k];
    lens[k] = axis_lens[k];
    if (lens[k] < 0 || !in_scales[k] || (lens[k] > 0 && !in[k]) || !device_views(s, in[k], in_scales[k]))
      return {{ NAME }}_ERROR_INVALID_VALUE;
    total += lens[k];
  }
  if (outer * total * inner == 0) return {{ NAME }}_OK;
  if (!y) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, y);
  {{ NAME }}_SUBMIT(s, {
    // each operand's values rescaled once, as dequantize_linear takes them back
    const float q = static_cast<float>(qmax);
    parallel_for(outer, total * inner, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        float* row = y + o * total * inner;
        for (size_t k = 0; k < in.size(); ++k) {
          const int64_t n = lens[k] * inner;
          const int8_t* src = in[k] + o * n;
          const float sk = *in_scales[k];
          for (int64_t i = 0; i < n; ++i) row[i] = dequantize_one(src[i], sk, q);
          row += n;
        }
      }
    });
  });
}

}  // extern "C"
