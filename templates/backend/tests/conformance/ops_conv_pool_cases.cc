// Conformance, area ops.conv_pool (device/src/conv_pool_ops.cc): convolution against a naive one,
// max pooling with indices against PyTorch's rule.
#include <cmath>
#include <cstdio>
#include <limits>
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

// Max pooling with indices: the first maximum of a window wins, and the last NaN (PyTorch's CPU
// kernel: `val > maxval || isnan(val)`); windows that lie inside the input (2x2/2, 3x3/2, which
// the library may run apart) and windows clipped by padding and dilation, with ties and NaNs.
CONFORMANCE_CASE("ops.conv_pool", max_pooling_takes_the_first_maximum_and_the_last_nan) {
  struct Shape {
    int64_t kernel, stride, pad, dilation;
  };
  for (const Shape c : {Shape{2, 2, 0, 1}, Shape{3, 2, 0, 1}, Shape{3, 1, 1, 1}, Shape{2, 2, 1, 2}}) {
    {{ p }}_pool2d_params_t p = {2, 3, 9, 11, 0, 0, c.kernel, c.kernel, c.stride, c.stride, c.pad, c.pad, 1, 0, 0};
    const int64_t span = c.dilation * (c.kernel - 1) + 1;
    p.out_h = (p.in_h + 2 * c.pad - span) / c.stride + 1;
    p.out_w = (p.in_w + 2 * c.pad - span) / c.stride + 1;
    const int64_t plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w, planes = p.batch * p.channels;
    std::vector<float> x(planes * plane);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::round(3.f * std::sin(0.7f * i));  // ties
    for (size_t i = 5; i < x.size(); i += 13) x[i] = std::numeric_limits<float>::quiet_NaN();
    for (size_t i = 6; i < x.size(); i += 29) x[i] = std::numeric_limits<float>::quiet_NaN();  // NaN pairs
    std::vector<float> want(planes * out_plane);
    std::vector<int64_t> want_at(want.size());
    for (int64_t nc = 0; nc < planes; ++nc)
      for (int64_t oy = 0; oy < p.out_h; ++oy)
        for (int64_t ox = 0; ox < p.out_w; ++ox) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t at = -1;
          for (int64_t i = 0; i < c.kernel; ++i)
            for (int64_t j = 0; j < c.kernel; ++j) {
              const int64_t iy = oy * c.stride - c.pad + i * c.dilation, ix = ox * c.stride - c.pad + j * c.dilation;
              if (iy < 0 || iy >= p.in_h || ix < 0 || ix >= p.in_w) continue;
              const float v = x[nc * plane + iy * p.in_w + ix];
              if (at < 0 || v > best || std::isnan(v)) best = v, at = iy * p.in_w + ix;
            }
          want[nc * out_plane + oy * p.out_w + ox] = best;
          want_at[nc * out_plane + oy * p.out_w + ox] = at;
        }
    Dev<float> dx(x), dy(want.size());
    Dev<int64_t> di(want.size());
    REQUIRE_OK({{ p }}_max_pool2d_with_indices_forward(nullptr, {{ NAME }}_FLOAT32, &p, c.dilation, c.dilation, dx.ptr(),
                                                      dy.ptr(), di.ptr()));
    const std::vector<float> y = dy.host();
    const std::vector<int64_t> at = di.host();
    REQUIRE(y.size() == want.size() && at.size() == want.size());
    int wrong = 0;
    for (size_t o = 0; o < want.size(); ++o)
      wrong += at[o] != want_at[o] || !(y[o] == want[o] || (std::isnan(y[o]) && std::isnan(want[o])));
    EXPECT(wrong == 0);
    if (wrong) std::printf("  kernel %lld stride %lld pad %lld dilation %lld: %d outputs differ\n",
                           static_cast<long long>(c.kernel), static_cast<long long>(c.stride),
                           static_cast<long long>(c.pad), static_cast<long long>(c.dilation), wrong);
  }
}
