// {{ NAME }} device library: scale, transpose, pad and pitched 2-D copies (cast is in movement_ops.cc)
// (the device side of paddle/kernels/shape_kernels.cc).
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "debug.h"
#include "internal.h"

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_scale({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, void* out,
                        int64_t numel, double scale, double bias, int bias_after_scale) {
  debug::Trace trace_("scale");
  trace_.attr("scale", scale).attr("bias", bias).attr("bias_after_scale", bias_after_scale).tensor("x", x, dtype, {numel}).tensor("out", out, dtype, {numel});
  {{ NAME }}_DEVICE_POINTERS(s, x, out);
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
  keep_n(perm, x_shape->ndim);
  keep(x_shape);
  {{ NAME }}_DEVICE_POINTERS(s, x, out);
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
  keep_n(pads_before, x_shape->ndim);
  keep(x_shape, out_shape);
  {{ NAME }}_DEVICE_POINTERS(s, x, out);
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
  {{ NAME }}_DEVICE_POINTERS(s, dst, src);
  {{ NAME }}_SUBMIT(s, {
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(static_cast<char*>(dst) + r * dst_pitch, static_cast<const char*>(src) + r * src_pitch,
                  static_cast<size_t>(width_bytes));
  });
}

}  // extern "C"
