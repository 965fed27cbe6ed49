// Conformance, area ops.optimizer (device/src/optimizer_ops.cc): parameter updates.
#include <cmath>
#include <cstdint>
#include <vector>

#include "conformance.h"

CONFORMANCE_CASE("ops.optimizer", sgd_update) {
  Dev<float> p(std::vector<float>{1, 2, 3}), g(std::vector<float>{1, -1, 0.5f}), lr(std::vector<float>{0.1f});
  REQUIRE_OK({{ p }}_sgd_update(nullptr, p.ptr(), g.ptr(), lr.ptr(), p.ptr(), 3));  // in place
  const std::vector<float> out = p.host();
  REQUIRE(out.size() == 3);
  EXPECT(conformance::near(out[0], 0.9) && conformance::near(out[1], 2.1) && conformance::near(out[2], 2.95));
}

namespace {

// Paddle's Adam step (bias correction folded into the step size), as the case expects it.
float adam_reference(float w, float g, float lr, float b1p, float b2p) {
  const float m1 = 0.1f * g, m2 = 0.001f * g * g;
  const float rate = lr * std::sqrt(1.f - b2p) / (1.f - b1p), eps = 1e-8f * std::sqrt(1.f - b2p);
  return w - rate * (m1 / (std::sqrt(m2) + eps));
}

}  // namespace

CONFORMANCE_CASE("ops.optimizer", adam_update) {
  Dev<float> p(std::vector<float>{1.f, -1.f}), g(std::vector<float>{0.5f, -0.25f}), lr(std::vector<float>{0.1f});
  Dev<float> m1(2, 0.f), m2(2, 0.f), b1p(std::vector<float>{0.9f}), b2p(std::vector<float>{0.999f});
  REQUIRE_OK({{ p }}_adam_update(nullptr, {{ NAME }}_FLOAT32, p.ptr(), g.ptr(), lr.ptr(), m1.ptr(), m2.ptr(), b1p.ptr(),
                                b2p.ptr(), 0.9f, 0.999f, 1e-8f, p.ptr(), m1.ptr(), m2.ptr(), b1p.ptr(), b2p.ptr(), nullptr,
                                nullptr, 2));
  const std::vector<float> w = p.host();
  REQUIRE(w.size() == 2);
  EXPECT(conformance::near(w[0], adam_reference(1.f, 0.5f, 0.1f, 0.9f, 0.999f), 1e-6));
  EXPECT(conformance::near(w[1], adam_reference(-1.f, -0.25f, 0.1f, 0.9f, 0.999f), 1e-6));
  EXPECT(conformance::near(b1p.host().at(0), 0.81) && conformance::near(b2p.host().at(0), 0.999 * 0.999));
  EXPECT(conformance::near(m1.host().at(0), 0.05));
}

// Mixed precision: float16 weights and gradients, float32 master weights. The step updates the
// master copy (a change below float16's resolution is kept there) and rounds it into param.
CONFORMANCE_CASE("ops.optimizer", adam_update_with_float32_master_weights) {
  const float start = 1.0001f;  // not a float16 value: the master copy holds what float16 cannot
  Dev<float> master(std::vector<float>{start}), master_out(1), lr(std::vector<float>{1e-5f});
  Dev<uint16_t> param(std::vector<uint16_t>{0x3c00}), grad(std::vector<uint16_t>{0x3800}), param_out(1);  // 1.0, 0.5
  Dev<float> m1(1, 0.f), m2(1, 0.f), b1p(std::vector<float>{0.9f}), b2p(std::vector<float>{0.999f});
  REQUIRE_OK({{ p }}_adam_update(nullptr, {{ NAME }}_FLOAT16, param.ptr(), grad.ptr(), lr.ptr(), m1.ptr(), m2.ptr(),
                                b1p.ptr(), b2p.ptr(), 0.9f, 0.999f, 1e-8f, param_out.ptr(), m1.ptr(), m2.ptr(), nullptr,
                                nullptr, master.ptr(), master_out.ptr(), 1));
  const float want = adam_reference(start, 0.5f, 1e-5f, 0.9f, 0.999f);
  EXPECT(conformance::near(master_out.host().at(0), want, 1e-7));
  EXPECT(param_out.host().at(0) == 0x3c00);  // want rounds to 1.0 in float16
  EXPECT_STATUS({{ p }}_adam_update(nullptr, {{ NAME }}_FLOAT16, param.ptr(), grad.ptr(), lr.ptr(), m1.ptr(), m2.ptr(),
                                   b1p.ptr(), b2p.ptr(), 0.9f, 0.999f, 1e-8f, param_out.ptr(), m1.ptr(), m2.ptr(), nullptr,
                                   nullptr, master.ptr(), nullptr, 1),
                {{ NAME }}_ERROR_INVALID_VALUE);
}
