// Conformance, area ops.activation (device/src/activation_ops.cc): unary ops and their gradients.
#include <cmath>
#include <vector>

#include "conformance.h"

CONFORMANCE_CASE("ops.activation", tanh_and_its_gradient) {
  Dev<float> x(std::vector<float>{1, 2, 3, 4, 5, 6}), out(6), g(6, 1.f);
  REQUIRE_OK({{ p }}_unary(nullptr, {{ NAME }}_UNARY_TANH, {{ NAME }}_FLOAT32, x.ptr(), out.ptr(), 6));
  std::vector<float> want(6), grad(6);
  for (int k = 0; k < 6; ++k) want[k] = std::tanh(k + 1.f), grad[k] = 1.f - want[k] * want[k];
  const std::vector<float> y = out.host();
  REQUIRE(y.size() == 6);
  for (int k = 0; k < 6; ++k) EXPECT(conformance::near(y[k], want[k], 1e-5));
  REQUIRE_OK({{ p }}_unary_grad(nullptr, {{ NAME }}_UNARY_TANH, {{ NAME }}_FLOAT32, out.ptr(), g.ptr(), g.ptr(), 6));
  const std::vector<float> dx = g.host();
  REQUIRE(dx.size() == 6);
  for (int k = 0; k < 6; ++k) EXPECT(conformance::near(dx[k], grad[k], 1e-4));
}
