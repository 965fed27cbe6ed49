// {{ NAME }} device library: SGD and Adam updates
// (the device side of paddle/kernels/optimizer_kernels.cc).
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "debug.h"
#include "internal.h"

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_sgd_update({{ p }}_stream_t s, const float* param, const float* grad,
                             const float* lr, float* param_out, int64_t numel) {
  debug::Trace trace_("sgd_update");
  trace_.tensor("param", param, {{ NAME }}_FLOAT32, {numel}).tensor("grad", grad, {{ NAME }}_FLOAT32, {numel}).tensor("param_out", param_out, {{ NAME }}_FLOAT32, {numel});
  {{ NAME }}_DEVICE_POINTERS(s, param, grad, lr, param_out);
  {{ NAME }}_SUBMIT(s, {
    const float rate = *lr;
    for (int64_t i = 0; i < numel; ++i) param_out[i] = param[i] - rate * grad[i];
  });
}

{{ p }}_status_t {{ p }}_adam_update({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* param,
                              const void* grad, const float* lr, const float* moment1,
                              const float* moment2, const float* beta1_pow, const float* beta2_pow,
                              float beta1, float beta2, float epsilon, void* param_out,
                              float* moment1_out, float* moment2_out, float* beta1_pow_out,
                              float* beta2_pow_out, const float* master, float* master_out,
                              int64_t numel) {
  debug::Trace trace_("adam_update");
  trace_.attr("beta1", beta1).attr("beta2", beta2).attr("epsilon", epsilon).tensor("param", param, dtype, {numel}).tensor("grad", grad, dtype, {numel}).tensor("param_out", param_out, dtype, {numel});
  if (!float_body_dtype(dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  if ((master == nullptr) != (master_out == nullptr)) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, param, grad, lr, moment1, moment2, beta1_pow, beta2_pow, param_out, moment1_out, moment2_out, beta1_pow_out, beta2_pow_out, master, master_out);
  {{ NAME }}_SUBMIT(s, {
    FloatOperands f(dtype);
    const float* g_all = f.in(grad, numel);
    // the weights the step reads and writes: the float32 master copy, else param itself
    const float* w_in = master ? master : f.in(param, numel);
    float* w_out = master ? master_out : f.out(param_out, numel);
    // Paddle's formulation: bias correction folded into the step size, epsilon
    // scaled by sqrt(1 - beta2^t).
    const float b1p = *beta1_pow, b2p = *beta2_pow;
    const float rate = *lr * std::sqrt(1.f - b2p) / (1.f - b1p);
    const float eps = epsilon * std::sqrt(1.f - b2p);
    for (int64_t i = 0; i < numel; ++i) {
      const float g = g_all[i];
      const float m1 = beta1 * moment1[i] + (1.f - beta1) * g;
      const float m2 = beta2 * moment2[i] + (1.f - beta2) * g * g;
      moment1_out[i] = m1;
      moment2_out[i] = m2;
      w_out[i] = w_in[i] - rate * (m1 / (std::sqrt(m2) + eps));
    }
    if (master) {  // param_out: the new master weights in param's dtype
      FloatOperands rounded(dtype);
      std::copy(master_out, master_out + numel, rounded.out(param_out, numel));
      rounded.finish();
    }
    f.finish();
    if (beta1_pow_out) *beta1_pow_out = b1p * beta1;
    if (beta2_pow_out) *beta2_pow_out = b2p * beta2;
  });
}

}  // extern "C"
