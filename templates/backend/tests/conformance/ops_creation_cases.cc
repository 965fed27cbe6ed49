// Conformance, area ops.creation (device/src/creation_ops.cc): random numbers.
#include <cmath>
#include <vector>

#include "conformance.h"

CONFORMANCE_CASE("ops.creation", random_is_deterministic) {
  Dev<float> da(10000), db(10000);
  REQUIRE_OK({{ p }}_random_uniform(nullptr, da.ptr(), 10000, -1.f, 1.f, 42));
  REQUIRE_OK({{ p }}_random_uniform(nullptr, db.ptr(), 10000, -1.f, 1.f, 42));
  const std::vector<float> a = da.host();
  REQUIRE(a.size() == 10000);
  EXPECT(a == db.host());
  double mean = 0;
  for (float v : a) {
    EXPECT(v >= -1.f && v <= 1.f);
    mean += v;
  }
  EXPECT(std::fabs(mean / a.size()) < 0.05);
}
