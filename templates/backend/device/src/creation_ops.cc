// {{ NAME }} device library: random numbers (fill is in movement_ops.cc)
// (the device side of paddle/kernels/creation_kernels.cc).
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <cmath>
#include <cstdint>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {
namespace {

// Uniform in (0, 1): 24 random bits, never exactly 0.
float unit_uniform(uint64_t seed, uint64_t counter) {
  return (static_cast<float>(mix64(seed * 0x100000001B3ull + counter) >> 40) + 0.5f) /
         16777216.f;
}

}  // namespace
}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_random_uniform({{ p }}_stream_t s, float* out, int64_t numel, float low,
                                 float high, uint64_t seed) {
  debug::Trace trace_("random_uniform");
  trace_.attr("low", low).attr("high", high).attr("seed", seed).tensor("out", out, {{ NAME }}_FLOAT32, {numel});
  {{ NAME }}_DEVICE_POINTERS(s, out);
  {{ NAME }}_SUBMIT(s, {
    for (int64_t i = 0; i < numel; ++i) out[i] = low + (high - low) * unit_uniform(seed, i);
  });
}

{{ p }}_status_t {{ p }}_random_normal({{ p }}_stream_t s, float* out, int64_t numel, float mean,
                                float stddev, uint64_t seed) {
  debug::Trace trace_("random_normal");
  trace_.attr("mean", mean).attr("stddev", stddev).attr("seed", seed).tensor("out", out, {{ NAME }}_FLOAT32, {numel});
  {{ NAME }}_DEVICE_POINTERS(s, out);
  {{ NAME }}_SUBMIT(s, {
    // Box-Muller on two independent uniforms per element.
    for (int64_t i = 0; i < numel; ++i) {
      const float u1 = unit_uniform(seed, 2 * i), u2 = unit_uniform(seed, 2 * i + 1);
      out[i] = mean + stddev * std::sqrt(-2.f * std::log(u1)) * std::cos(6.2831853f * u2);
    }
  });
}

}  // extern "C"
