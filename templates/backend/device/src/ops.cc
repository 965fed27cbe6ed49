// {{ NAME }} device library: compute ops.
//
// Host-backed reference implementations. They are written to be reasonably
// fast on a CPU (flat loops where shapes allow, im2col + blocked GEMM for
// convolutions) because verification runs them on every build. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {
namespace {

template <typename T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) for the C++ type of `dtype`; false when unsupported.
template <typename F>
bool dispatch({{ p }}_dtype_t dtype, F&& f) {
  switch (dtype) {
    case {{ NAME }}_BOOL: f(Tag<bool>{}); return true;
    case {{ NAME }}_UINT8: f(Tag<uint8_t>{}); return true;
    case {{ NAME }}_INT8: f(Tag<int8_t>{}); return true;
    case {{ NAME }}_INT16: f(Tag<int16_t>{}); return true;
    case {{ NAME }}_INT32: f(Tag<int32_t>{}); return true;
    case {{ NAME }}_INT64: f(Tag<int64_t>{}); return true;
    case {{ NAME }}_FLOAT32: f(Tag<float>{}); return true;
    case {{ NAME }}_FLOAT64: f(Tag<double>{}); return true;
  }
  return false;
}

// The same for the floating-point types only (ops defined on reals).
template <typename F>
bool dispatch_float({{ p }}_dtype_t dtype, F&& f) {
  switch (dtype) {
    case {{ NAME }}_FLOAT32: f(Tag<float>{}); return true;
    case {{ NAME }}_FLOAT64: f(Tag<double>{}); return true;
    default: return false;
  }
}

int64_t numel_of(const {{ p }}_shape_t& s) {
  int64_t n = 1;
  for (int i = 0; i < s.ndim; ++i) n *= s.dims[i];
  return n;
}

bool same_shape(const {{ p }}_shape_t& a, const {{ p }}_shape_t& b) {
  if (a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; ++i)
    if (a.dims[i] != b.dims[i]) return false;
  return true;
}

// Strides of `src` viewed in the index space of `dst` (trailing-aligned):
// 0 where src broadcasts. Empty when src cannot broadcast to dst.
bool broadcast_strides(const {{ p }}_shape_t& src, const {{ p }}_shape_t& dst,
                       std::vector<int64_t>* strides) {
  if (src.ndim > dst.ndim) return false;
  strides->assign(dst.ndim, 0);
  int64_t stride = 1;
  for (int i = src.ndim - 1, j = dst.ndim - 1; i >= 0; --i, --j) {
    if (src.dims[i] == dst.dims[j]) {
      (*strides)[j] = src.dims[i] == 1 ? 0 : stride;
    } else if (src.dims[i] != 1) {
      return false;
    }
    stride *= src.dims[i];
  }
  return true;
}

// Visits every index of `shape` in row-major order, calling
// f(linear_index, offset_a, offset_b) with offsets advanced by the given strides.
template <typename F>
void for_each_index(const {{ p }}_shape_t& shape, const std::vector<int64_t>& sa,
                    const std::vector<int64_t>& sb, F&& f) {
  const int nd = shape.ndim;
  const int64_t total = numel_of(shape);
  if (total == 0) return;
  if (nd == 0) {
    f(0, 0, 0);
    return;
  }
  std::vector<int64_t> idx(nd, 0);
  int64_t oa = 0, ob = 0;
  const int64_t inner = shape.dims[nd - 1];
  const int64_t ia = sa[nd - 1], ib = sb[nd - 1];
  for (int64_t linear = 0; linear < total; linear += inner) {
    for (int64_t k = 0; k < inner; ++k) f(linear + k, oa + k * ia, ob + k * ib);
    // advance the outer dimensions (odometer)
    for (int d = nd - 2; d >= 0; --d) {
      ++idx[d];
      oa += sa[d];
      ob += sb[d];
      if (idx[d] < shape.dims[d]) break;
      oa -= sa[d] * shape.dims[d];
      ob -= sb[d] * shape.dims[d];
      idx[d] = 0;
    }
  }
}

template <typename T>
T apply_binary({{ p }}_binary_op_t op, T a, T b) {
  if constexpr (std::is_same<T, bool>::value) {  // bool arithmetic is logical
    return op == {{ NAME }}_BINARY_MUL || op == {{ NAME }}_BINARY_MIN ? (a && b) : (a || b);
  } else {
    switch (op) {
      case {{ NAME }}_BINARY_ADD: return a + b;
      case {{ NAME }}_BINARY_SUB: return a - b;
      case {{ NAME }}_BINARY_MUL: return a * b;
      case {{ NAME }}_BINARY_DIV: return b == T(0) && !std::is_floating_point<T>::value ? T(0) : a / b;
      case {{ NAME }}_BINARY_MAX: return a > b ? a : b;
      case {{ NAME }}_BINARY_MIN: return a < b ? a : b;
      default: return T(0);
    }
  }
}

bool is_comparison({{ p }}_binary_op_t op) { return op >= {{ NAME }}_BINARY_EQUAL; }

template <typename T>
bool apply_compare({{ p }}_binary_op_t op, T a, T b) {
  switch (op) {
    case {{ NAME }}_BINARY_EQUAL: return a == b;
    case {{ NAME }}_BINARY_NOT_EQUAL: return a != b;
    case {{ NAME }}_BINARY_LESS: return a < b;
    case {{ NAME }}_BINARY_GREATER: return a > b;
    default: return false;
  }
}

// ---- GEMM ----------------------------------------------------------------
// Row-major C[m,n] = alpha*A[m,k]*B[k,n] + beta*C with contiguous A and B.
// Blocked over k and n so the inner loop streams rows of B and C and the
// compiler vectorizes it.
void gemm_nn(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
             const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* crow = c + i * ldc;
    if (beta == 0.f) {
      std::fill(crow, crow + n, 0.f);
    } else if (beta != 1.f) {
      for (int64_t j = 0; j < n; ++j) crow[j] *= beta;
    }
  }
  constexpr int64_t kBlockK = 128, kBlockN = 512;
  for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
    const int64_t k1 = std::min(k, k0 + kBlockK);
    for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
      const int64_t j1 = std::min(n, j0 + kBlockN);
      for (int64_t i = 0; i < m; ++i) {
        float* __restrict crow = c + i * ldc;
        const float* arow = a + i * lda;
        for (int64_t p = k0; p < k1; ++p) {
          const float av = alpha * arow[p];
          if (av == 0.f) continue;
          const float* __restrict brow = b + p * ldb;
          for (int64_t j = j0; j < j1; ++j) crow[j] += av * brow[j];
        }
      }
    }
  }
}

// Copy op(X) (rows x cols after the op) into a dense row-major buffer.
void materialize(const float* x, int64_t ld, bool trans, int64_t rows, int64_t cols,
                 std::vector<float>* out) {
  out->resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      (*out)[r * cols + c] = trans ? x[c * ld + r] : x[r * ld + c];
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  std::vector<float> abuf, bbuf;
  if (ta) {
    materialize(a, lda, true, m, k, &abuf);
    a = abuf.data();
    lda = k;
  }
  if (tb) {
    materialize(b, ldb, true, k, n, &bbuf);
    b = bbuf.data();
    ldb = n;
  }
  gemm_nn(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// ---- convolution helpers ----------------------------------------------------
// col[(c*kh + i)*kw + j][oy*ow + ox] = x[c][oy*sh - pt + i*dh][ox*sw - pl + j*dw]
void im2col(const float* x, int64_t channels, const {{ p }}_conv2d_params_t& p, float* col) {
  const int64_t ohw = p.out_h * p.out_w;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < p.kernel_h; ++i)
      for (int64_t j = 0; j < p.kernel_w; ++j) {
        float* dst = col + ((c * p.kernel_h + i) * p.kernel_w + j) * ohw;
        const float* src = x + c * p.in_h * p.in_w;
        for (int64_t oy = 0; oy < p.out_h; ++oy) {
          const int64_t iy = oy * p.stride_h - p.pad_top + i * p.dilation_h;
          float* drow = dst + oy * p.out_w;
          if (iy < 0 || iy >= p.in_h) {
            std::fill(drow, drow + p.out_w, 0.f);
            continue;
          }
          for (int64_t ox = 0; ox < p.out_w; ++ox) {
            const int64_t ix = ox * p.stride_w - p.pad_left + j * p.dilation_w;
            drow[ox] = (ix >= 0 && ix < p.in_w) ? src[iy * p.in_w + ix] : 0.f;
          }
        }
      }
}

// The adjoint of im2col: accumulates columns back into x (which must be zeroed).
void col2im(const float* col, int64_t channels, const {{ p }}_conv2d_params_t& p, float* x) {
  const int64_t ohw = p.out_h * p.out_w;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < p.kernel_h; ++i)
      for (int64_t j = 0; j < p.kernel_w; ++j) {
        const float* src = col + ((c * p.kernel_h + i) * p.kernel_w + j) * ohw;
        float* dst = x + c * p.in_h * p.in_w;
        for (int64_t oy = 0; oy < p.out_h; ++oy) {
          const int64_t iy = oy * p.stride_h - p.pad_top + i * p.dilation_h;
          if (iy < 0 || iy >= p.in_h) continue;
          for (int64_t ox = 0; ox < p.out_w; ++ox) {
            const int64_t ix = ox * p.stride_w - p.pad_left + j * p.dilation_w;
            if (ix >= 0 && ix < p.in_w) dst[iy * p.in_w + ix] += src[oy * p.out_w + ox];
          }
        }
      }
}

bool valid_conv(const {{ p }}_conv2d_params_t* p) {
  return p && p->groups > 0 && p->in_channels % p->groups == 0 &&
         p->out_channels % p->groups == 0 && p->stride_h > 0 && p->stride_w > 0 &&
         p->dilation_h > 0 && p->dilation_w > 0;
}

// Pooling window [start, end) of output position `o` along one axis.
void pool_window(int64_t o, int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad,
                 bool adaptive, int64_t* start, int64_t* end) {
  if (adaptive) {
    *start = (o * in) / out;
    *end = ((o + 1) * in + out - 1) / out;
    return;
  }
  *start = o * stride - pad;
  *end = *start + k;
}

// The input window of output (oy, ox), clipped to the input, and the divisor
// average pooling uses (with or without the padded cells).
struct PoolWindow {
  int64_t y0, y1, x0, x1, count;
};

PoolWindow pool_window_2d(const {{ p }}_pool2d_params_t& p, int64_t oy, int64_t ox) {
  PoolWindow w;
  pool_window(oy, p.in_h, p.out_h, p.kernel_h, p.stride_h, p.pad_top, p.adaptive, &w.y0, &w.y1);
  pool_window(ox, p.in_w, p.out_w, p.kernel_w, p.stride_w, p.pad_left, p.adaptive, &w.x0, &w.x1);
  const int64_t full = (w.y1 - w.y0) * (w.x1 - w.x0);
  w.y0 = std::max<int64_t>(w.y0, 0);
  w.x0 = std::max<int64_t>(w.x0, 0);
  w.y1 = std::min(w.y1, p.in_h);
  w.x1 = std::min(w.x1, p.in_w);
  w.count = (p.exclusive || p.adaptive) ? (w.y1 - w.y0) * (w.x1 - w.x0) : full;
  return w;
}

// splitmix64: a counter-based generator, identical on every architecture.
uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in (0, 1): 24 random bits, never exactly 0.
float unit_uniform(uint64_t seed, uint64_t counter) {
  return (static_cast<float>(mix64(seed * 0x100000001B3ull + counter) >> 40) + 0.5f) /
         16777216.f;
}

}  // namespace
}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

// Runs the statements on `stream` and returns status_, which they may set.
#define {{ NAME }}_SUBMIT(stream, ...)                    \
  do {                                                 \
    {{ p }}_status_t status_ = {{ NAME }}_OK;            \
    run_on_stream(stream, [&] { __VA_ARGS__; });       \
    return status_;                                    \
  } while (0)

extern "C" {

{{ p }}_status_t {{ p }}_fill({{ p }}_stream_t s, {{ p }}_dtype_t dtype, void* out, int64_t numel,
                       double value) {
  debug::Trace trace_("fill");
  trace_.attr("value", value).tensor("out", out, dtype, {numel});
  if (numel > 0 && !out) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          std::fill_n(static_cast<T*>(out), numel, static_cast<T>(value));
        }))
      status_ = {{ NAME }}_ERROR_UNSUPPORTED;
  });
}

{{ p }}_status_t {{ p }}_cast({{ p }}_stream_t s, {{ p }}_dtype_t in_dtype, const void* x,
                       {{ p }}_dtype_t out_dtype, void* out, int64_t numel) {
  debug::Trace trace_("cast");
  trace_.tensor("x", x, in_dtype, {numel}).tensor("out", out, out_dtype, {numel});
  {{ NAME }}_SUBMIT(s, {
    bool ok = dispatch(in_dtype, [&](auto in_tag) {
      using In = typename decltype(in_tag)::type;
      ok = dispatch(out_dtype, [&](auto out_tag) {
        using Out = typename decltype(out_tag)::type;
        const In* src = static_cast<const In*>(x);
        Out* dst = static_cast<Out*>(out);
        for (int64_t i = 0; i < numel; ++i) dst[i] = static_cast<Out>(src[i]);
      });
    });
    if (!ok) status_ = {{ NAME }}_ERROR_UNSUPPORTED;
  });
}

{{ p }}_status_t {{ p }}_scale({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, void* out,
                        int64_t numel, double scale, double bias, int bias_after_scale) {
  debug::Trace trace_("scale");
  trace_.attr("scale", scale).attr("bias", bias).attr("bias_after_scale", bias_after_scale).tensor("x", x, dtype, {numel}).tensor("out", out, dtype, {numel});
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* src = static_cast<const T*>(x);
          T* dst = static_cast<T*>(out);
          const T sc = static_cast<T>(scale), bi = static_cast<T>(bias);
          for (int64_t i = 0; i < numel; ++i) {
            if constexpr (std::is_same<T, bool>::value) {
              dst[i] = src[i];  // scaling a mask is not meaningful; keep it
            } else {
              dst[i] = bias_after_scale ? src[i] * sc + bi : (src[i] + bi) * sc;
            }
          }
        }))
      status_ = {{ NAME }}_ERROR_UNSUPPORTED;
  });
}

{{ p }}_status_t {{ p }}_binary({{ p }}_stream_t s, {{ p }}_binary_op_t op, {{ p }}_dtype_t dtype,
                         const void* x, const {{ p }}_shape_t* x_shape, const void* y,
                         const {{ p }}_shape_t* y_shape, void* out,
                         const {{ p }}_shape_t* out_shape) {
  debug::Trace trace_("binary");
  trace_.attr("op", static_cast<int>(op)).tensor("x", x, dtype, x_shape).tensor("y", y, dtype, y_shape).tensor("out", out, is_comparison(op) ? {{ NAME }}_BOOL : dtype, out_shape);
  std::vector<int64_t> sx, sy;
  if (!x_shape || !y_shape || !out_shape || !broadcast_strides(*x_shape, *out_shape, &sx) ||
      !broadcast_strides(*y_shape, *out_shape, &sy))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  const bool flat = same_shape(*x_shape, *out_shape) && same_shape(*y_shape, *out_shape);
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* a = static_cast<const T*>(x);
          const T* b = static_cast<const T*>(y);
          if (is_comparison(op)) {
            bool* o = static_cast<bool*>(out);
            for_each_index(*out_shape, sx, sy, [&](int64_t i, int64_t ia, int64_t ib) {
              o[i] = apply_compare(op, a[ia], b[ib]);
            });
          } else if (flat) {
            T* o = static_cast<T*>(out);
            const int64_t n = numel_of(*out_shape);
            for (int64_t i = 0; i < n; ++i) o[i] = apply_binary(op, a[i], b[i]);
          } else {
            T* o = static_cast<T*>(out);
            for_each_index(*out_shape, sx, sy, [&](int64_t i, int64_t ia, int64_t ib) {
              o[i] = apply_binary(op, a[ia], b[ib]);
            });
          }
        }))
      status_ = {{ NAME }}_ERROR_UNSUPPORTED;
    // (in-place ops overwrite an input the reference would read: not compared)
    if (debug::settings().autocompare && dtype == {{ NAME }}_FLOAT32 && !is_comparison(op) && out != x && out != y) {
      std::vector<float> want(static_cast<size_t>(numel_of(*out_shape)));
      reference::binary(op, static_cast<const float*>(x), *x_shape, static_cast<const float*>(y), *y_shape,
                        want.data(), *out_shape);
      debug::compare("binary", "out", static_cast<const float*>(out), want.data(),
                     static_cast<int64_t>(want.size()), debug::shape_string(*out_shape));
    }
  });
}

{{ p }}_status_t {{ p }}_unary({{ p }}_stream_t s, {{ p }}_unary_op_t op, {{ p }}_dtype_t dtype,
                        const void* x, void* out, int64_t numel) {
  debug::Trace trace_("unary");
  trace_.attr("op", static_cast<int>(op)).tensor("x", x, dtype, {numel}).tensor("out", out, dtype, {numel});
  if (dtype != {{ NAME }}_FLOAT32 && dtype != {{ NAME }}_FLOAT64) return {{ NAME }}_ERROR_UNSUPPORTED;
  {{ NAME }}_SUBMIT(s, {
    dispatch_float(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* a = static_cast<const T*>(x);
      T* o = static_cast<T*>(out);
      for (int64_t i = 0; i < numel; ++i) {
        const T v = a[i];
        switch (op) {
          case {{ NAME }}_UNARY_RELU: o[i] = v > T(0) ? v : T(0); break;
          case {{ NAME }}_UNARY_SIGMOID: o[i] = T(1) / (T(1) + std::exp(-v)); break;
          case {{ NAME }}_UNARY_TANH: o[i] = std::tanh(v); break;
          case {{ NAME }}_UNARY_EXP: o[i] = std::exp(v); break;
          case {{ NAME }}_UNARY_SQRT: o[i] = std::sqrt(v); break;
          case {{ NAME }}_UNARY_ABS: o[i] = std::abs(v); break;
        }
      }
    });
  });
}

{{ p }}_status_t {{ p }}_unary_grad({{ p }}_stream_t s, {{ p }}_unary_op_t op, {{ p }}_dtype_t dtype,
                             const void* out, const void* dout, void* dx, int64_t numel) {
  debug::Trace trace_("unary_grad");
  trace_.attr("op", static_cast<int>(op)).tensor("out", out, dtype, {numel}).tensor("dout", dout, dtype, {numel}).tensor("dx", dx, dtype, {numel});
  if (dtype != {{ NAME }}_FLOAT32 && dtype != {{ NAME }}_FLOAT64) return {{ NAME }}_ERROR_UNSUPPORTED;
  if (op == {{ NAME }}_UNARY_ABS) return {{ NAME }}_ERROR_UNSUPPORTED;  // needs x, not out
  {{ NAME }}_SUBMIT(s, {
    dispatch_float(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* y = static_cast<const T*>(out);
      const T* dy = static_cast<const T*>(dout);
      T* g = static_cast<T*>(dx);
      for (int64_t i = 0; i < numel; ++i) {
        switch (op) {
          case {{ NAME }}_UNARY_RELU: g[i] = y[i] > T(0) ? dy[i] : T(0); break;
          case {{ NAME }}_UNARY_SIGMOID: g[i] = dy[i] * y[i] * (T(1) - y[i]); break;
          case {{ NAME }}_UNARY_TANH: g[i] = dy[i] * (T(1) - y[i] * y[i]); break;
          case {{ NAME }}_UNARY_EXP: g[i] = dy[i] * y[i]; break;
          case {{ NAME }}_UNARY_SQRT: g[i] = dy[i] * T(0.5) / y[i]; break;
          default: break;
        }
      }
    });
  });
}

{{ p }}_status_t {{ p }}_reduce({{ p }}_stream_t s, {{ p }}_reduce_op_t op, {{ p }}_dtype_t dtype,
                         const void* x, const {{ p }}_shape_t* x_shape,
                         const int* reduce_mask, void* out) {
  debug::Trace trace_("reduce");
  trace_.attr("op", static_cast<int>(op)).tensor("x", x, dtype, x_shape);
  if (!x_shape || (!reduce_mask && x_shape->ndim > 0)) return {{ NAME }}_ERROR_INVALID_VALUE;
  // Output strides in x's index space: 0 on reduced axes.
  std::vector<int64_t> out_strides(x_shape->ndim, 0), zero(x_shape->ndim, 0), x_strides(x_shape->ndim, 0);
  int64_t stride = 1, out_numel = 1, group = 1;
  for (int d = x_shape->ndim - 1; d >= 0; --d) {
    if (!reduce_mask[d]) {
      out_strides[d] = stride;
      stride *= x_shape->dims[d];
      out_numel *= x_shape->dims[d];
    } else {
      group *= x_shape->dims[d];
    }
  }
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          using Acc = typename std::conditional<std::is_floating_point<T>::value, double, int64_t>::type;
          const T* a = static_cast<const T*>(x);
          std::vector<Acc> acc(out_numel, op == {{ NAME }}_REDUCE_MAX
                                              ? static_cast<Acc>(std::numeric_limits<T>::lowest())
                                              : Acc(0));
          for_each_index(*x_shape, out_strides, zero, [&](int64_t i, int64_t o, int64_t) {
            if (op == {{ NAME }}_REDUCE_MAX) {
              acc[o] = std::max<Acc>(acc[o], static_cast<Acc>(a[i]));
            } else {
              acc[o] += static_cast<Acc>(a[i]);
            }
          });
          T* dst = static_cast<T*>(out);
          for (int64_t o = 0; o < out_numel; ++o)
            dst[o] = static_cast<T>(op == {{ NAME }}_REDUCE_MEAN && group > 0 ? acc[o] / group : acc[o]);
        }))
      status_ = {{ NAME }}_ERROR_UNSUPPORTED;
    if (debug::settings().autocompare && dtype == {{ NAME }}_FLOAT32) {
      std::vector<float> want(static_cast<size_t>(out_numel));
      reference::reduce(op, static_cast<const float*>(x), *x_shape, reduce_mask, want.data());
      debug::compare("reduce", "out", static_cast<const float*>(out), want.data(), out_numel,
                     debug::shape_string(*x_shape) + " reduced");
    }
  });
}

{{ p }}_status_t {{ p }}_sum_to_shape({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                               const {{ p }}_shape_t* x_shape, void* out,
                               const {{ p }}_shape_t* out_shape) {
  debug::Trace trace_("sum_to_shape");
  trace_.tensor("x", x, dtype, x_shape).tensor("out", out, dtype, out_shape);
  std::vector<int64_t> so, zero;
  if (!x_shape || !out_shape || !broadcast_strides(*out_shape, *x_shape, &so))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  zero.assign(x_shape->ndim, 0);
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          using Acc = typename std::conditional<std::is_floating_point<T>::value, double, int64_t>::type;
          std::vector<Acc> acc(numel_of(*out_shape), Acc(0));
          const T* a = static_cast<const T*>(x);
          for_each_index(*x_shape, so, zero,
                         [&](int64_t i, int64_t o, int64_t) { acc[o] += static_cast<Acc>(a[i]); });
          T* dst = static_cast<T*>(out);
          for (size_t o = 0; o < acc.size(); ++o) dst[o] = static_cast<T>(acc[o]);
        }))
      status_ = {{ NAME }}_ERROR_UNSUPPORTED;
  });
}

{{ p }}_status_t {{ p }}_broadcast({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                            const {{ p }}_shape_t* x_shape, void* out,
                            const {{ p }}_shape_t* out_shape) {
  debug::Trace trace_("broadcast");
  trace_.tensor("x", x, dtype, x_shape).tensor("out", out, dtype, out_shape);
  std::vector<int64_t> sx, zero;
  if (!x_shape || !out_shape || !broadcast_strides(*x_shape, *out_shape, &sx))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  zero.assign(out_shape->ndim, 0);
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* a = static_cast<const T*>(x);
          T* o = static_cast<T*>(out);
          for_each_index(*out_shape, sx, zero, [&](int64_t i, int64_t ia, int64_t) { o[i] = a[ia]; });
        }))
      status_ = {{ NAME }}_ERROR_UNSUPPORTED;
  });
}

{{ p }}_status_t {{ p }}_transpose({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                            const {{ p }}_shape_t* x_shape, const int* perm, void* out) {
  debug::Trace trace_("transpose");
  trace_.tensor("x", x, dtype, x_shape);
  if (!x_shape || !perm) return {{ NAME }}_ERROR_INVALID_VALUE;
  const int nd = x_shape->ndim;
  std::vector<int64_t> in_strides(nd, 1);
  for (int d = nd - 2; d >= 0; --d) in_strides[d] = in_strides[d + 1] * x_shape->dims[d + 1];
  {{ p }}_shape_t out_shape;
  out_shape.ndim = nd;
  std::vector<int64_t> src_strides(nd), zero(nd, 0);
  std::vector<bool> seen(nd, false);
  for (int d = 0; d < nd; ++d) {
    if (perm[d] < 0 || perm[d] >= nd || seen[perm[d]]) return {{ NAME }}_ERROR_INVALID_VALUE;
    seen[perm[d]] = true;
    out_shape.dims[d] = x_shape->dims[perm[d]];
    src_strides[d] = in_strides[perm[d]];
  }
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* a = static_cast<const T*>(x);
          T* o = static_cast<T*>(out);
          for_each_index(out_shape, src_strides, zero, [&](int64_t i, int64_t ia, int64_t) { o[i] = a[ia]; });
        }))
      status_ = {{ NAME }}_ERROR_UNSUPPORTED;
  });
}

{{ p }}_status_t {{ p }}_pad({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                      const {{ p }}_shape_t* x_shape, const int64_t* pads_before, double value,
                      void* out, const {{ p }}_shape_t* out_shape) {
  debug::Trace trace_("pad");
  trace_.attr("value", value).tensor("x", x, dtype, x_shape).tensor("out", out, dtype, out_shape);
  if (!x_shape || !out_shape || !pads_before || x_shape->ndim != out_shape->ndim)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  const int nd = x_shape->ndim;
  // x's index space mapped into out: out strides, offset by the leading pads.
  std::vector<int64_t> out_strides(nd, 1), zero(nd, 0);
  for (int d = nd - 2; d >= 0; --d) out_strides[d] = out_strides[d + 1] * out_shape->dims[d + 1];
  int64_t base = 0;
  for (int d = 0; d < nd; ++d) {
    if (pads_before[d] < 0 || pads_before[d] + x_shape->dims[d] > out_shape->dims[d])
      return {{ NAME }}_ERROR_INVALID_VALUE;
    base += pads_before[d] * out_strides[d];
  }
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          T* o = static_cast<T*>(out);
          std::fill_n(o, numel_of(*out_shape), static_cast<T>(value));
          const T* a = static_cast<const T*>(x);
          for_each_index(*x_shape, out_strides, zero, [&](int64_t i, int64_t oi, int64_t) { o[base + oi] = a[i]; });
        }))
      status_ = {{ NAME }}_ERROR_UNSUPPORTED;
  });
}

{{ p }}_status_t {{ p }}_copy_2d({{ p }}_stream_t s, void* dst, int64_t dst_pitch, const void* src,
                          int64_t src_pitch, int64_t width_bytes, int64_t rows) {
  debug::Trace trace_("copy_2d");
  trace_.attr("dst_pitch", dst_pitch).attr("src_pitch", src_pitch).attr("width_bytes", width_bytes).attr("rows", rows);
  if (rows < 0 || width_bytes < 0 || (rows * width_bytes > 0 && (!dst || !src))) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_SUBMIT(s, {
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch,
                  static_cast<size_t>(width_bytes));
  });
}

{{ p }}_status_t {{ p }}_batch_norm_inference({{ p }}_stream_t s, const float* x, const float* mean,
                                       const float* variance, const float* scale, const float* bias,
                                       float epsilon, int64_t batch, int64_t channels, int64_t spatial,
                                       float* y) {
  debug::Trace trace_("batch_norm_inference");
  trace_.attr("epsilon", epsilon).tensor("x", x, {{ NAME }}_FLOAT32, {batch, channels, spatial}).tensor("y", y, {{ NAME }}_FLOAT32, {batch, channels, spatial});
  {{ NAME }}_SUBMIT(s, {
    for (int64_t c = 0; c < channels; ++c) {
      const float inv = 1.f / std::sqrt(variance[c] + epsilon);
      const float a = (scale ? scale[c] : 1.f) * inv;
      const float b = (bias ? bias[c] : 0.f) - mean[c] * a;
      for (int64_t n = 0; n < batch; ++n) {
        const float* src = x + (n * channels + c) * spatial;
        float* dst = y + (n * channels + c) * spatial;
        for (int64_t i = 0; i < spatial; ++i) dst[i] = src[i] * a + b;
      }
    }
  });
}

{{ p }}_status_t {{ p }}_gemm({{ p }}_stream_t s, int trans_a, int trans_b, int64_t m, int64_t n,
                       int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                       int64_t ldb, float beta, float* c, int64_t ldc) {
  debug::Trace trace_("gemm");
  trace_.attr("trans_a", trans_a).attr("trans_b", trans_b).attr("m", m).attr("n", n).attr("k", k).attr("alpha", alpha).attr("beta", beta).tensor("a", a, {{ NAME }}_FLOAT32, {trans_a ? k : m, trans_a ? m : k}).tensor("b", b, {{ NAME }}_FLOAT32, {trans_b ? n : k, trans_b ? k : n}).tensor("c", c, {{ NAME }}_FLOAT32, {m, n});
  if (m < 0 || n < 0 || k < 0 || (m * n > 0 && !c)) return {{ NAME }}_ERROR_INVALID_VALUE;
  const bool compare = debug::settings().autocompare && m * n > 0;
  std::vector<float> c_before;  // beta reads C, which the op overwrites
  if (compare && beta != 0.f) c_before.assign(c, c + (m - 1) * ldc + n);
  {{ NAME }}_SUBMIT(s, {
    gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (compare) {
      std::vector<float> want(static_cast<size_t>((m - 1) * ldc + n)), got(m * n), packed(m * n);
      reference::gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c_before.data(), want.data(), ldc);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          got[i * n + j] = c[i * ldc + j];
          packed[i * n + j] = want[i * ldc + j];
        }
      debug::compare("gemm", "c", got.data(), packed.data(), m * n, debug::dims_string({m, n}));
    }
  });
}

{{ p }}_status_t {{ p }}_conv2d_forward({{ p }}_stream_t s, const {{ p }}_conv2d_params_t* p,
                                 const float* x, const float* w, float* y) {
  debug::Trace trace_("conv2d_forward");
  if (p) trace_.attr("stride", p->stride_h).attr("pad", p->pad_top).attr("dilation", p->dilation_h).attr("groups", p->groups).tensor("x", x, {{ NAME }}_FLOAT32, {p->batch, p->in_channels, p->in_h, p->in_w}).tensor("w", w, {{ NAME }}_FLOAT32, {p->out_channels, p->in_channels / std::max<int64_t>(p->groups, 1), p->kernel_h, p->kernel_w}).tensor("y", y, {{ NAME }}_FLOAT32, {p->batch, p->out_channels, p->out_h, p->out_w});
  if (!valid_conv(p)) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_SUBMIT(s, {
    const int64_t cg = p->in_channels / p->groups, og = p->out_channels / p->groups;
    const int64_t ckk = cg * p->kernel_h * p->kernel_w, ohw = p->out_h * p->out_w;
    std::vector<float> col(static_cast<size_t>(ckk * ohw));
    for (int64_t n = 0; n < p->batch; ++n)
      for (int64_t g = 0; g < p->groups; ++g) {
        im2col(x + (n * p->in_channels + g * cg) * p->in_h * p->in_w, cg, *p, col.data());
        gemm_nn(og, ohw, ckk, 1.f, w + g * og * ckk, ckk, col.data(), ohw, 0.f,
                y + (n * p->out_channels + g * og) * ohw, ohw);
      }
    if (debug::settings().autocompare) {
      std::vector<float> want(static_cast<size_t>(p->batch * p->out_channels * ohw));
      reference::conv2d_forward(*p, x, w, want.data());
      debug::compare("conv2d_forward", "y", y, want.data(), static_cast<int64_t>(want.size()),
                     debug::dims_string({p->batch, p->out_channels, p->out_h, p->out_w}));
    }
  });
}

{{ p }}_status_t {{ p }}_conv2d_backward({{ p }}_stream_t s, const {{ p }}_conv2d_params_t* p,
                                  const float* x, const float* w, const float* dy, float* dx,
                                  float* dw) {
  debug::Trace trace_("conv2d_backward");
  if (p) trace_.attr("groups", p->groups).tensor("dy", dy, {{ NAME }}_FLOAT32, {p->batch, p->out_channels, p->out_h, p->out_w});
  if (!valid_conv(p)) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_SUBMIT(s, {
    const int64_t cg = p->in_channels / p->groups, og = p->out_channels / p->groups;
    const int64_t ckk = cg * p->kernel_h * p->kernel_w, ohw = p->out_h * p->out_w;
    std::vector<float> col(static_cast<size_t>(ckk * ohw));
    if (dw) std::fill(dw, dw + p->out_channels * ckk, 0.f);
    if (dx) std::fill(dx, dx + p->batch * p->in_channels * p->in_h * p->in_w, 0.f);
    for (int64_t n = 0; n < p->batch; ++n)
      for (int64_t g = 0; g < p->groups; ++g) {
        const float* dyg = dy + (n * p->out_channels + g * og) * ohw;
        if (dw) {
          im2col(x + (n * p->in_channels + g * cg) * p->in_h * p->in_w, cg, *p, col.data());
          // dW[og, ckk] += dY[og, ohw] * col^T
          gemm(false, true, og, ckk, ohw, 1.f, dyg, ohw, col.data(), ohw, 1.f, dw + g * og * ckk, ckk);
        }
        if (dx) {
          // dcol[ckk, ohw] = W^T[ckk, og] * dY[og, ohw]
          gemm(true, false, ckk, ohw, og, 1.f, w + g * og * ckk, ckk, dyg, ohw, 0.f, col.data(), ohw);
          col2im(col.data(), cg, *p, dx + (n * p->in_channels + g * cg) * p->in_h * p->in_w);
        }
      }
  });
}

{{ p }}_status_t {{ p }}_pool2d_forward({{ p }}_stream_t s, const {{ p }}_pool2d_params_t* p,
                                 const float* x, float* y) {
  debug::Trace trace_("pool2d_forward");
  if (p) trace_.attr("max", p->is_max).attr("kernel", p->kernel_h).attr("stride", p->stride_h).tensor("x", x, {{ NAME }}_FLOAT32, {p->batch, p->channels, p->in_h, p->in_w}).tensor("y", y, {{ NAME }}_FLOAT32, {p->batch, p->channels, p->out_h, p->out_w});
  if (!p) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_SUBMIT(s, {
    for (int64_t nc = 0; nc < p->batch * p->channels; ++nc) {
      const float* src = x + nc * p->in_h * p->in_w;
      float* dst = y + nc * p->out_h * p->out_w;
      for (int64_t oy = 0; oy < p->out_h; ++oy)
        for (int64_t ox = 0; ox < p->out_w; ++ox) {
          const PoolWindow w = pool_window_2d(*p, oy, ox);
          float acc = p->is_max ? -std::numeric_limits<float>::infinity() : 0.f;
          for (int64_t iy = w.y0; iy < w.y1; ++iy)
            for (int64_t ix = w.x0; ix < w.x1; ++ix) {
              const float v = src[iy * p->in_w + ix];
              acc = p->is_max ? std::max(acc, v) : acc + v;
            }
          if (!p->is_max) acc = w.count > 0 ? acc / w.count : 0.f;
          dst[oy * p->out_w + ox] = acc;
        }
    }
  });
}

{{ p }}_status_t {{ p }}_pool2d_backward({{ p }}_stream_t s, const {{ p }}_pool2d_params_t* p,
                                  const float* x, const float* y, const float* dy, float* dx) {
  debug::Trace trace_("pool2d_backward");
  if (p) trace_.attr("max", p->is_max).tensor("dy", dy, {{ NAME }}_FLOAT32, {p->batch, p->channels, p->out_h, p->out_w}).tensor("dx", dx, {{ NAME }}_FLOAT32, {p->batch, p->channels, p->in_h, p->in_w});
  if (!p) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_SUBMIT(s, {
    std::fill(dx, dx + p->batch * p->channels * p->in_h * p->in_w, 0.f);
    for (int64_t nc = 0; nc < p->batch * p->channels; ++nc) {
      const float* src = x + nc * p->in_h * p->in_w;
      const float* out = y + nc * p->out_h * p->out_w;
      const float* gout = dy + nc * p->out_h * p->out_w;
      float* gin = dx + nc * p->in_h * p->in_w;
      for (int64_t oy = 0; oy < p->out_h; ++oy)
        for (int64_t ox = 0; ox < p->out_w; ++ox) {
          const PoolWindow w = pool_window_2d(*p, oy, ox);
          const float g = gout[oy * p->out_w + ox];
          if (p->is_max) {
            // The gradient goes to the first maximum, as Paddle's CPU kernel does.
            const float m = out[oy * p->out_w + ox];
            bool done = false;
            for (int64_t iy = w.y0; iy < w.y1 && !done; ++iy)
              for (int64_t ix = w.x0; ix < w.x1 && !done; ++ix)
                if (src[iy * p->in_w + ix] == m) {
                  gin[iy * p->in_w + ix] += g;
                  done = true;
                }
          } else if (w.count > 0) {
            for (int64_t iy = w.y0; iy < w.y1; ++iy)
              for (int64_t ix = w.x0; ix < w.x1; ++ix) gin[iy * p->in_w + ix] += g / w.count;
          }
        }
    }
  });
}

{{ p }}_status_t {{ p }}_softmax_forward({{ p }}_stream_t s, const float* x, float* y, int64_t outer,
                                  int64_t axis, int64_t inner) {
  debug::Trace trace_("softmax_forward");
  trace_.tensor("x", x, {{ NAME }}_FLOAT32, {outer, axis, inner}).tensor("y", y, {{ NAME }}_FLOAT32, {outer, axis, inner});
  {{ NAME }}_SUBMIT(s, {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const float* src = x + o * axis * inner + in;
        float* dst = y + o * axis * inner + in;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t a = 0; a < axis; ++a) mx = std::max(mx, src[a * inner]);
        float sum = 0.f;
        for (int64_t a = 0; a < axis; ++a) sum += (dst[a * inner] = std::exp(src[a * inner] - mx));
        for (int64_t a = 0; a < axis; ++a) dst[a * inner] /= sum;
      }
    if (debug::settings().autocompare && x != y) {
      std::vector<float> want(static_cast<size_t>(outer * axis * inner));
      reference::softmax_forward(x, want.data(), outer, axis, inner);
      debug::compare("softmax_forward", "y", y, want.data(), static_cast<int64_t>(want.size()),
                     debug::dims_string({outer, axis, inner}));
    }
  });
}

{{ p }}_status_t {{ p }}_softmax_backward({{ p }}_stream_t s, const float* y, const float* dy,
                                   float* dx, int64_t outer, int64_t axis, int64_t inner) {
  debug::Trace trace_("softmax_backward");
  trace_.tensor("dy", dy, {{ NAME }}_FLOAT32, {outer, axis, inner}).tensor("dx", dx, {{ NAME }}_FLOAT32, {outer, axis, inner});
  {{ NAME }}_SUBMIT(s, {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const int64_t base = o * axis * inner + in;
        float dot = 0.f;
        for (int64_t a = 0; a < axis; ++a) dot += y[base + a * inner] * dy[base + a * inner];
        for (int64_t a = 0; a < axis; ++a)
          dx[base + a * inner] = y[base + a * inner] * (dy[base + a * inner] - dot);
      }
  });
}

{{ p }}_status_t {{ p }}_softmax_cross_entropy_forward({{ p }}_stream_t s, const float* logits,
                                                const void* labels, int soft_label,
                                                int64_t ignore_index, float* softmax,
                                                float* loss, int64_t outer, int64_t classes,
                                                int64_t inner) {
  debug::Trace trace_("softmax_cross_entropy_forward");
  trace_.attr("soft_label", soft_label).attr("ignore_index", ignore_index).tensor("logits", logits, {{ NAME }}_FLOAT32, {outer, classes, inner}).tensor("loss", loss, {{ NAME }}_FLOAT32, {outer, inner});
  {{ p }}_status_t st = {{ p }}_softmax_forward(s, logits, softmax, outer, classes, inner);
  if (st != {{ NAME }}_OK) return st;
  {{ NAME }}_SUBMIT(s, {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const int64_t base = o * classes * inner + in;
        float l = 0.f;
        if (soft_label) {
          const float* lab = static_cast<const float*>(labels);
          for (int64_t c = 0; c < classes; ++c)
            l -= lab[base + c * inner] * std::log(std::max(softmax[base + c * inner], 1e-30f));
        } else {
          const int64_t c = static_cast<const int64_t*>(labels)[o * inner + in];
          if (c == ignore_index) {
            l = 0.f;
          } else if (c < 0 || c >= classes) {
            status_ = {{ NAME }}_ERROR_INVALID_VALUE;
            return;
          } else {
            // log-softmax computed from the logits for accuracy
            const float* z = logits + base;
            float mx = -std::numeric_limits<float>::infinity();
            for (int64_t k = 0; k < classes; ++k) mx = std::max(mx, z[k * inner]);
            double sum = 0.0;
            for (int64_t k = 0; k < classes; ++k) sum += std::exp(static_cast<double>(z[k * inner] - mx));
            l = static_cast<float>(std::log(sum) - (z[c * inner] - mx));
          }
        }
        loss[o * inner + in] = l;
      }
  });
}

{{ p }}_status_t {{ p }}_softmax_cross_entropy_backward({{ p }}_stream_t s, const float* softmax,
                                                 const void* labels, int soft_label,
                                                 int64_t ignore_index, const float* dloss,
                                                 float* dlogits, int64_t outer, int64_t classes,
                                                 int64_t inner) {
  debug::Trace trace_("softmax_cross_entropy_backward");
  trace_.attr("soft_label", soft_label).tensor("dloss", dloss, {{ NAME }}_FLOAT32, {outer, inner}).tensor("dlogits", dlogits, {{ NAME }}_FLOAT32, {outer, classes, inner});
  {{ NAME }}_SUBMIT(s, {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const int64_t base = o * classes * inner + in;
        const float g = dloss[o * inner + in];
        if (soft_label) {
          const float* lab = static_cast<const float*>(labels);
          for (int64_t c = 0; c < classes; ++c)
            dlogits[base + c * inner] = g * (softmax[base + c * inner] - lab[base + c * inner]);
        } else {
          const int64_t label = static_cast<const int64_t*>(labels)[o * inner + in];
          for (int64_t c = 0; c < classes; ++c)
            dlogits[base + c * inner] =
                label == ignore_index ? 0.f : g * (softmax[base + c * inner] - (c == label ? 1.f : 0.f));
        }
      }
  });
}

{{ p }}_status_t {{ p }}_argmax({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                         int64_t outer, int64_t axis, int64_t inner, int64_t* out) {
  debug::Trace trace_("argmax");
  trace_.tensor("x", x, dtype, {outer, axis, inner}).tensor("out", out, {{ NAME }}_INT64, {outer, inner});
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* a = static_cast<const T*>(x);
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t in = 0; in < inner; ++in) {
              const T* src = a + o * axis * inner + in;
              int64_t best = 0;
              for (int64_t k = 1; k < axis; ++k)
                if (src[k * inner] > src[best * inner]) best = k;
              out[o * inner + in] = best;
            }
        }))
      status_ = {{ NAME }}_ERROR_UNSUPPORTED;
  });
}

{{ p }}_status_t {{ p }}_topk({{ p }}_stream_t s, const float* x, int64_t outer, int64_t axis,
                       int64_t inner, int64_t k, int largest, float* values, int64_t* indices) {
  debug::Trace trace_("topk");
  trace_.attr("k", k).attr("largest", largest).tensor("x", x, {{ NAME }}_FLOAT32, {outer, axis, inner}).tensor("values", values, {{ NAME }}_FLOAT32, {outer, k, inner});
  if (k < 0 || k > axis) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_SUBMIT(s, {
    std::vector<int64_t> order(axis);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const float* src = x + o * axis * inner + in;
        std::iota(order.begin(), order.end(), 0);
        // stable: equal values keep the lower index first, as Paddle's CPU kernel
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return largest ? src[a * inner] > src[b * inner] : src[a * inner] < src[b * inner];
        });
        for (int64_t j = 0; j < k; ++j) {
          values[(o * k + j) * inner + in] = src[order[j] * inner];
          indices[(o * k + j) * inner + in] = order[j];
        }
      }
  });
}

{{ p }}_status_t {{ p }}_accuracy({{ p }}_stream_t s, const int64_t* indices, const int64_t* labels,
                           int64_t rows, int64_t k, float* accuracy, int32_t* correct,
                           int32_t* total) {
  debug::Trace trace_("accuracy");
  trace_.attr("k", k).tensor("indices", indices, {{ NAME }}_INT64, {rows, k}).tensor("labels", labels, {{ NAME }}_INT64, {rows}).tensor("accuracy", accuracy, {{ NAME }}_FLOAT32, {});
  {{ NAME }}_SUBMIT(s, {
    int32_t hits = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < k; ++j)
        if (indices[r * k + j] == labels[r]) {
          ++hits;
          break;
        }
    *correct = hits;
    *total = static_cast<int32_t>(rows);
    *accuracy = rows > 0 ? static_cast<float>(hits) / static_cast<float>(rows) : 0.f;
  });
}

{{ p }}_status_t {{ p }}_sgd_update({{ p }}_stream_t s, const float* param, const float* grad,
                             const float* lr, float* param_out, int64_t numel) {
  debug::Trace trace_("sgd_update");
  trace_.tensor("param", param, {{ NAME }}_FLOAT32, {numel}).tensor("grad", grad, {{ NAME }}_FLOAT32, {numel}).tensor("param_out", param_out, {{ NAME }}_FLOAT32, {numel});
  {{ NAME }}_SUBMIT(s, {
    const float rate = *lr;
    for (int64_t i = 0; i < numel; ++i) param_out[i] = param[i] - rate * grad[i];
  });
}

{{ p }}_status_t {{ p }}_adam_update({{ p }}_stream_t s, const float* param, const float* grad,
                              const float* lr, const float* moment1, const float* moment2,
                              const float* beta1_pow, const float* beta2_pow, float beta1,
                              float beta2, float epsilon, float* param_out, float* moment1_out,
                              float* moment2_out, float* beta1_pow_out, float* beta2_pow_out,
                              int64_t numel) {
  debug::Trace trace_("adam_update");
  trace_.attr("beta1", beta1).attr("beta2", beta2).attr("epsilon", epsilon).tensor("param", param, {{ NAME }}_FLOAT32, {numel}).tensor("grad", grad, {{ NAME }}_FLOAT32, {numel}).tensor("param_out", param_out, {{ NAME }}_FLOAT32, {numel});
  {{ NAME }}_SUBMIT(s, {
    // Paddle's formulation: bias correction folded into the step size, epsilon
    // scaled by sqrt(1 - beta2^t).
    const float b1p = *beta1_pow, b2p = *beta2_pow;
    const float rate = *lr * std::sqrt(1.f - b2p) / (1.f - b1p);
    const float eps = epsilon * std::sqrt(1.f - b2p);
    for (int64_t i = 0; i < numel; ++i) {
      const float g = grad[i];
      const float m1 = beta1 * moment1[i] + (1.f - beta1) * g;
      const float m2 = beta2 * moment2[i] + (1.f - beta2) * g * g;
      moment1_out[i] = m1;
      moment2_out[i] = m2;
      param_out[i] = param[i] - rate * (m1 / (std::sqrt(m2) + eps));
    }
    if (beta1_pow_out) *beta1_pow_out = b1p * beta1;
    if (beta2_pow_out) *beta2_pow_out = b2p * beta2;
  });
}

{{ p }}_status_t {{ p }}_random_uniform({{ p }}_stream_t s, float* out, int64_t numel, float low,
                                 float high, uint64_t seed) {
  debug::Trace trace_("random_uniform");
  trace_.attr("low", low).attr("high", high).attr("seed", seed).tensor("out", out, {{ NAME }}_FLOAT32, {numel});
  {{ NAME }}_SUBMIT(s, {
    for (int64_t i = 0; i < numel; ++i) out[i] = low + (high - low) * unit_uniform(seed, i);
  });
}

{{ p }}_status_t {{ p }}_random_normal({{ p }}_stream_t s, float* out, int64_t numel, float mean,
                                float stddev, uint64_t seed) {
  debug::Trace trace_("random_normal");
  trace_.attr("mean", mean).attr("stddev", stddev).attr("seed", seed).tensor("out", out, {{ NAME }}_FLOAT32, {numel});
  {{ NAME }}_SUBMIT(s, {
    // Box-Muller on two independent uniforms per element.
    for (int64_t i = 0; i < numel; ++i) {
      const float u1 = unit_uniform(seed, 2 * i), u2 = unit_uniform(seed, 2 * i + 1);
      out[i] = mean + stddev * std::sqrt(-2.f * std::log(u1)) * std::cos(6.2831853f * u2);
    }
  });
}

}  // extern "C"
