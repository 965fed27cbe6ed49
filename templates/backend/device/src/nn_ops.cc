// {{ NAME }} device library: GELU, dropout and gather (embedding)
// (the device side of paddle/kernels/nn_kernels.cc).
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {
namespace {

int64_t index_at({{ p }}_dtype_t index_dtype, const void* index, int64_t j) {
  return index_dtype == {{ NAME }}_INT32 ? static_cast<const int32_t*>(index)[j]
                                      : static_cast<const int64_t*>(index)[j];
}

bool valid_index_dtype({{ p }}_dtype_t d) { return d == {{ NAME }}_INT32 || d == {{ NAME }}_INT64; }

// Bounds check of every index (skip_index entries excepted).
bool indices_in_range({{ p }}_dtype_t index_dtype, const void* index, int64_t n, int64_t size,
                      int64_t skip_index) {
  for (int64_t j = 0; j < n; ++j) {
    const int64_t k = index_at(index_dtype, index, j);
    if (k == skip_index && skip_index >= 0) continue;
    if (k < 0 || k >= size) return false;
  }
  return true;
}

constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

}  // namespace
}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_gelu_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, void* out,
                               int64_t numel, int approximate) {
  debug::Trace trace_("gelu_forward");
  trace_.attr("approximate", approximate).tensor("x", x, dtype, {numel}).tensor("out", out, dtype, {numel});
  {{ NAME }}_DEVICE_POINTERS(s, x, out);
  {{ NAME }}_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      const T* in = as<T>(x);
      T* o = as<T>(out);
      for (int64_t i = 0; i < numel; ++i) {
        const double v = in[i];
        o[i] = static_cast<T>(approximate ? 0.5 * v * (1.0 + std::tanh(kSqrt2OverPi * (v + 0.044715 * v * v * v)))
                                          : 0.5 * v * (1.0 + std::erf(v * kSqrt1_2)));
      }
    });
  });
}

{{ p }}_status_t {{ p }}_gelu_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                const void* dout, void* dx, int64_t numel, int approximate) {
  debug::Trace trace_("gelu_backward");
  trace_.attr("approximate", approximate).tensor("x", x, dtype, {numel}).tensor("dout", dout, dtype, {numel}).tensor("dx", dx, dtype, {numel});
  {{ NAME }}_DEVICE_POINTERS(s, x, dout, dx);
  {{ NAME }}_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      const T* in = as<T>(x);
      const T* g = as<T>(dout);
      T* o = as<T>(dx);
      for (int64_t i = 0; i < numel; ++i) {
        const double v = in[i];
        double d;
        if (approximate) {
          const double u = kSqrt2OverPi * (v + 0.044715 * v * v * v);
          const double t = std::tanh(u);
          d = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * v * v);
        } else {
          d = 0.5 * (1.0 + std::erf(v * kSqrt1_2)) + v * kInvSqrt2Pi * std::exp(-0.5 * v * v);
        }
        o[i] = static_cast<T>(g[i] * d);
      }
    });
  });
}

{{ p }}_status_t {{ p }}_dropout_mask({{ p }}_stream_t s, uint8_t* mask, int64_t numel, float p,
                               uint64_t seed, {{ p }}_rng_t rng) {
  debug::Trace trace_("dropout_mask");
  trace_.attr("p", p).attr("seed", seed).attr("rng", static_cast<int>(rng)).tensor("mask", mask, {{ NAME }}_UINT8, {numel});
  if (numel < 0 || (numel > 0 && !mask) || !(p >= 0.f && p <= 1.f)) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (rng != {{ NAME }}_RNG_COUNTER && rng != {{ NAME }}_RNG_MT19937_64) return {{ NAME }}_ERROR_UNSUPPORTED;
  {{ NAME }}_DEVICE_POINTERS(s, mask);
  {{ NAME }}_SUBMIT(s, {
    if (rng == {{ NAME }}_RNG_MT19937_64) {
      std::mt19937_64 engine(seed);
      std::uniform_real_distribution<float> dist(0, 1);
      for (int64_t i = 0; i < numel; ++i) mask[i] = dist(engine) < p ? 0 : 1;
    } else {
      for (int64_t i = 0; i < numel; ++i) {
        const float u = static_cast<float>(mix64(seed * 0x100000001B3ull + static_cast<uint64_t>(i)) >> 40) /
                        16777216.f;  // [0, 1)
        mask[i] = u < p ? 0 : 1;
      }
    }
  });
}

{{ p }}_status_t {{ p }}_masked_scale({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                               const uint8_t* mask, int64_t numel, double scale, void* out) {
  debug::Trace trace_("masked_scale");
  trace_.attr("scale", scale).tensor("x", x, dtype, {numel}).tensor("mask", mask, {{ NAME }}_UINT8, {numel}).tensor("out", out, dtype, {numel});
  {{ NAME }}_DEVICE_POINTERS(s, x, mask, out);
  {{ NAME }}_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      const T* in = as<T>(x);
      T* o = as<T>(out);
      const compute_t<T> sc = static_cast<compute_t<T>>(scale);
      for (int64_t i = 0; i < numel; ++i) o[i] = mask[i] ? T(in[i] * sc) : T(0);
    });
  });
}

{{ p }}_status_t {{ p }}_gather({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, int64_t outer,
                         int64_t axis_size, int64_t inner, {{ p }}_dtype_t index_dtype,
                         const void* index, int64_t num_index, int64_t skip_index, void* out) {
  debug::Trace trace_("gather");
  trace_.attr("skip_index", skip_index).tensor("x", x, dtype, {outer, axis_size, inner}).tensor("index", index, index_dtype, {num_index}).tensor("out", out, dtype, {outer, num_index, inner});
  if (!valid_index_dtype(index_dtype) || outer < 0 || inner < 0 || num_index < 0) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, x, index, out);
  {{ NAME }}_SUBMIT(s, {
    // (indices are device data: checked where the op runs, an error at the next synchronisation)
    if (outer * inner > 0 && !indices_in_range(index_dtype, index, num_index, axis_size, skip_index)) {
      status_ = {{ NAME }}_ERROR_INVALID_VALUE;
      return;
    }
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* in = as<T>(x);
          T* o = as<T>(out);
          for (int64_t b = 0; b < outer; ++b)
            for (int64_t j = 0; j < num_index; ++j) {
              const int64_t k = index_at(index_dtype, index, j);
              T* dst = o + (b * num_index + j) * inner;
              if (skip_index >= 0 && k == skip_index) {
                std::fill(dst, dst + inner, T(0));
              } else {
                const T* src = in + (b * axis_size + k) * inner;
                std::copy(src, src + inner, dst);
              }
            }
        }))
      status_ = {{ NAME }}_ERROR_UNSUPPORTED;
  });
}

{{ p }}_status_t {{ p }}_gather_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* dout,
                                  int64_t outer, int64_t axis_size, int64_t inner,
                                  {{ p }}_dtype_t index_dtype, const void* index,
                                  int64_t num_index, int64_t skip_index, void* dx) {
  debug::Trace trace_("gather_backward");
  trace_.attr("skip_index", skip_index).tensor("dout", dout, dtype, {outer, num_index, inner}).tensor("index", index, index_dtype, {num_index}).tensor("dx", dx, dtype, {outer, axis_size, inner});
  if (!valid_index_dtype(index_dtype) || outer < 0 || inner < 0 || num_index < 0 || axis_size < 0)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, dout, index, dx);
  {{ NAME }}_SUBMIT(s, {
    if (outer * inner > 0 && !indices_in_range(index_dtype, index, num_index, axis_size, skip_index)) {
      status_ = {{ NAME }}_ERROR_INVALID_VALUE;
      return;
    }
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      const T* g = as<T>(dout);
      T* o = as<T>(dx);
      std::fill(o, o + outer * axis_size * inner, T(0));
      for (int64_t b = 0; b < outer; ++b)
        for (int64_t j = 0; j < num_index; ++j) {
          const int64_t k = index_at(index_dtype, index, j);
          if (skip_index >= 0 && k == skip_index) continue;
          const T* src = g + (b * num_index + j) * inner;
          T* dst = o + (b * axis_size + k) * inner;
          for (int64_t i = 0; i < inner; ++i) dst[i] = T(dst[i] + src[i]);
        }
    });
  });
}

}  // extern "C"
