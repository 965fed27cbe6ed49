// Conformance, area ops.optimizer (device/src/optimizer_ops.cc): parameter updates.
#include <vector>

#include "conformance.h"

CONFORMANCE_CASE("ops.optimizer", sgd_update) {
  Dev<float> p(std::vector<float>{1, 2, 3}), g(std::vector<float>{1, -1, 0.5f}), lr(std::vector<float>{0.1f});
  REQUIRE_OK({{ p }}_sgd_update(nullptr, p.ptr(), g.ptr(), lr.ptr(), p.ptr(), 3));  // in place
  const std::vector<float> out = p.host();
  REQUIRE(out.size() == 3);
  EXPECT(conformance::near(out[0], 0.9) && conformance::near(out[1], 2.1) && conformance::near(out[2], 2.95));
}
