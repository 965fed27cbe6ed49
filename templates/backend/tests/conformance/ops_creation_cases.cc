// Conformance, area ops.creation (device/src/creation_ops.cc): fills and random numbers.
#include <cmath>
#include <vector>

#include "conformance.h"

CONFORMANCE_CASE("ops.creation", fill_every_dtype_width) {
  Dev<int64_t> l(4);
  Dev<float> f(4);
  Dev<uint8_t> b(4);
  REQUIRE_OK({{ p }}_fill(nullptr, {{ NAME }}_INT64, l.ptr(), 4, 7));
  EXPECT_OK({{ p }}_fill(nullptr, {{ NAME }}_FLOAT32, f.ptr(), 4, -2.5));
  EXPECT_OK({{ p }}_fill(nullptr, {{ NAME }}_BOOL, b.ptr(), 4, 1));
  EXPECT((l.host() == std::vector<int64_t>{7, 7, 7, 7}));
  EXPECT((f.host() == std::vector<float>(4, -2.5f)));
  EXPECT((b.host() == std::vector<uint8_t>(4, 1)));
}

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
