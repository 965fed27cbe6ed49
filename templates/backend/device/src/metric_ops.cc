// {{ NAME }} device library: argmax, top-k and accuracy
// (the device side of paddle/kernels/metric_kernels.cc).
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "debug.h"
#include "internal.h"

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_argmax({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                         int64_t outer, int64_t axis, int64_t inner, int64_t* out) {
  debug::Trace trace_("argmax");
  trace_.tensor("x", x, dtype, {outer, axis, inner}).tensor("out", out, {{ NAME }}_INT64, {outer, inner});
  {{ NAME }}_DEVICE_POINTERS(s, x, out);
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
  {{ NAME }}_DEVICE_POINTERS(s, x, values, indices);
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
  {{ NAME }}_DEVICE_POINTERS(s, indices, labels, accuracy, correct, total);
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

}  // extern "C"
