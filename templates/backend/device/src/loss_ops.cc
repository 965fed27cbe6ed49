// {{ NAME }} device library: softmax, log-softmax, softmax cross entropy and NLL loss
// (the device side of paddle/kernels/loss_kernels.cc).
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {
namespace {

// Softmax over the middle axis of [outer, axis, inner] (y may be x).
void softmax_rows(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner) {
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
}

}  // namespace
}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_softmax_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, void* y,
                                  int64_t outer, int64_t axis, int64_t inner) {
  debug::Trace trace_("softmax_forward");
  trace_.tensor("x", x, dtype, {outer, axis, inner}).tensor("y", y, dtype, {outer, axis, inner});
  if (!float_body_dtype(dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  {{ NAME }}_DEVICE_POINTERS(s, x, y);
  {{ NAME }}_SUBMIT(s, {
    FloatOperands f(dtype);
    const int64_t numel = outer * axis * inner;
    const float* fx = f.in(x, numel);
    float* fy = f.out(y, numel);
    softmax_rows(fx, fy, outer, axis, inner);
    if (debug::settings().autocompare && x != y) {
      std::vector<float> want(static_cast<size_t>(numel));
      reference::softmax_forward(fx, want.data(), outer, axis, inner);
      debug::compare("softmax_forward", "y", fy, want.data(), numel, debug::dims_string({outer, axis, inner}));
    }
    f.finish();
  });
}

{{ p }}_status_t {{ p }}_softmax_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* y,
                                   const void* dy, void* dx, int64_t outer, int64_t axis, int64_t inner) {
  debug::Trace trace_("softmax_backward");
  trace_.tensor("dy", dy, dtype, {outer, axis, inner}).tensor("dx", dx, dtype, {outer, axis, inner});
  if (!float_body_dtype(dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  {{ NAME }}_DEVICE_POINTERS(s, y, dy, dx);
  {{ NAME }}_SUBMIT(s, {
    FloatOperands f(dtype);
    const int64_t numel = outer * axis * inner;
    const float* fy = f.in(y, numel);
    const float* fdy = f.in(dy, numel);
    float* fdx = f.out(dx, numel);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const int64_t base = o * axis * inner + in;
        float dot = 0.f;
        for (int64_t a = 0; a < axis; ++a) dot += fy[base + a * inner] * fdy[base + a * inner];
        for (int64_t a = 0; a < axis; ++a) fdx[base + a * inner] = fy[base + a * inner] * (fdy[base + a * inner] - dot);
      }
    f.finish();
  });
}

{{ p }}_status_t {{ p }}_softmax_cross_entropy_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* logits,
                                                const void* labels, int soft_label,
                                                int64_t ignore_index, void* softmax,
                                                void* loss, int64_t outer, int64_t classes,
                                                int64_t inner) {
  debug::Trace trace_("softmax_cross_entropy_forward");
  trace_.attr("soft_label", soft_label).attr("ignore_index", ignore_index).tensor("logits", logits, dtype, {outer, classes, inner}).tensor("loss", loss, dtype, {outer, inner});
  if (!float_body_dtype(dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  {{ NAME }}_DEVICE_POINTERS(s, logits, labels, softmax, loss);
  {{ NAME }}_SUBMIT(s, {
    FloatOperands f(dtype);
    const int64_t numel = outer * classes * inner;
    const float* z_all = f.in(logits, numel);
    const float* soft = soft_label ? f.in(labels, numel) : nullptr;
    float* sm = f.out(softmax, numel);
    float* out = f.out(loss, outer * inner);
    softmax_rows(z_all, sm, outer, classes, inner);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const int64_t base = o * classes * inner + in;
        float l = 0.f;
        if (soft_label) {
          for (int64_t c = 0; c < classes; ++c)
            l -= soft[base + c * inner] * std::log(std::max(sm[base + c * inner], 1e-30f));
        } else {
          const int64_t c = static_cast<const int64_t*>(labels)[o * inner + in];
          if (c == ignore_index) {
            l = 0.f;
          } else if (c < 0 || c >= classes) {
            status_ = {{ NAME }}_ERROR_INVALID_VALUE;
            return;
          } else {
            // log-softmax computed from the logits for accuracy
            const float* z = z_all + base;
            float mx = -std::numeric_limits<float>::infinity();
            for (int64_t k = 0; k < classes; ++k) mx = std::max(mx, z[k * inner]);
            double sum = 0.0;
            for (int64_t k = 0; k < classes; ++k) sum += std::exp(static_cast<double>(z[k * inner] - mx));
            l = static_cast<float>(std::log(sum) - (z[c * inner] - mx));
          }
        }
        out[o * inner + in] = l;
      }
    f.finish();
  });
}

{{ p }}_status_t {{ p }}_softmax_cross_entropy_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* softmax,
                                                 const void* labels, int soft_label,
                                                 int64_t ignore_index, const void* dloss,
                                                 void* dlogits, int64_t outer, int64_t classes,
                                                 int64_t inner) {
  debug::Trace trace_("softmax_cross_entropy_backward");
  trace_.attr("soft_label", soft_label).tensor("dloss", dloss, dtype, {outer, inner}).tensor("dlogits", dlogits, dtype, {outer, classes, inner});
  if (!float_body_dtype(dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  {{ NAME }}_DEVICE_POINTERS(s, softmax, labels, dloss, dlogits);
  {{ NAME }}_SUBMIT(s, {
    FloatOperands f(dtype);
    const int64_t numel = outer * classes * inner;
    const float* sm = f.in(softmax, numel);
    const float* soft = soft_label ? f.in(labels, numel) : nullptr;
    const float* dl = f.in(dloss, outer * inner);
    float* dz = f.out(dlogits, numel);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        const int64_t base = o * classes * inner + in;
        const float g = dl[o * inner + in];
        if (soft_label) {
          for (int64_t c = 0; c < classes; ++c) dz[base + c * inner] = g * (sm[base + c * inner] - soft[base + c * inner]);
        } else {
          const int64_t label = static_cast<const int64_t*>(labels)[o * inner + in];
          for (int64_t c = 0; c < classes; ++c)
            dz[base + c * inner] = label == ignore_index ? 0.f : g * (sm[base + c * inner] - (c == label ? 1.f : 0.f));
        }
      }
    f.finish();
  });
}

{{ p }}_status_t {{ p }}_log_softmax_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                      void* y, int64_t outer, int64_t axis, int64_t inner) {
  debug::Trace trace_("log_softmax_forward");
  trace_.tensor("x", x, dtype, {outer, axis, inner}).tensor("y", y, dtype, {outer, axis, inner});
  {{ NAME }}_DEVICE_POINTERS(s, x, y);
  {{ NAME }}_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t in = 0; in < inner; ++in) {
          const T* src = as<T>(x) + o * axis * inner + in;
          T* dst = as<T>(y) + o * axis * inner + in;
          T mx = -std::numeric_limits<T>::infinity();
          for (int64_t a = 0; a < axis; ++a) mx = std::max(mx, src[a * inner]);
          double sum = 0.0;
          for (int64_t a = 0; a < axis; ++a) sum += std::exp(static_cast<double>(src[a * inner] - mx));
          const compute_t<T> log_sum = static_cast<compute_t<T>>(std::log(sum));
          for (int64_t a = 0; a < axis; ++a) dst[a * inner] = src[a * inner] - mx - log_sum;
        }
    });
  });
}

{{ p }}_status_t {{ p }}_log_softmax_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* y,
                                       const void* dy, void* dx, int64_t outer, int64_t axis,
                                       int64_t inner) {
  debug::Trace trace_("log_softmax_backward");
  trace_.tensor("dy", dy, dtype, {outer, axis, inner}).tensor("dx", dx, dtype, {outer, axis, inner});
  {{ NAME }}_DEVICE_POINTERS(s, y, dy, dx);
  {{ NAME }}_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t in = 0; in < inner; ++in) {
          const int64_t base = o * axis * inner + in;
          double sum = 0.0;
          for (int64_t a = 0; a < axis; ++a) sum += as<T>(dy)[base + a * inner];
          for (int64_t a = 0; a < axis; ++a)
            as<T>(dx)[base + a * inner] =
                as<T>(dy)[base + a * inner] - std::exp(as<T>(y)[base + a * inner]) * static_cast<compute_t<T>>(sum);
        }
    });
  });
}

{{ p }}_status_t {{ p }}_nll_loss_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                   const int64_t* target, const void* weight,
                                   {{ p }}_reduction_t reduction, int64_t ignore_index,
                                   int64_t outer, int64_t classes, int64_t inner, void* loss,
                                   void* total_weight) {
  debug::Trace trace_("nll_loss_forward");
  trace_.attr("reduction", static_cast<int>(reduction)).attr("ignore_index", ignore_index).tensor("x", x, dtype, {outer, classes, inner}).tensor("target", target, {{ NAME }}_INT64, {outer, inner});
  {{ NAME }}_DEVICE_POINTERS(s, x, target, weight, loss, total_weight);
  {{ NAME }}_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      double sum = 0.0, weights = 0.0;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t in = 0; in < inner; ++in) {
          const int64_t t = target[o * inner + in];
          double l = 0.0;
          if (t != ignore_index) {
            if (t < 0 || t >= classes) {
              status_ = {{ NAME }}_ERROR_INVALID_VALUE;
              return;
            }
            const double w = weight ? static_cast<double>(as<T>(weight)[t]) : 1.0;
            l = -w * as<T>(x)[(o * classes + t) * inner + in];
            weights += w;
          }
          if (reduction == {{ NAME }}_REDUCTION_NONE) as<T>(loss)[o * inner + in] = static_cast<T>(l);
          sum += l;
        }
      // A mean over no counted targets is 0/0 = NaN, as in PyTorch.
      if (reduction == {{ NAME }}_REDUCTION_SUM) as<T>(loss)[0] = static_cast<T>(sum);
      if (reduction == {{ NAME }}_REDUCTION_MEAN) as<T>(loss)[0] = static_cast<T>(sum / weights);
      as<T>(total_weight)[0] = static_cast<T>(weights);
    });
  });
}

{{ p }}_status_t {{ p }}_nll_loss_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* dloss,
                                    const int64_t* target, const void* weight,
                                    {{ p }}_reduction_t reduction, int64_t ignore_index,
                                    const void* total_weight, int64_t outer, int64_t classes,
                                    int64_t inner, void* dx) {
  debug::Trace trace_("nll_loss_backward");
  trace_.attr("reduction", static_cast<int>(reduction)).attr("ignore_index", ignore_index).tensor("dx", dx, dtype, {outer, classes, inner});
  {{ NAME }}_DEVICE_POINTERS(s, dloss, target, weight, total_weight, dx);
  {{ NAME }}_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      std::fill(as<T>(dx), as<T>(dx) + outer * classes * inner, T(0));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t in = 0; in < inner; ++in) {
          const int64_t t = target[o * inner + in];
          if (t == ignore_index) continue;
          if (t < 0 || t >= classes) {
            status_ = {{ NAME }}_ERROR_INVALID_VALUE;
            return;
          }
          compute_t<T> g = reduction == {{ NAME }}_REDUCTION_NONE ? as<T>(dloss)[o * inner + in] : as<T>(dloss)[0];
          if (reduction == {{ NAME }}_REDUCTION_MEAN) g /= as<T>(total_weight)[0];
          as<T>(dx)[(o * classes + t) * inner + in] = T(-(weight ? compute_t<T>(as<T>(weight)[t]) : 1) * g);
        }
    });
  });
}

}  // extern "C"
