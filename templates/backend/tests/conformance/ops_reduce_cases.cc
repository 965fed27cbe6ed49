// Conformance, area ops.reduce (device/src/reduce_ops.cc): reductions over axes and broadcasts.
#include <vector>

#include "conformance.h"

CONFORMANCE_CASE("ops.reduce", mean_over_axes_and_broadcast) {
  std::vector<double> host(24);
  for (int k = 0; k < 24; ++k) host[k] = k * 0.5;
  Dev<double> x(host), mean(3), b(24);
  const auto xs = conformance::shape({2, 3, 4});
  const int mask[3] = {1, 0, 1};  // reduce axes 0 and 2, keep axis 1
  REQUIRE_OK({{ p }}_reduce(nullptr, {{ NAME }}_REDUCE_MEAN, {{ NAME }}_FLOAT64, x.ptr(), &xs, mask, mean.ptr()));
  std::vector<double> want(3, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want[j] += host[i * 12 + j * 4 + k] / 8;
  const std::vector<double> m = mean.host();
  REQUIRE(m.size() == 3);
  for (int j = 0; j < 3; ++j) EXPECT(conformance::near(m[j], want[j], 1e-12));
  const auto ones = conformance::shape({3, 1}), out = conformance::shape({2, 3, 4});
  REQUIRE_OK({{ p }}_broadcast(nullptr, {{ NAME }}_FLOAT64, mean.ptr(), &ones, b.ptr(), &out));
  const std::vector<double> bh = b.host();
  REQUIRE(bh.size() == 24);
  EXPECT(bh[23] == m[2] && bh[4] == m[1] && bh[12] == m[0]);
}
