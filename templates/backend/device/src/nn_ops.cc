// {{ NAME }} device library: normalization, GELU, dropout, gather and strided copies.
//
// Host-backed implementations of the ops ordinary models need beyond LeNet
// (declared in {{ p }}_device.h). Statistics accumulate in double so float32
// results stay close to a framework's CPU kernels. A vendor replaces each body
// with a launch on the device; signatures stay.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {
namespace {

template <typename T>
struct NnTag {
  using type = T;
};

template <typename F>
bool dispatch_real({{ p }}_dtype_t dtype, F&& f) {
  switch (dtype) {
    case {{ NAME }}_FLOAT32: f(NnTag<float>{}); return true;
    case {{ NAME }}_FLOAT64: f(NnTag<double>{}); return true;
    default: return false;
  }
}

template <typename F>
bool dispatch_any({{ p }}_dtype_t dtype, F&& f) {
  switch (dtype) {
    case {{ NAME }}_BOOL: f(NnTag<bool>{}); return true;
    case {{ NAME }}_UINT8: f(NnTag<uint8_t>{}); return true;
    case {{ NAME }}_INT8: f(NnTag<int8_t>{}); return true;
    case {{ NAME }}_INT16: f(NnTag<int16_t>{}); return true;
    case {{ NAME }}_INT32: f(NnTag<int32_t>{}); return true;
    case {{ NAME }}_INT64: f(NnTag<int64_t>{}); return true;
    case {{ NAME }}_FLOAT32: f(NnTag<float>{}); return true;
    case {{ NAME }}_FLOAT64: f(NnTag<double>{}); return true;
  }
  return false;
}

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

template <typename T>
const T* as(const void* p) {
  return static_cast<const T*>(p);
}
template <typename T>
T* as(void* p) {
  return static_cast<T*>(p);
}

// splitmix64, as in ops.cc (the counter-based generator of the device).
uint64_t nn_mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

constexpr double kSqrt1_2 = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

}  // namespace
}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

#define {{ NAME }}_NN_SUBMIT(stream, ...)              \
  do {                                              \
    {{ p }}_status_t status_ = {{ NAME }}_OK;         \
    run_on_stream(stream, [&] { __VA_ARGS__; });    \
    return status_;                                 \
  } while (0)

#define {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, ...)                      \
  if (!dispatch_real(dtype, [&](auto tag_) {                         \
        using T = typename decltype(tag_)::type;                     \
        __VA_ARGS__;                                                 \
      }))                                                            \
  status_ = {{ NAME }}_ERROR_UNSUPPORTED

extern "C" {

{{ p }}_status_t {{ p }}_batch_norm_training({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                      const void* scale, const void* bias, double epsilon,
                                      double momentum, int64_t outer, int64_t channels,
                                      int64_t inner, void* y, void* saved_mean,
                                      void* saved_inv_std, const void* running_mean,
                                      const void* running_var, void* running_mean_out,
                                      void* running_var_out) {
  debug::Trace trace_("batch_norm_training");
  trace_.attr("epsilon", epsilon).attr("momentum", momentum).tensor("x", x, dtype, {outer, channels, inner}).tensor("y", y, dtype, {outer, channels, inner}).tensor("saved_mean", saved_mean, dtype, {channels}).tensor("saved_inv_std", saved_inv_std, dtype, {channels});
  if (outer < 0 || channels < 0 || inner < 0) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_NN_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      const T* in = as<T>(x);
      T* out = as<T>(y);
      const double count = static_cast<double>(outer * inner);
      for (int64_t c = 0; c < channels; ++c) {
        double sum = 0.0;
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) sum += in[(o * channels + c) * inner + i];
        const double mean = count > 0 ? sum / count : 0.0;
        double sq = 0.0;
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            const double d = in[(o * channels + c) * inner + i] - mean;
            sq += d * d;
          }
        const double var = count > 0 ? sq / count : 0.0;
        const double inv_std = 1.0 / std::sqrt(var + epsilon);
        const double a = (scale ? as<T>(scale)[c] : T(1)) * inv_std;
        const double b = (bias ? as<T>(bias)[c] : T(0)) - mean * a;
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t k = (o * channels + c) * inner + i;
            out[k] = static_cast<T>(in[k] * a + b);
          }
        if (saved_mean) as<T>(saved_mean)[c] = static_cast<T>(mean);
        if (saved_inv_std) as<T>(saved_inv_std)[c] = static_cast<T>(inv_std);
        if (running_mean_out)
          as<T>(running_mean_out)[c] =
              static_cast<T>((running_mean ? as<T>(running_mean)[c] : T(0)) * momentum + mean * (1.0 - momentum));
        if (running_var_out)
          as<T>(running_var_out)[c] =
              static_cast<T>((running_var ? as<T>(running_var)[c] : T(1)) * momentum + var * (1.0 - momentum));
      }
    });
  });
}

{{ p }}_status_t {{ p }}_batch_norm_normalize({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                       const void* mean, const void* variance,
                                       const void* scale, const void* bias, double epsilon,
                                       int64_t outer, int64_t channels, int64_t inner, void* y) {
  debug::Trace trace_("batch_norm_normalize");
  trace_.attr("epsilon", epsilon).tensor("x", x, dtype, {outer, channels, inner}).tensor("mean", mean, dtype, {channels}).tensor("variance", variance, dtype, {channels}).tensor("y", y, dtype, {outer, channels, inner});
  if (outer < 0 || channels < 0 || inner < 0 || !mean || !variance) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_NN_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      std::vector<T> a(channels), b(channels);
      for (int64_t c = 0; c < channels; ++c) {
        const T inv = T(1) / std::sqrt(as<T>(variance)[c] + static_cast<T>(epsilon));
        a[c] = (scale ? as<T>(scale)[c] : T(1)) * inv;
        b[c] = (bias ? as<T>(bias)[c] : T(0)) - as<T>(mean)[c] * a[c];
      }
      const T* in = as<T>(x);
      T* out = as<T>(y);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t c = 0; c < channels; ++c)
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t k = (o * channels + c) * inner + i;
            out[k] = in[k] * a[c] + b[c];
          }
    });
  });
}

{{ p }}_status_t {{ p }}_batch_norm_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                      const void* dy, const void* mean, const void* stat,
                                      int global_stats, double epsilon, const void* scale,
                                      int64_t outer, int64_t channels, int64_t inner, void* dx,
                                      void* dscale, void* dbias) {
  debug::Trace trace_("batch_norm_backward");
  trace_.attr("global_stats", global_stats).tensor("x", x, dtype, {outer, channels, inner}).tensor("dy", dy, dtype, {outer, channels, inner}).tensor("dx", dx, dtype, {outer, channels, inner});
  if (outer < 0 || channels < 0 || inner < 0 || !mean || !stat) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_NN_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      const T* in = as<T>(x);
      const T* g = as<T>(dy);
      const double count = static_cast<double>(outer * inner);
      for (int64_t c = 0; c < channels; ++c) {
        const double m = as<T>(mean)[c];
        const double inv_std = global_stats ? 1.0 / std::sqrt(static_cast<double>(as<T>(stat)[c]) + epsilon)
                                            : static_cast<double>(as<T>(stat)[c]);
        double sum_dy = 0.0, sum_dy_xhat = 0.0;
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t k = (o * channels + c) * inner + i;
            sum_dy += g[k];
            sum_dy_xhat += g[k] * (in[k] - m) * inv_std;
          }
        if (dbias) as<T>(dbias)[c] = static_cast<T>(sum_dy);
        if (dscale) as<T>(dscale)[c] = static_cast<T>(sum_dy_xhat);
        if (!dx) continue;
        const double sc = scale ? static_cast<double>(as<T>(scale)[c]) : 1.0;
        T* out = as<T>(dx);
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t k = (o * channels + c) * inner + i;
            if (global_stats || count == 0) {
              out[k] = static_cast<T>(sc * inv_std * g[k]);
            } else {
              const double xhat = (in[k] - m) * inv_std;
              out[k] = static_cast<T>(sc * inv_std * (g[k] - sum_dy / count - xhat * sum_dy_xhat / count));
            }
          }
      }
    });
  });
}

{{ p }}_status_t {{ p }}_layer_norm_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                     const void* scale, const void* bias, double epsilon,
                                     int64_t rows, int64_t cols, void* y, void* mean,
                                     void* variance) {
  debug::Trace trace_("layer_norm_forward");
  trace_.attr("epsilon", epsilon).tensor("x", x, dtype, {rows, cols}).tensor("y", y, dtype, {rows, cols});
  if (rows < 0 || cols < 0) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_NN_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      for (int64_t r = 0; r < rows; ++r) {
        const T* in = as<T>(x) + r * cols;
        T* out = as<T>(y) + r * cols;
        double sum = 0.0;
        for (int64_t c = 0; c < cols; ++c) sum += in[c];
        const double m = cols > 0 ? sum / cols : 0.0;
        double sq = 0.0;
        for (int64_t c = 0; c < cols; ++c) sq += (in[c] - m) * (in[c] - m);
        const double var = cols > 0 ? sq / cols : 0.0;
        const double inv_std = 1.0 / std::sqrt(var + epsilon);
        for (int64_t c = 0; c < cols; ++c) {
          double v = (in[c] - m) * inv_std;
          if (scale) v *= as<T>(scale)[c];
          if (bias) v += as<T>(bias)[c];
          out[c] = static_cast<T>(v);
        }
        if (mean) as<T>(mean)[r] = static_cast<T>(m);
        if (variance) as<T>(variance)[r] = static_cast<T>(var);
      }
    });
  });
}

{{ p }}_status_t {{ p }}_layer_norm_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                      const void* dy, const void* mean, const void* variance,
                                      const void* scale, double epsilon, int64_t rows,
                                      int64_t cols, void* dx, void* dscale, void* dbias) {
  debug::Trace trace_("layer_norm_backward");
  trace_.attr("epsilon", epsilon).tensor("x", x, dtype, {rows, cols}).tensor("dy", dy, dtype, {rows, cols}).tensor("dx", dx, dtype, {rows, cols});
  if (rows < 0 || cols < 0 || !mean || !variance) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_NN_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      std::vector<double> ds(dscale ? cols : 0, 0.0), db(dbias ? cols : 0, 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        const T* in = as<T>(x) + r * cols;
        const T* g = as<T>(dy) + r * cols;
        const double m = as<T>(mean)[r];
        const double inv_std = 1.0 / std::sqrt(static_cast<double>(as<T>(variance)[r]) + epsilon);
        double sum_g = 0.0, sum_g_xhat = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
          const double xhat = (in[c] - m) * inv_std;
          const double gs = g[c] * (scale ? static_cast<double>(as<T>(scale)[c]) : 1.0);
          sum_g += gs;
          sum_g_xhat += gs * xhat;
          if (dscale) ds[c] += g[c] * xhat;
          if (dbias) db[c] += g[c];
        }
        if (!dx) continue;
        T* out = as<T>(dx) + r * cols;
        for (int64_t c = 0; c < cols; ++c) {
          const double xhat = (in[c] - m) * inv_std;
          const double gs = g[c] * (scale ? static_cast<double>(as<T>(scale)[c]) : 1.0);
          out[c] = static_cast<T>(inv_std * (gs - sum_g / cols - xhat * sum_g_xhat / cols));
        }
      }
      for (int64_t c = 0; c < static_cast<int64_t>(ds.size()); ++c) as<T>(dscale)[c] = static_cast<T>(ds[c]);
      for (int64_t c = 0; c < static_cast<int64_t>(db.size()); ++c) as<T>(dbias)[c] = static_cast<T>(db[c]);
    });
  });
}

{{ p }}_status_t {{ p }}_gelu_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, void* out,
                               int64_t numel, int approximate) {
  debug::Trace trace_("gelu_forward");
  trace_.attr("approximate", approximate).tensor("x", x, dtype, {numel}).tensor("out", out, dtype, {numel});
  {{ NAME }}_NN_SUBMIT(s, {
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
  {{ NAME }}_NN_SUBMIT(s, {
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
  {{ NAME }}_NN_SUBMIT(s, {
    if (rng == {{ NAME }}_RNG_MT19937_64) {
      std::mt19937_64 engine(seed);
      std::uniform_real_distribution<float> dist(0, 1);
      for (int64_t i = 0; i < numel; ++i) mask[i] = dist(engine) < p ? 0 : 1;
    } else {
      for (int64_t i = 0; i < numel; ++i) {
        const float u = static_cast<float>(nn_mix64(seed * 0x100000001B3ull + static_cast<uint64_t>(i)) >> 40) /
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
  {{ NAME }}_NN_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      const T* in = as<T>(x);
      T* o = as<T>(out);
      const T sc = static_cast<T>(scale);
      for (int64_t i = 0; i < numel; ++i) o[i] = mask[i] ? in[i] * sc : T(0);
    });
  });
}

{{ p }}_status_t {{ p }}_gather({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, int64_t outer,
                         int64_t axis_size, int64_t inner, {{ p }}_dtype_t index_dtype,
                         const void* index, int64_t num_index, int64_t skip_index, void* out) {
  debug::Trace trace_("gather");
  trace_.attr("skip_index", skip_index).tensor("x", x, dtype, {outer, axis_size, inner}).tensor("index", index, index_dtype, {num_index}).tensor("out", out, dtype, {outer, num_index, inner});
  if (!valid_index_dtype(index_dtype) || outer < 0 || inner < 0 || num_index < 0) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (outer * inner > 0 && !indices_in_range(index_dtype, index, num_index, axis_size, skip_index))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_NN_SUBMIT(s, {
    if (!dispatch_any(dtype, [&](auto tag) {
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
  if (outer * inner > 0 && !indices_in_range(index_dtype, index, num_index, axis_size, skip_index))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_NN_SUBMIT(s, {
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
          for (int64_t i = 0; i < inner; ++i) dst[i] += src[i];
        }
    });
  });
}

{{ p }}_status_t {{ p }}_strided_copy({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                               const {{ p }}_shape_t* dims, const void* src,
                               const int64_t* src_strides, void* dst,
                               const int64_t* dst_strides) {
  debug::Trace trace_("strided_copy");
  if (dims) trace_.tensor("src", src, dtype, dims).tensor("dst", dst, dtype, dims);
  if (!dims || dims->ndim < 0 || dims->ndim > {{ NAME }}_MAX_DIMS || (dims->ndim > 0 && (!src_strides || !dst_strides)))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  int64_t total = 1;
  for (int d = 0; d < dims->ndim; ++d) total *= dims->dims[d];
  if (total > 0 && (!src || !dst)) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_NN_SUBMIT(s, {
    if (!dispatch_any(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* in = as<T>(src);
          T* out = as<T>(dst);
          const int nd = dims->ndim;
          if (total == 0) return;
          if (nd == 0) {
            out[0] = in[0];
            return;
          }
          // odometer over all but the last dimension; the last one is the inner loop
          std::vector<int64_t> idx(nd, 0);
          const int64_t n_inner = dims->dims[nd - 1];
          const int64_t si = src_strides[nd - 1], di = dst_strides[nd - 1];
          int64_t so = 0, dof = 0;
          for (int64_t done = 0; done < total; done += n_inner) {
            if (si == 1 && di == 1) {
              std::copy(in + so, in + so + n_inner, out + dof);
            } else {
              for (int64_t k = 0; k < n_inner; ++k) out[dof + k * di] = in[so + k * si];
            }
            for (int d = nd - 2; d >= 0; --d) {
              ++idx[d];
              so += src_strides[d];
              dof += dst_strides[d];
              if (idx[d] < dims->dims[d]) break;
              so -= src_strides[d] * dims->dims[d];
              dof -= dst_strides[d] * dims->dims[d];
              idx[d] = 0;
            }
          }
        }))
      status_ = {{ NAME }}_ERROR_UNSUPPORTED;
  });
}

}  // extern "C"
