// Conformance, area ops.conv_pool (device/src/conv_pool_ops.cc): convolution against a naive one.
#include <cmath>
#include <vector>

#include "conformance.h"

// Two groups, stride 2 by 1, padding 1, dilation 1 by 2.
CONFORMANCE_CASE("ops.conv_pool", conv2d_matches_naive) {
  {{ p }}_conv2d_params_t p = {2, 4, 9, 8, 6, 0, 0, 3, 3, 2, 1, 1, 1, 1, 1, 2};
  p.out_h = (p.in_h + 2 * p.pad_top - (p.kernel_h - 1) - 1) / p.stride_h + 1;
  p.out_w = (p.in_w + 2 * p.pad_left - (p.kernel_w - 1) - 1) / p.stride_w + 1;
  const int64_t cg = p.in_channels / p.groups, og = p.out_channels / p.groups;
  std::vector<float> x(p.batch * p.in_channels * p.in_h * p.in_w), w(p.out_channels * cg * 9);
  std::vector<float> y(p.batch * p.out_channels * p.out_h * p.out_w), ref(y.size(), 0.f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.3f * i);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.7f * i);
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t o = 0; o < p.out_channels; ++o)
      for (int64_t oy = 0; oy < p.out_h; ++oy)
        for (int64_t ox = 0; ox < p.out_w; ++ox) {
          float acc = 0.f;
          const int64_t g = o / og;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < 3; ++i)
              for (int64_t j = 0; j < 3; ++j) {
                const int64_t iy = oy * p.stride_h - p.pad_top + i, ix = ox * p.stride_w - p.pad_left + j;
                if (iy < 0 || iy >= p.in_h || ix < 0 || ix >= p.in_w) continue;
                acc += x[((n * p.in_channels + g * cg + c) * p.in_h + iy) * p.in_w + ix] *
                       w[((o * cg + c) * 3 + i) * 3 + j];
              }
          ref[((n * p.out_channels + o) * p.out_h + oy) * p.out_w + ox] = acc;
        }
  Dev<float> dx(x), dw(w), dy(y);
  REQUIRE_OK({{ p }}_conv2d_forward(nullptr, {{ NAME }}_FLOAT32, &p, dx.ptr(), dw.ptr(), dy.ptr()));
  y = dy.host();
  REQUIRE(y.size() == ref.size());
  for (size_t i = 0; i < y.size(); ++i) EXPECT(conformance::near(y[i], ref[i]));
}
