// {{ NAME }} device library: batch norm and layer norm, with their gradients
// (the device side of paddle/kernels/norm_kernels.cc). Statistics accumulate in double
// so float32 results stay close to a framework's CPU kernels.
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <cmath>
#include <cstdint>
#include <vector>

#include "debug.h"
#include "internal.h"

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_batch_norm_inference({{ p }}_stream_t s, const float* x, const float* mean,
                                       const float* variance, const float* scale, const float* bias,
                                       float epsilon, int64_t batch, int64_t channels, int64_t spatial,
                                       float* y) {
  debug::Trace trace_("batch_norm_inference");
  trace_.attr("epsilon", epsilon).tensor("x", x, {{ NAME }}_FLOAT32, {batch, channels, spatial}).tensor("y", y, {{ NAME }}_FLOAT32, {batch, channels, spatial});
  {{ NAME }}_DEVICE_POINTERS(s, x, mean, variance, scale, bias, y);
  {{ NAME }}_SUBMIT(s, {
    // One task per (image, channel) plane; planes are split across worker threads.
    parallel_for(batch * channels, 4 * spatial, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t c = t % channels;
        const float inv = 1.f / std::sqrt(variance[c] + epsilon);
        const float a = (scale ? scale[c] : 1.f) * inv;
        const float b = (bias ? bias[c] : 0.f) - mean[c] * a;
        const float* src = x + t * spatial;
        float* dst = y + t * spatial;
        for (int64_t i = 0; i < spatial; ++i) dst[i] = src[i] * a + b;
      }
    });
  });
}

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
  {{ NAME }}_DEVICE_POINTERS(s, x, scale, bias, y, saved_mean, saved_inv_std, running_mean, running_var, running_mean_out, running_var_out);
  {{ NAME }}_SUBMIT(s, {
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
  {{ NAME }}_DEVICE_POINTERS(s, x, mean, variance, scale, bias, y);
  {{ NAME }}_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      std::vector<compute_t<T>> a(channels), b(channels);
      for (int64_t c = 0; c < channels; ++c) {
        const compute_t<T> inv = 1 / std::sqrt(compute_t<T>(as<T>(variance)[c]) + static_cast<compute_t<T>>(epsilon));
        a[c] = (scale ? as<T>(scale)[c] : T(1)) * inv;
        b[c] = (bias ? as<T>(bias)[c] : T(0)) - as<T>(mean)[c] * a[c];
      }
      const T* in = as<T>(x);
      T* out = as<T>(y);
      parallel_for(outer * channels, 4 * inner, [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          const int64_t c = t % channels;
          for (int64_t i = 0; i < inner; ++i) out[t * inner + i] = in[t * inner + i] * a[c] + b[c];
        }
      });
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
  {{ NAME }}_DEVICE_POINTERS(s, x, dy, mean, stat, scale, dx, dscale, dbias);
  {{ NAME }}_SUBMIT(s, {
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
  {{ NAME }}_DEVICE_POINTERS(s, x, scale, bias, y, mean, variance);
  {{ NAME }}_SUBMIT(s, {
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
  {{ NAME }}_DEVICE_POINTERS(s, x, dy, mean, variance, scale, dx, dscale, dbias);
  {{ NAME }}_SUBMIT(s, {
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

}  // extern "C"
