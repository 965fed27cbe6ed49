// Conformance, area ops.loss (device/src/loss_ops.cc): softmax with cross-entropy and its gradient.
#include <cmath>
#include <vector>

#include "conformance.h"

using conformance::near;

CONFORMANCE_CASE("ops.loss", softmax_cross_entropy) {
  Dev<float> dlogits(std::vector<float>{1, 2, 3, 1, 1, 1}), dsm(6), dl(2), dgrad(6), ddloss(std::vector<float>{1, 1});
  Dev<int64_t> labels(std::vector<int64_t>{2, 0});
  REQUIRE_OK({{ p }}_softmax_cross_entropy_forward(nullptr, {{ NAME }}_FLOAT32, dlogits.ptr(), labels.ptr(), 0, -100, dsm.ptr(), dl.ptr(), 2, 3, 1));
  const std::vector<float> sm = dsm.host(), loss = dl.host();
  REQUIRE(sm.size() == 6 && loss.size() == 2);
  EXPECT(near(sm[0] + sm[1] + sm[2], 1.f) && near(sm[3], 1.f / 3));
  EXPECT(near(loss[0], -std::log(sm[2])) && near(loss[1], std::log(3.f)));
  REQUIRE_OK({{ p }}_softmax_cross_entropy_backward(nullptr, {{ NAME }}_FLOAT32, dsm.ptr(), labels.ptr(), 0, -100, ddloss.ptr(), dgrad.ptr(), 2, 3, 1));
  const std::vector<float> grad = dgrad.host();
  REQUIRE(grad.size() == 6);
  EXPECT(near(grad[2], sm[2] - 1.f) && near(grad[0], sm[0]));
}
