// Conformance, area ops.shape (device/src/shape_ops.cc): scaling, transposes, 2-D copies.
#include <vector>

#include "conformance.h"

CONFORMANCE_CASE("ops.shape", scale_in_place) {
  Dev<float> x(std::vector<float>{-1.5f, 0.f, 2.7f, 9.f});
  REQUIRE_OK({{ p }}_scale(nullptr, {{ NAME }}_FLOAT32, x.ptr(), x.ptr(), 4, 2.0, 1.0, 0));  // (x + 1) * 2, in place
  const std::vector<float> y = x.host();
  const float want[] = {-1.f, 2.f, 7.4f, 20.f};
  REQUIRE(y.size() == 4);
  for (int k = 0; k < 4; ++k) EXPECT(conformance::near(y[k], want[k], 1e-6));
}

CONFORMANCE_CASE("ops.shape", transpose_and_copy_2d) {
  Dev<int32_t> x(std::vector<int32_t>{0, 1, 2, 3, 4, 5}), t(6), c(std::vector<int32_t>{0, 3, 1, 4, 2, 5});
  const auto xs = conformance::shape({2, 3});
  const int perm[2] = {1, 0};
  REQUIRE_OK({{ p }}_transpose(nullptr, {{ NAME }}_INT32, x.ptr(), &xs, perm, t.ptr()));
  EXPECT((t.host() == std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  REQUIRE_OK({{ p }}_copy_2d(nullptr, c.ptr(), 12, x.ptr() + 1, 12, 8, 2));  // columns 1..2 of x into 0..1 of c
  EXPECT((c.host() == std::vector<int32_t>{1, 2, 1, 4, 5, 5}));
}
