// {{ NAME }} device library: element-wise binary ops with broadcasting, and the
// broadcast gradient sum_to_shape
// (the device side of paddle/kernels/elementwise_kernels.cc).
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <cstdint>
#include <type_traits>
#include <vector>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {
namespace {

template <typename T>
T apply_binary({{ p }}_binary_op_t op, T a, T b) {
  if constexpr (std::is_same<T, bool>::value) {  // bool arithmetic is logical
    return op == {{ NAME }}_BINARY_MUL || op == {{ NAME }}_BINARY_MIN ? (a && b) : (a || b);
  } else {
    switch (op) {
      case {{ NAME }}_BINARY_ADD: return T(a + b);
      case {{ NAME }}_BINARY_SUB: return T(a - b);
      case {{ NAME }}_BINARY_MUL: return T(a * b);
      case {{ NAME }}_BINARY_DIV:
        if constexpr (!is_real<T>) {
          if (b == T(0)) return T(0);
        }
        return T(a / b);
      case {{ NAME }}_BINARY_MAX: return a > b ? a : b;
      case {{ NAME }}_BINARY_MIN: return a < b ? a : b;
      default: return T(0);
    }
  }
}

bool is_comparison({{ p }}_binary_op_t op) { return op >= {{ NAME }}_BINARY_EQUAL; }

// Calls run(f) with f the op as a typed function, so the switch is outside the caller's loops and
// each loop is one operation the compiler vectorizes.
template <typename T, typename Run>
void with_binary_op({{ p }}_binary_op_t op, Run&& run) {
  if constexpr (std::is_same<T, bool>::value) {
    run([op](T x, T y) { return apply_binary(op, x, y); });
  } else {
    switch (op) {
      case {{ NAME }}_BINARY_ADD: run([](T x, T y) { return x + y; }); break;
      case {{ NAME }}_BINARY_SUB: run([](T x, T y) { return x - y; }); break;
      case {{ NAME }}_BINARY_MUL: run([](T x, T y) { return x * y; }); break;
      default: run([op](T x, T y) { return apply_binary(op, x, y); }); break;
    }
  }
}

// o = a (op) b over n elements of equal-shape operands (o may be a or b: in-place ops); large
// tensors are split across the worker threads.
template <typename T>
void flat_binary({{ p }}_binary_op_t op, const T* a, const T* b, T* o, int64_t n) {
  with_binary_op<T>(op, [&](auto f) {
    parallel_for(n, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = f(a[i], b[i]);
    });
  });
}

// o[0, n) = a (op) b along one run of a broadcast: each operand steps by its own stride, 1 or 0
// (a held element: a scalar, a bias) in the cases worth a loop of their own.
template <typename T>
void binary_run({{ p }}_binary_op_t op, const T* a, int64_t ia, const T* b, int64_t ib, T* o, int64_t n) {
  with_binary_op<T>(op, [&](auto f) {
    if (ia == 1 && ib == 0) {
      const T y = b[0];
      for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], y);
    } else if (ia == 0 && ib == 1) {
      const T x = a[0];
      for (int64_t i = 0; i < n; ++i) o[i] = f(x, b[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = f(a[i * ia], b[i * ib]);
    }
  });
}

// o = a (op) b with broadcasting (strides sa, sb over out's shape; 0 along a broadcast
// dimension). Adjacent dimensions both operands step through alike are merged first (a
// per-channel bias over [N, C, H, W] becomes runs of H*W with the bias held; a tensor with a
// scalar, one run), so the work is long runs of binary_run, not a switch per element; the runs
// are split across the worker threads.
template <typename T>
void broadcast_binary({{ p }}_binary_op_t op, const T* a, std::vector<int64_t> sa, const T* b,
                      std::vector<int64_t> sb, T* o, const {{ p }}_shape_t& shape) {
  std::vector<int64_t> dims(shape.dims, shape.dims + shape.ndim);
  for (size_t d = dims.size(); d-- > 1;) {  // merge dimension d into d - 1 where both allow it
    if (sa[d - 1] == sa[d] * dims[d] && sb[d - 1] == sb[d] * dims[d]) {
      dims[d - 1] *= dims[d];
      sa[d - 1] = sa[d];
      sb[d - 1] = sb[d];
      dims.erase(dims.begin() + static_cast<int64_t>(d));
      sa.erase(sa.begin() + static_cast<int64_t>(d));
      sb.erase(sb.begin() + static_cast<int64_t>(d));
    }
  }
  const int64_t total = numel_of(shape);
  if (total == 0) return;
  if (dims.empty()) {  // 0-d
    o[0] = apply_binary(op, a[0], b[0]);
    return;
  }
  const int64_t inner = dims.back(), ia = sa.back(), ib = sb.back();
  if (dims.size() == 1) {
    parallel_for(inner, 1, [&](int64_t begin, int64_t end) {
      binary_run(op, a + begin * ia, ia, b + begin * ib, ib, o + begin, end - begin);
    });
    return;
  }
  parallel_for(total / inner, inner, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t oa = 0, ob = 0;
      for (int64_t d = static_cast<int64_t>(dims.size()) - 2, rest = r; d >= 0; --d) {
        const int64_t i = rest % dims[d];
        rest /= dims[d];
        oa += i * sa[d];
        ob += i * sb[d];
      }
      binary_run(op, a + oa, ia, b + ob, ib, o + r * inner, inner);
    }
  });
}

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

}  // namespace
}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_binary({{ p }}_stream_t s, {{ p }}_binary_op_t op, {{ p }}_dtype_t dtype,
                         const void* x, const {{ p }}_shape_t* x_shape, const void* y,
                         const {{ p }}_shape_t* y_shape, void* out,
                         const {{ p }}_shape_t* out_shape) {
  debug::Trace trace_("binary");
  trace_.attr("op", static_cast<int>(op)).tensor("x", x, dtype, x_shape).tensor("y", y, dtype, y_shape).tensor("out", out, is_comparison(op) ? {{ NAME }}_BOOL : dtype, out_shape);
  if (!x_shape || !y_shape || !out_shape) return {{ NAME }}_ERROR_INVALID_VALUE;
  const bool flat = same_shape(*x_shape, *out_shape) && same_shape(*y_shape, *out_shape);
  std::vector<int64_t> sx, sy;  // broadcast strides: only when shapes differ (no allocation per tiny op)
  if (!flat && (!broadcast_strides(*x_shape, *out_shape, &sx) || !broadcast_strides(*y_shape, *out_shape, &sy)))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  keep(x_shape, y_shape, out_shape);
  {{ NAME }}_DEVICE_POINTERS(s, x, y, out);
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* a = static_cast<const T*>(x);
          const T* b = static_cast<const T*>(y);
          if (is_comparison(op) && flat) {
            bool* o = static_cast<bool*>(out);
            const int64_t n = numel_of(*out_shape);
            for (int64_t i = 0; i < n; ++i) o[i] = apply_compare(op, a[i], b[i]);
          } else if (is_comparison(op)) {
            bool* o = static_cast<bool*>(out);
            for_each_index(*out_shape, sx, sy, [&](int64_t i, int64_t ia, int64_t ib) {
              o[i] = apply_compare(op, a[ia], b[ib]);
            });
          } else if (flat) {
            flat_binary(op, a, b, static_cast<T*>(out), numel_of(*out_shape));
          } else {
            broadcast_binary(op, a, sx, b, sy, static_cast<T*>(out), *out_shape);
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

{{ p }}_status_t {{ p }}_sum_to_shape({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                               const {{ p }}_shape_t* x_shape, void* out,
                               const {{ p }}_shape_t* out_shape) {
  debug::Trace trace_("sum_to_shape");
  trace_.tensor("x", x, dtype, x_shape).tensor("out", out, dtype, out_shape);
  std::vector<int64_t> so, zero;
  if (!x_shape || !out_shape || !broadcast_strides(*out_shape, *x_shape, &so))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  zero.assign(x_shape->ndim, 0);
  keep(x_shape, out_shape);
  {{ NAME }}_DEVICE_POINTERS(s, x, out);
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          using Acc = typename std::conditional<is_real<T>, double, int64_t>::type;
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

}  // extern "C"
