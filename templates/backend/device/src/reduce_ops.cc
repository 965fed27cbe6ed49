// {{ NAME }} device library: reductions, and broadcast (the gradient of sum and mean)
// (the device side of paddle/kernels/reduce_kernels.cc).
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "debug.h"
#include "internal.h"

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_reduce({{ p }}_stream_t s, {{ p }}_reduce_op_t op, {{ p }}_dtype_t dtype,
                         const void* x, const {{ p }}_shape_t* x_shape,
                         const int* reduce_mask, void* out) {
  debug::Trace trace_("reduce");
  trace_.attr("op", static_cast<int>(op)).tensor("x", x, dtype, x_shape);
  if (!x_shape || (!reduce_mask && x_shape->ndim > 0)) return {{ NAME }}_ERROR_INVALID_VALUE;
  int64_t out_numel = 1, group = 1;
  for (int d = 0; d < x_shape->ndim; ++d) (reduce_mask[d] ? group : out_numel) *= x_shape->dims[d];
  keep_n(reduce_mask, x_shape->ndim);
  keep(x_shape);
  {{ NAME }}_DEVICE_POINTERS(s, x, out);
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          using Acc = typename std::conditional<is_real<T>, double, int64_t>::type;
          const T* a = static_cast<const T*>(x);
          std::vector<Acc> acc(out_numel, op == {{ NAME }}_REDUCE_MAX
                                              ? static_cast<Acc>(std::numeric_limits<T>::lowest())
                                              : Acc(0));
          // Adjacent axes that are both reduced or both kept act as one: NCHW summed over
          // (0, 2, 3) is [N | C | H*W]. The last run is contiguous and read in a tight loop.
          {{ p }}_shape_t outer{};
          std::vector<int> reduced;
          for (int d = 0; d < x_shape->ndim; ++d) {
            if (x_shape->dims[d] == 1) continue;
            const int r = reduce_mask[d] != 0;
            if (outer.ndim > 0 && reduced.back() == r) {
              outer.dims[outer.ndim - 1] *= x_shape->dims[d];
            } else {
              outer.dims[outer.ndim++] = x_shape->dims[d];
              reduced.push_back(r);
            }
          }
          const int64_t run = outer.ndim > 0 ? outer.dims[--outer.ndim] : 1;
          const bool run_reduced = !reduced.empty() && reduced.back();
          std::vector<int64_t> outer_out(outer.ndim, 0), none(outer.ndim, 0);
          for (int64_t d = outer.ndim - 1, step = run_reduced ? 1 : run; d >= 0; --d)
            if (!reduced[d]) {
              outer_out[d] = step;
              step *= outer.dims[d];
            }
          const bool max = op == {{ NAME }}_REDUCE_MAX;
          for_each_index(outer, outer_out, none, [&](int64_t i, int64_t o, int64_t) {
            const T* src = a + i * run;
            if (run_reduced) {
              Acc r = acc[o];
              if (max) {
                for (int64_t j = 0; j < run; ++j) r = std::max<Acc>(r, static_cast<Acc>(src[j]));
              } else {
                for (int64_t j = 0; j < run; ++j) r += static_cast<Acc>(src[j]);
              }
              acc[o] = r;
            } else if (max) {
              for (int64_t j = 0; j < run; ++j) acc[o + j] = std::max<Acc>(acc[o + j], static_cast<Acc>(src[j]));
            } else {
              for (int64_t j = 0; j < run; ++j) acc[o + j] += static_cast<Acc>(src[j]);
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

{{ p }}_status_t {{ p }}_broadcast({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                            const {{ p }}_shape_t* x_shape, void* out,
                            const {{ p }}_shape_t* out_shape) {
  debug::Trace trace_("broadcast");
  trace_.tensor("x", x, dtype, x_shape).tensor("out", out, dtype, out_shape);
  std::vector<int64_t> sx, zero;
  if (!x_shape || !out_shape || !broadcast_strides(*x_shape, *out_shape, &sx))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  zero.assign(out_shape->ndim, 0);
  keep(x_shape, out_shape);
  {{ NAME }}_DEVICE_POINTERS(s, x, out);
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

}  // extern "C"
