// Conformance, area ops.nn (device/src/nn_ops.cc): GELU, dropout, gather (embedding lookups).
#include <cstdlib>
#include <vector>

#include "conformance.h"

using conformance::near;

CONFORMANCE_CASE("ops.nn", gelu_forward_and_backward) {
  Dev<float> g(std::vector<float>{0.f, 1.f, -1.f}), dgy(3), one(3, 1.f), dgd(3);
  REQUIRE_OK({{ p }}_gelu_forward(nullptr, {{ NAME }}_FLOAT32, g.ptr(), dgy.ptr(), 3, 0));
  const std::vector<float> gy = dgy.host();
  REQUIRE(gy.size() == 3);
  EXPECT(near(gy[0], 0.f) && near(gy[1], 0.841345f) && near(gy[2], -0.158655f));
  REQUIRE_OK({{ p }}_gelu_backward(nullptr, {{ NAME }}_FLOAT32, g.ptr(), one.ptr(), dgd.ptr(), 3, 0));
  const std::vector<float> gd = dgd.host();
  REQUIRE(gd.size() == 3);
  EXPECT(near(gd[0], 0.5f) && near(gd[1], 1.083315f));
}

CONFORMANCE_CASE("ops.nn", dropout_mask_and_scale) {
  Dev<uint8_t> da(10000), db(10000);
  REQUIRE_OK({{ p }}_dropout_mask(nullptr, da.ptr(), 10000, 0.25f, 7, {{ NAME }}_RNG_COUNTER));
  REQUIRE_OK({{ p }}_dropout_mask(nullptr, db.ptr(), 10000, 0.25f, 7, {{ NAME }}_RNG_COUNTER));
  const std::vector<uint8_t> a = da.host();
  REQUIRE(a.size() == 10000);
  EXPECT(a == db.host());
  int dropped = 0;
  for (uint8_t m : a) dropped += m == 0;
  EXPECT(std::abs(dropped - 2500) < 200);
  EXPECT_OK({{ p }}_dropout_mask(nullptr, db.ptr(), 10000, 0.25f, 7, {{ NAME }}_RNG_MT19937_64));
  EXPECT(a != db.host());
  EXPECT_STATUS({{ p }}_dropout_mask(nullptr, db.ptr(), 10, 1.5f, 7, {{ NAME }}_RNG_COUNTER), {{ NAME }}_ERROR_INVALID_VALUE);
  Dev<float> x(std::vector<float>{1, 2, 3}), dout(3);
  Dev<uint8_t> mask(std::vector<uint8_t>{1, 0, 1});
  REQUIRE_OK({{ p }}_masked_scale(nullptr, {{ NAME }}_FLOAT32, x.ptr(), mask.ptr(), 3, 2.0, dout.ptr()));
  EXPECT((dout.host() == std::vector<float>{2, 0, 6}));
}

// x = [[0 1] [2 3] [4 5]]; rows 2, 0, 2 with row 0 the padding row (zeros, no gradient).
CONFORMANCE_CASE("ops.nn", gather_and_backward) {
  Dev<float> x(std::vector<float>{0, 1, 2, 3, 4, 5}), dout(6), ddx(6), ones(6, 1.f);
  Dev<int64_t> idx(std::vector<int64_t>{2, 0, 2});
  REQUIRE_OK({{ p }}_gather(nullptr, {{ NAME }}_FLOAT32, x.ptr(), 1, 3, 2, {{ NAME }}_INT64, idx.ptr(), 3, 0, dout.ptr()));
  EXPECT((dout.host() == std::vector<float>{4, 5, 0, 0, 4, 5}));
  REQUIRE_OK({{ p }}_gather_backward(nullptr, {{ NAME }}_FLOAT32, ones.ptr(), 1, 3, 2, {{ NAME }}_INT64, idx.ptr(), 3,
                                     -1, ddx.ptr()));
  const std::vector<float> dx = ddx.host();
  REQUIRE(dx.size() == 6);
  EXPECT(dx[0] == 1.f && dx[2] == 0.f && dx[4] == 2.f);
}
