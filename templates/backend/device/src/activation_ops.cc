// {{ NAME }} device library: element-wise activations and their gradients
// (the device side of paddle/kernels/activation_kernels.cc).
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <cmath>
#include <cstdint>

#include "debug.h"
#include "internal.h"

namespace {

// o[i] = f(a[i]) over [begin, end): one loop per op (the switch stays outside it), so
// the compiler vectorizes the cheap ones.
template <typename T, typename F>
void map_range(const T* a, T* o, int64_t begin, int64_t end, F f) {
  for (int64_t i = begin; i < end; ++i) o[i] = f(a[i]);
}

template <typename T>
void unary_range({{ p }}_unary_op_t op, const T* a, T* o, int64_t begin, int64_t end) {
  switch (op) {
    case {{ NAME }}_UNARY_RELU: map_range(a, o, begin, end, [](T v) { return v > T(0) ? v : T(0); }); break;
    case {{ NAME }}_UNARY_SIGMOID: map_range(a, o, begin, end, [](T v) { return T(1) / (T(1) + std::exp(-v)); }); break;
    case {{ NAME }}_UNARY_TANH: map_range(a, o, begin, end, [](T v) { return std::tanh(v); }); break;
    case {{ NAME }}_UNARY_EXP: map_range(a, o, begin, end, [](T v) { return std::exp(v); }); break;
    case {{ NAME }}_UNARY_SQRT: map_range(a, o, begin, end, [](T v) { return std::sqrt(v); }); break;
    case {{ NAME }}_UNARY_ABS: map_range(a, o, begin, end, [](T v) { return std::abs(v); }); break;
    case {{ NAME }}_UNARY_RELU_KEEP_NAN: map_range(a, o, begin, end, [](T v) { return v <= T(0) ? T(0) : v; }); break;
  }
}

// Rough cost of one element, in the units parallel_for expects (about flops):
// memory-bound ops count a few, transcendental ones a few tens.
int64_t unary_cost({{ p }}_unary_op_t op) {
  return op == {{ NAME }}_UNARY_RELU || op == {{ NAME }}_UNARY_RELU_KEEP_NAN || op == {{ NAME }}_UNARY_ABS ? 4 : 32;
}

}  // namespace

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_unary({{ p }}_stream_t s, {{ p }}_unary_op_t op, {{ p }}_dtype_t dtype,
                        const void* x, void* out, int64_t numel) {
  debug::Trace trace_("unary");
  trace_.attr("op", static_cast<int>(op)).tensor("x", x, dtype, {numel}).tensor("out", out, dtype, {numel});
  if (!real_dtype(dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  {{ NAME }}_DEVICE_POINTERS(s, x, out);
  {{ NAME }}_SUBMIT(s, {
    dispatch_float(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* a = static_cast<const T*>(x);
      T* o = static_cast<T*>(out);
      parallel_for(numel, unary_cost(op), [&](int64_t begin, int64_t end) { unary_range(op, a, o, begin, end); });
    });
  });
}

{{ p }}_status_t {{ p }}_unary_grad({{ p }}_stream_t s, {{ p }}_unary_op_t op, {{ p }}_dtype_t dtype,
                             const void* out, const void* dout, void* dx, int64_t numel) {
  debug::Trace trace_("unary_grad");
  trace_.attr("op", static_cast<int>(op)).tensor("out", out, dtype, {numel}).tensor("dout", dout, dtype, {numel}).tensor("dx", dx, dtype, {numel});
  if (!real_dtype(dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  if (op == {{ NAME }}_UNARY_ABS) return {{ NAME }}_ERROR_UNSUPPORTED;  // needs x, not out
  {{ NAME }}_DEVICE_POINTERS(s, out, dout, dx);
  {{ NAME }}_SUBMIT(s, {
    dispatch_float(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* y = static_cast<const T*>(out);
      const T* dy = static_cast<const T*>(dout);
      T* g = static_cast<T*>(dx);
      // One loop per op, the switch outside it, so each loop vectorizes; split across workers.
      auto each = [&](auto grad) {
        parallel_for(numel, 4, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) g[i] = grad(y[i], dy[i]);
        });
      };
      switch (op) {
        case {{ NAME }}_UNARY_RELU: each([](T v, T d) { return v > T(0) ? d : T(0); }); break;
        case {{ NAME }}_UNARY_RELU_KEEP_NAN: each([](T v, T d) { return v <= T(0) ? T(0) : d; }); break;
        case {{ NAME }}_UNARY_SIGMOID: each([](T v, T d) { return d * v * (T(1) - v); }); break;
        case {{ NAME }}_UNARY_TANH: each([](T v, T d) { return d * (T(1) - v * v); }); break;
        case {{ NAME }}_UNARY_EXP: each([](T v, T d) { return d * v; }); break;
        case {{ NAME }}_UNARY_SQRT: each([](T v, T d) { return d * T(0.5) / v; }); break;
        default: break;
      }
    });
  });
}

}  // extern "C"
