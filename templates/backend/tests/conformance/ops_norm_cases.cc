// Conformance, area ops.norm (device/src/norm_ops.cc): batch and layer normalisation, against
// values worked out by hand.
#include <cmath>
#include <vector>

#include "conformance.h"

using conformance::near;

CONFORMANCE_CASE("ops.norm", batch_norm_training_and_backward) {
  // [outer=2, channels=1, inner=2]: x = 1 2 3 4 -> mean 2.5, var 1.25
  Dev<float> x(std::vector<float>{1, 2, 3, 4}), dy_(4), dsm(1), dsv(1), drm(1, 1.f), drv(1, 1.f);
  REQUIRE_OK({{ p }}_batch_norm_training(nullptr, {{ NAME }}_FLOAT32, x.ptr(), nullptr, nullptr, 0.0, 0.9, 2, 1, 2,
                                         dy_.ptr(), dsm.ptr(), dsv.ptr(), drm.ptr(), drv.ptr(), drm.ptr(), drv.ptr()));
  const std::vector<float> y = dy_.host(), sm = dsm.host(), sv = dsv.host(), rm = drm.host(), rv = drv.host();
  REQUIRE(!y.empty() && !sm.empty() && !sv.empty() && !rm.empty() && !rv.empty());
  EXPECT(near(sm[0], 2.5f) && near(sv[0], 1.f / std::sqrt(1.25f)) && near(y[0], -1.5f / std::sqrt(1.25f)));
  EXPECT(near(rm[0], 0.9f + 0.25f) && near(rv[0], 0.9f + 0.125f));  // momentum update, biased variance
  Dev<float> ddy(4, 1.f), ddx(4), dds(1), ddb(1);
  REQUIRE_OK({{ p }}_batch_norm_backward(nullptr, {{ NAME }}_FLOAT32, x.ptr(), ddy.ptr(), dsm.ptr(), dsv.ptr(), 0, 0.0,
                                         nullptr, 2, 1, 2, ddx.ptr(), dds.ptr(), ddb.ptr()));
  const std::vector<float> dx = ddx.host(), ds = dds.host(), db = ddb.host();
  REQUIRE(!dx.empty() && !ds.empty() && !db.empty());
  EXPECT(near(db[0], 4.f) && std::fabs(ds[0]) < 1e-5f && std::fabs(dx[0]) < 1e-5f);  // constant dy: no dx
  Dev<float> mean(1, 0.f), var(1, 3.f);
  REQUIRE_OK({{ p }}_batch_norm_normalize(nullptr, {{ NAME }}_FLOAT32, x.ptr(), mean.ptr(), var.ptr(), nullptr,
                                          nullptr, 1.0, 2, 1, 2, dy_.ptr()));
  const std::vector<float> normalized = dy_.host();
  REQUIRE(normalized.size() == 4);
  EXPECT(near(normalized[3], 2.f));
}

CONFORMANCE_CASE("ops.norm", layer_norm_forward_and_backward) {
  Dev<double> x(std::vector<double>{1, 3, -2, 2}), dy_(4), dm(2), dv(2), ddy(std::vector<double>{1, 0, 0, 0}), ddx(4);
  REQUIRE_OK({{ p }}_layer_norm_forward(nullptr, {{ NAME }}_FLOAT64, x.ptr(), nullptr, nullptr, 0.0, 2, 2, dy_.ptr(),
                                        dm.ptr(), dv.ptr()));
  const std::vector<double> y = dy_.host(), m = dm.host(), v = dv.host();
  REQUIRE(y.size() == 4 && m.size() == 2 && v.size() == 2);
  EXPECT(near(y[0], -1.f) && near(y[1], 1.f) && near(m[1], 0.f) && near(v[1], 4.f));
  REQUIRE_OK({{ p }}_layer_norm_backward(nullptr, {{ NAME }}_FLOAT64, x.ptr(), ddy.ptr(), dm.ptr(), dv.ptr(), nullptr,
                                         0.0, 2, 2, ddx.ptr(), nullptr, nullptr));
  const std::vector<double> dx = ddx.host();
  REQUIRE(dx.size() == 4);
  EXPECT(std::fabs(dx[0] + dx[1]) < 1e-9 && std::fabs(dx[2]) < 1e-9);  // the gradient sums to zero per row
}
