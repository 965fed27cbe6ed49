// Internal helpers shared by the {{ NAME }} device library sources: stream
// submission, dtype dispatch, shapes and broadcasting, the GEMM the matmul and
// convolution ops share, and the device's random number generator. Not part of
// the C API ({{ p }}_device.h); every device/src/*_ops.cc includes this one header.
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

#include "{{ p }}_device.h"

namespace {{ p }} {

// ---- streams (device.cc) ----------------------------------------------------

// The stream used when a caller passes NULL.
{{ p }}_stream_t default_stream();

// Submit `work` to `stream` (NULL: the default stream), keeping the stream's
// ordering bookkeeping. The host-backed device runs it before returning.
void run_on_stream({{ p }}_stream_t stream, const std::function<void()>& work);

// ---- dtype dispatch ---------------------------------------------------------

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

template <typename T>
const T* as(const void* p) {
  return static_cast<const T*>(p);
}
template <typename T>
T* as(void* p) {
  return static_cast<T*>(p);
}

// ---- shapes and broadcasting ------------------------------------------------

inline int64_t numel_of(const {{ p }}_shape_t& s) {
  int64_t n = 1;
  for (int i = 0; i < s.ndim; ++i) n *= s.dims[i];
  return n;
}

inline bool same_shape(const {{ p }}_shape_t& a, const {{ p }}_shape_t& b) {
  if (a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; ++i)
    if (a.dims[i] != b.dims[i]) return false;
  return true;
}

// Strides of `src` viewed in the index space of `dst` (trailing-aligned):
// 0 where src broadcasts. Empty when src cannot broadcast to dst.
inline bool broadcast_strides(const {{ p }}_shape_t& src, const {{ p }}_shape_t& dst,
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

// ---- scratch memory ------------------------------------------------------------

// Work buffers an op needs while it runs (im2col columns, packed GEMM panels), kept per
// thread and slot and reused: allocating megabytes per call costs page faults and zeroing
// every time. Contents are undefined; the pointer is valid until the same slot is asked again.
enum class Scratch { kConvColumns, kConvRows, kGemmPanel, kCount };
float* scratch(Scratch slot, size_t floats);

// ---- threads (device.cc) ----------------------------------------------------

// Worker threads of the host-backed device: {{ NAME }}_NUM_THREADS, else the CPU count.
int64_t worker_threads();

// How many threads n items of cost_per_item (about flops) are worth: 1 when the work is too
// small to pay for starting a thread.
int64_t threads_for(int64_t n, int64_t cost_per_item);

// Runs f(begin, end) over [0, n) in `threads` contiguous chunks, one per thread.
void run_chunks(int64_t n, int64_t threads, const std::function<void(int64_t, int64_t)>& f);

// Runs f(begin, end) over [0, n), split across worker threads when the work pays for it;
// small work runs inline, without wrapping f in a std::function (tiny ops stay cheap).
template <typename F>
void parallel_for(int64_t n, int64_t cost_per_item, F&& f) {
  const int64_t threads = threads_for(n, cost_per_item);
  if (threads > 1) {
    run_chunks(n, threads, f);
  } else if (n > 0) {
    f(int64_t{0}, n);
  }
}

// ---- GEMM (matmul_ops.cc; convolutions use it too) ---------------------------

// Row-major C[m,n] = alpha*op(A)[m,k]*op(B)[k,n] + beta*C, where op(X) = X^T when
// its flag is set (transposes cost nothing extra: they are folded into packing).
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// ---- random numbers ----------------------------------------------------------

// splitmix64: a counter-based generator, identical on every architecture.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace {{ p }}

// ---- op bodies ----------------------------------------------------------------

// Runs the statements on `stream` and returns status_, which they may set.
#define {{ NAME }}_SUBMIT(stream, ...)                         \
  do {                                                      \
    {{ p }}_status_t status_ = {{ NAME }}_OK;                 \
    {{ p }}::run_on_stream(stream, [&] { __VA_ARGS__; });     \
    return status_;                                         \
  } while (0)

// Runs the statements with T the floating-point type of `dtype`; sets status_
// to UNSUPPORTED for other dtypes. For use inside {{ NAME }}_SUBMIT.
#define {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, ...)                \
  if (!{{ p }}::dispatch_float(dtype, [&](auto tag_) {            \
        using T = typename decltype(tag_)::type;                \
        __VA_ARGS__;                                            \
      }))                                                       \
  status_ = {{ NAME }}_ERROR_UNSUPPORTED
