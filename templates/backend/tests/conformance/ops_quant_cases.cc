// Conformance, area ops.quant (device/src/quant_ops.cc): symmetric linear int8 quantization.
// Inputs are chosen so that x * (qmax / s) is exact in float32 (qmax 64, scales powers of two):
// the expected integers are then those of the rounding rule alone, ties included.
#include <cmath>
#include <cstdint>
#include <vector>

#include "conformance.h"

namespace {

constexpr int kDelayMs = 50;  // keeps the stream busy, so the ops below are queued behind it

// x = v / 32, so that x * (64 / 2) = v exactly.
std::vector<float> over_32(const std::vector<float>& v) {
  std::vector<float> x;
  for (float e : v) x.push_back(e / 32.f);
  return x;
}

const std::vector<float> kTies = {0.5f, 1.5f, 2.5f, -2.5f, 100.f, -100.f, 63.5f, -64.5f};

}  // namespace

CONFORMANCE_CASE("ops.quant", round_type_0_rounds_ties_to_even_and_clips_to_minus_qmax_minus_1) {
  Dev<float> x(over_32(kTies)), scale(std::vector<float>{2.f}), out(kTies.size(), -7.f);
  Dev<int8_t> narrow(kTies.size(), 0);
  const {{ p }}_quant_params_t p = {1, 1, static_cast<int64_t>(kTies.size()), 64, 0};
  REQUIRE_OK({{ p }}_launch_host_func(nullptr, conformance::sleep_ms, conformance::millis(kDelayMs)));
  REQUIRE_OK({{ p }}_quantize_linear(nullptr, &p, {{ NAME }}_FLOAT32, x.ptr(), scale.ptr(), {{ NAME }}_FLOAT32, out.ptr()));
  REQUIRE_OK({{ p }}_quantize_linear(nullptr, &p, {{ NAME }}_FLOAT32, x.ptr(), scale.ptr(), {{ NAME }}_INT8, narrow.ptr()));
  EXPECT((out.host() == std::vector<float>{0.f, 2.f, 2.f, -2.f, 64.f, -65.f, 64.f, -64.f}));
  EXPECT((narrow.host() == std::vector<int8_t>{0, 2, 2, -2, 64, -65, 64, -64}));
}

CONFORMANCE_CASE("ops.quant", round_type_1_clips_x_to_the_scale_then_rounds_half_away_from_zero) {
  Dev<float> x(over_32(kTies)), scale(std::vector<float>{2.f}), out(kTies.size(), -7.f);
  const {{ p }}_quant_params_t p = {1, 1, static_cast<int64_t>(kTies.size()), 64, 1};
  REQUIRE_OK({{ p }}_quantize_linear(nullptr, &p, {{ NAME }}_FLOAT32, x.ptr(), scale.ptr(), {{ NAME }}_FLOAT32, out.ptr()));
  EXPECT((out.host() == std::vector<float>{1.f, 2.f, 3.f, -3.f, 64.f, -64.f, 64.f, -64.f}));
}

CONFORMANCE_CASE("ops.quant", per_channel_scales_index_the_middle_axis) {
  // [outer 2, channels 3, inner 2], every x 0.25: channel c gives 0.25 * 64 / scale[c]
  Dev<float> x(12, 0.25f), scale(std::vector<float>{1.f, 2.f, 4.f});
  Dev<int8_t> q(12, 0);
  const {{ p }}_quant_params_t p = {2, 3, 2, 64, 0};
  REQUIRE_OK({{ p }}_quantize_linear(nullptr, &p, {{ NAME }}_FLOAT32, x.ptr(), scale.ptr(), {{ NAME }}_INT8, q.ptr()));
  EXPECT((q.host() == std::vector<int8_t>{16, 16, 8, 8, 4, 4, 16, 16, 8, 8, 4, 4}));
  Dev<float> back(12, 0.f);
  REQUIRE_OK({{ p }}_dequantize_linear(nullptr, &p, {{ NAME }}_INT8, q.ptr(), scale.ptr(), back.ptr()));
  EXPECT((back.host() == std::vector<float>(12, 0.25f)));
}

CONFORMANCE_CASE("ops.quant", dequantize_is_x_times_s_over_qmax_from_int8_or_float32) {
  const std::vector<int8_t> q = {-128, -1, 0, 5, 127};
  Dev<int8_t> narrow(q);
  Dev<float> wide(std::vector<float>(q.begin(), q.end())), scale(std::vector<float>{0.3f});
  Dev<float> a(q.size(), 0.f), b(q.size(), 0.f);
  const {{ p }}_quant_params_t p = {1, 1, static_cast<int64_t>(q.size()), 127, 0};
  REQUIRE_OK({{ p }}_dequantize_linear(nullptr, &p, {{ NAME }}_INT8, narrow.ptr(), scale.ptr(), a.ptr()));
  REQUIRE_OK({{ p }}_dequantize_linear(nullptr, &p, {{ NAME }}_FLOAT32, wide.ptr(), scale.ptr(), b.ptr()));
  std::vector<float> want;
  for (int8_t v : q) want.push_back(static_cast<float>(v) * 0.3f / 127.f);
  EXPECT(a.host() == want);
  EXPECT(b.host() == want);
}

CONFORMANCE_CASE("ops.quant", a_zero_scale_does_not_divide_by_zero) {
  Dev<float> x(std::vector<float>{0.f, 1e-9f, -1e-9f}), scale(std::vector<float>{0.f}), out(3, 5.f);
  const {{ p }}_quant_params_t p = {1, 1, 3, 127, 0};
  REQUIRE_OK({{ p }}_quantize_linear(nullptr, &p, {{ NAME }}_FLOAT32, x.ptr(), scale.ptr(), {{ NAME }}_FLOAT32, out.ptr()));
  EXPECT((out.host() == std::vector<float>{0.f, 0.f, -0.f}));  // 1/(0 + 1e-6): x * 1.27e8 rounds to 0
}

CONFORMANCE_CASE("ops.quant", observe_takes_the_moving_average_or_each_channels_abs_max) {
  Dev<float> x(std::vector<float>{1.f, -3.f, 2.f}), accum(std::vector<float>{2.f}), state(std::vector<float>{1.f});
  Dev<float> accum_out(1, 0.f), state_out(1, 0.f), scale(1, 0.f);
  const {{ p }}_quant_params_t one = {1, 1, 3, 127, 0};
  REQUIRE_OK({{ p }}_launch_host_func(nullptr, conformance::sleep_ms, conformance::millis(kDelayMs)));
  REQUIRE_OK({{ p }}_quant_observe(nullptr, &one, {{ NAME }}_FLOAT32, x.ptr(), 0.9f, accum.ptr(), state.ptr(),
                                  accum_out.ptr(), state_out.ptr(), scale.ptr()));
  const float want_state = 0.9f * 1.f + 1.f, want_accum = 0.9f * 2.f + 3.f;
  EXPECT((state_out.host() == std::vector<float>{want_state}));
  EXPECT((accum_out.host() == std::vector<float>{want_accum}));
  EXPECT((scale.host() == std::vector<float>{want_accum / want_state}));
  // [outer 2, channels 2, inner 1]
  Dev<float> y(std::vector<float>{1.f, -5.f, 2.f, 3.f}), channel_max(2, 0.f);
  const {{ p }}_quant_params_t two = {2, 2, 1, 127, 0};
  REQUIRE_OK({{ p }}_quant_observe(nullptr, &two, {{ NAME }}_FLOAT32, y.ptr(), 0.9f, nullptr, nullptr, nullptr,
                                  nullptr, channel_max.ptr()));
  EXPECT((channel_max.host() == std::vector<float>{2.f, 5.f}));
  // a moving average is of one scale
  EXPECT_STATUS({{ p }}_quant_observe(nullptr, &two, {{ NAME }}_FLOAT32, y.ptr(), 0.9f, accum.ptr(), state.ptr(),
                                     accum_out.ptr(), state_out.ptr(), channel_max.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);
}

CONFORMANCE_CASE("ops.quant", bad_arguments_are_refused_before_anything_is_queued) {
  Dev<float> x(4, 1.f), scale(std::vector<float>{1.f}), out(4, 0.f);
  Dev<int8_t> q(4, 0);
  const {{ p }}_quant_params_t wide = {1, 1, 4, 255, 0}, odd_round = {1, 1, 4, 127, 2};
  EXPECT_STATUS({{ p }}_quantize_linear(nullptr, &wide, {{ NAME }}_FLOAT32, x.ptr(), scale.ptr(), {{ NAME }}_INT8, q.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);  // 255 does not fit int8
  EXPECT_STATUS({{ p }}_quantize_linear(nullptr, &odd_round, {{ NAME }}_FLOAT32, x.ptr(), scale.ptr(), {{ NAME }}_FLOAT32,
                                       out.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_STATUS({{ p }}_quantize_linear(nullptr, &wide, {{ NAME }}_INT32, x.ptr(), scale.ptr(), {{ NAME }}_FLOAT32, out.ptr()),
                {{ NAME }}_ERROR_UNSUPPORTED);
  EXPECT_STATUS({{ p }}_dequantize_linear(nullptr, &wide, {{ NAME }}_INT32, x.ptr(), scale.ptr(), out.ptr()),
                {{ NAME }}_ERROR_UNSUPPORTED);
  EXPECT_STATUS({{ p }}_quantize_linear(nullptr, nullptr, {{ NAME }}_FLOAT32, x.ptr(), scale.ptr(), {{ NAME }}_FLOAT32,
                                       out.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);
}

namespace {

// conv(x, w) summed in int32 the plain way (no dilation): what conv2d_int8 must give.
std::vector<int32_t> naive_conv2d_int8(const {{ p }}_conv2d_params_t& p, const std::vector<int8_t>& x,
                                       const std::vector<int8_t>& w) {
  const int64_t icg = p.in_channels / p.groups, ocg = p.out_channels / p.groups;
  std::vector<int32_t> y(p.batch * p.out_channels * p.out_h * p.out_w, 0);
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t oc = 0; oc < p.out_channels; ++oc)
      for (int64_t oh = 0; oh < p.out_h; ++oh)
        for (int64_t ow = 0; ow < p.out_w; ++ow) {
          int32_t& sum = y[((n * p.out_channels + oc) * p.out_h + oh) * p.out_w + ow];
          for (int64_t ic = 0; ic < icg; ++ic)
            for (int64_t kh = 0; kh < p.kernel_h; ++kh)
              for (int64_t kw = 0; kw < p.kernel_w; ++kw) {
                const int64_t ih = oh * p.stride_h - p.pad_top + kh, iw = ow * p.stride_w - p.pad_left + kw;
                if (ih < 0 || ih >= p.in_h || iw < 0 || iw >= p.in_w) continue;
                const int64_t channel = (oc / ocg) * icg + ic;
                sum += w[((oc * icg + ic) * p.kernel_h + kh) * p.kernel_w + kw] *
                       x[((n * p.in_channels + channel) * p.in_h + ih) * p.in_w + iw];
              }
        }
  return y;
}

// conv2d_int8 of x and w (behind queued work) against naive_conv2d_int8.
void expect_conv2d_int8(const {{ p }}_conv2d_params_t& p, const std::vector<int8_t>& x, const std::vector<int8_t>& w,
                        const std::vector<int32_t>& want) {
  Dev<int8_t> dx(x), dw(w);
  Dev<int32_t> y(want.size(), -1);
  REQUIRE_OK({{ p }}_launch_host_func(nullptr, conformance::sleep_ms, conformance::millis(kDelayMs)));
  REQUIRE_OK({{ p }}_conv2d_int8(nullptr, &p, dx.ptr(), dw.ptr(), y.ptr()));
  EXPECT(y.host() == want);
}

}  // namespace

CONFORMANCE_CASE("ops.quant", conv2d_int8_sums_products_in_int32) {
  // one image, 4 input channels in 2 groups, 4 output channels, 3x3 kernel, stride 2, padding 1
  const {{ p }}_conv2d_params_t p = {1, 4, 5, 5, 4, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 2};
  std::vector<int8_t> x(4 * 5 * 5), w(4 * 2 * 3 * 3);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int8_t>(static_cast<int>(i * 37 % 255) - 127);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(static_cast<int>(i * 53 % 256) - 128);
  expect_conv2d_int8(p, x, w, naive_conv2d_int8(p, x, w));
}

// Sums past 2^24, where float32 no longer holds every integer: 200 input channels of a 3x3 kernel
// (1800 products a sum), mostly (-128) * (-128), and the centre's sums odd: no float32 holds them,
// so a library that sums int8 products in float32 without bounding the terms cannot give them.
CONFORMANCE_CASE("ops.quant", conv2d_int8_sums_stay_exact_past_2_to_the_24) {
  // one image of 200 channels 3x3, 2 output channels, 3x3 kernel, stride 1, padding 1: out 3x3
  const {{ p }}_conv2d_params_t p = {1, 200, 3, 3, 2, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1};
  std::vector<int8_t> x(200 * 9), w(2 * 200 * 9);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<int8_t>(i % 7 == 0 ? 1 : -128);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(i % 5 == 0 ? 3 : i % 23 == 0 ? 127 : -128);
  const std::vector<int32_t> want = naive_conv2d_int8(p, x, w);
  for (int32_t centre : {want[4], want[13]}) EXPECT(centre > (1 << 24) && centre % 2 == 1);  // (all 1800 products)
  expect_conv2d_int8(p, x, w, want);
}

CONFORMANCE_CASE("ops.quant", gemm_int8_takes_either_operand_transposed) {
  // A [2,3], B [3,2]; the extremes -128 * -128 summed three times do not overflow int32
  const std::vector<int8_t> a = {-128, 2, 3, 4, -5, 127}, b = {-128, 1, 0, -1, 7, 2};
  std::vector<int32_t> want(4, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int q = 0; q < 3; ++q) want[i * 2 + j] += a[i * 3 + q] * b[q * 2 + j];
  std::vector<int8_t> bt(6);  // B^T [2,3]
  for (int q = 0; q < 3; ++q)
    for (int j = 0; j < 2; ++j) bt[j * 3 + q] = b[q * 2 + j];
  Dev<int8_t> da(a), db(b), dbt(bt);
  Dev<int32_t> c(4, 0), ct(4, 0);
  REQUIRE_OK({{ p }}_gemm_int8(nullptr, 0, 0, 2, 2, 3, da.ptr(), 3, db.ptr(), 2, c.ptr(), 2));
  REQUIRE_OK({{ p }}_gemm_int8(nullptr, 0, 1, 2, 2, 3, da.ptr(), 3, dbt.ptr(), 3, ct.ptr(), 2));
  EXPECT(c.host() == want);
  EXPECT(ct.host() == want);
  EXPECT_STATUS({{ p }}_gemm_int8(nullptr, 0, 0, 2, 2, 3, da.ptr(), 2, db.ptr(), 2, c.ptr(), 2),
                {{ NAME }}_ERROR_INVALID_VALUE);  // lda < k
}

CONFORMANCE_CASE("ops.quant", requantize_rescales_by_the_activation_and_each_channels_weight_scale) {
  // [outer 1, channels 2, inner 2]: channel c takes w_scales[c]; qmax 64 keeps the factors exact
  Dev<int32_t> acc(std::vector<int32_t>{64 * 64, -2 * 64 * 64, 64 * 64, 3});
  Dev<float> x_scale(std::vector<float>{2.f}), w_scales(std::vector<float>{1.f, 4.f}), out(4, 0.f);
  const {{ p }}_quant_params_t p = {1, 2, 2, 64, 0};
  REQUIRE_OK({{ p }}_requantize(nullptr, &p, acc.ptr(), x_scale.ptr(), w_scales.ptr(), {{ NAME }}_FLOAT32, nullptr,
                               out.ptr()));
  const float tiny = static_cast<float>(3 * (2.0 / 64) * (4.0 / 64));
  EXPECT((out.host() == std::vector<float>{2.f, -4.f, 8.f, tiny}));
  // requantized to int8 with an output scale of 8: v * 64 / 8, clipped
  Dev<float> out_scale(std::vector<float>{8.f});
  Dev<int8_t> q(4, 0);
  REQUIRE_OK({{ p }}_requantize(nullptr, &p, acc.ptr(), x_scale.ptr(), w_scales.ptr(), {{ NAME }}_INT8, out_scale.ptr(),
                               q.ptr()));
  EXPECT((q.host() == std::vector<int8_t>{16, -32, 64, 0}));
  EXPECT_STATUS({{ p }}_requantize(nullptr, &p, acc.ptr(), x_scale.ptr(), w_scales.ptr(), {{ NAME }}_INT8, nullptr,
                                  q.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);  // int8 out needs its scale
}

// What an int8 engine runs between its convolutions on a quantized tensor's integers: max pooling
// (each window's largest integer; padding never wins) and relu as the maximum with an int8 zero.
CONFORMANCE_CASE("ops.quant", int8_max_pooling_and_relu_keep_the_integers) {
  // one image, 2 channels of 3x3; 2x2 windows, stride 2, padding 1: out 2x2
  const std::vector<int8_t> x = {-128, -3, 7,   -9, -128, 4,  2, 5, -1,  //
                                 127,  -2, -5,  0,  -7,   -6, 3, 1, -128};
  const {{ p }}_pool2d_params_t p = {1, 2, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 0, 0};
  const std::vector<int8_t> want = {-128, 7, 2, 5,  // windows {x00}, {x01,x02}, {x10,x20}, {x11,x12,x21,x22}
                                    127, -2, 3, 1};
  Dev<int8_t> dx(x), pooled(want.size(), 0);
  REQUIRE_OK({{ p }}_launch_host_func(nullptr, conformance::sleep_ms, conformance::millis(kDelayMs)));
  REQUIRE_OK({{ p }}_pool2d_forward(nullptr, {{ NAME }}_INT8, &p, dx.ptr(), pooled.ptr()));
  EXPECT(pooled.host() == want);
  {{ p }}_pool2d_params_t average = p;
  average.is_max = 0;
  EXPECT_STATUS({{ p }}_pool2d_forward(nullptr, {{ NAME }}_INT8, &average, dx.ptr(), pooled.ptr()),
                {{ NAME }}_ERROR_UNSUPPORTED);  // an int8 average would need a rounding rule
  Dev<int8_t> zero(std::vector<int8_t>{0}), relu(x.size(), 1);
  const {{ p }}_shape_t all = {1, {static_cast<int64_t>(x.size())}}, one = {1, {1}};
  REQUIRE_OK({{ p }}_binary(nullptr, {{ NAME }}_BINARY_MAX, {{ NAME }}_INT8, dx.ptr(), &all, zero.ptr(), &one, relu.ptr(),
                           &all));
  std::vector<int8_t> relu_want;
  for (int8_t v : x) relu_want.push_back(v > 0 ? v : 0);
  EXPECT(relu.host() == relu_want);
}

// An int8 engine's average pooling: each window's integers summed in int32, rescaled once by
// x_scale / qmax and divided by the window's size (without its padding, with it, or adaptive).
CONFORMANCE_CASE("ops.quant", int8_average_pooling_sums_the_integers_and_rescales_once) {
  // one image, one channel of 3x3; 2x2 windows, stride 2, padding 1: out 2x2. qmax 64 and scale 2:
  // one step of the grid is 1/32, so every expected value but the adaptive one is exact
  const std::vector<int8_t> x = {-128, -3, 7, -9, 127, 4, 2, 5, -1};
  {{ p }}_pool2d_params_t p = {1, 1, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 0, 1, 0};
  Dev<int8_t> dx(x);
  Dev<float> scale(std::vector<float>{2.f}), y(4, -7.f), full(4, -7.f), whole(1, -7.f);
  REQUIRE_OK({{ p }}_launch_host_func(nullptr, conformance::sleep_ms, conformance::millis(kDelayMs)));
  // windows {x00}, {x01,x02}, {x10,x20}, {x11,x12,x21,x22}: sums -128, 4, -7, 135
  REQUIRE_OK({{ p }}_avg_pool2d_int8(nullptr, &p, dx.ptr(), scale.ptr(), 64, y.ptr()));
  EXPECT((y.host() == std::vector<float>{-128.f / 32, 4.f / 2 / 32, -7.f / 2 / 32, 135.f / 4 / 32}));
  p.exclusive = 0;  // the padded cells count
  REQUIRE_OK({{ p }}_avg_pool2d_int8(nullptr, &p, dx.ptr(), scale.ptr(), 64, full.ptr()));
  EXPECT((full.host() == std::vector<float>{-128.f / 4 / 32, 4.f / 4 / 32, -7.f / 4 / 32, 135.f / 4 / 32}));
  const {{ p }}_pool2d_params_t global = {1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1};  // adaptive, out 1x1
  REQUIRE_OK({{ p }}_avg_pool2d_int8(nullptr, &global, dx.ptr(), scale.ptr(), 64, whole.ptr()));
  EXPECT((whole.host() == std::vector<float>{static_cast<float>(4.0 / 9 / 32)}));
  {{ p }}_pool2d_params_t max = p;
  max.is_max = 1;
  EXPECT_STATUS({{ p }}_avg_pool2d_int8(nullptr, &max, dx.ptr(), scale.ptr(), 64, y.ptr()), {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_STATUS({{ p }}_avg_pool2d_int8(nullptr, &p, dx.ptr(), scale.ptr(), 255, y.ptr()), {{ NAME }}_ERROR_INVALID_VALUE);
}

// An int8 engine's residual add: each operand's integers rescaled once by its own scale, as
// dequantize_linear takes them back, then added in float32 -- bit for bit the float add of the two
// dequantized operands, which is what the quantized program computes.
CONFORMANCE_CASE("ops.quant", int8_add_rescales_each_operand_by_its_own_scale) {
  const std::vector<int8_t> a = {-128, -127, -1, 0, 1, 63, 127, 5, -77};
  const std::vector<int8_t> b = {127, -128, 1, 0, -1, -64, 127, 90, 33};
  const float sa = 0.37f, sb = 1.93f;  // (not powers of two: the rounding of each step counts)
  Dev<int8_t> da(a), db(b);
  Dev<float> a_scale(std::vector<float>{sa}), b_scale(std::vector<float>{sb}), y(a.size(), -7.f);
  REQUIRE_OK({{ p }}_launch_host_func(nullptr, conformance::sleep_ms, conformance::millis(kDelayMs)));
  REQUIRE_OK({{ p }}_add_int8(nullptr, static_cast<int64_t>(a.size()), da.ptr(), a_scale.ptr(), db.ptr(), b_scale.ptr(),
                             127, y.ptr()));
  // the same as dequantizing each operand on the device and adding the floats there
  Dev<float> fa(a.size(), 0.f), fb(a.size(), 0.f), sum(a.size(), 0.f);
  const {{ p }}_quant_params_t q = {1, 1, static_cast<int64_t>(a.size()), 127, 0};
  REQUIRE_OK({{ p }}_dequantize_linear(nullptr, &q, {{ NAME }}_INT8, da.ptr(), a_scale.ptr(), fa.ptr()));
  REQUIRE_OK({{ p }}_dequantize_linear(nullptr, &q, {{ NAME }}_INT8, db.ptr(), b_scale.ptr(), fb.ptr()));
  const {{ p }}_shape_t all = {1, {static_cast<int64_t>(a.size())}};
  REQUIRE_OK({{ p }}_binary(nullptr, {{ NAME }}_BINARY_ADD, {{ NAME }}_FLOAT32, fa.ptr(), &all, fb.ptr(), &all,
                           sum.ptr(), &all));
  const std::vector<float> got = y.host();
  EXPECT(got == sum.host());
  EXPECT(got[0] == -128.f * sa / 127 + 127.f * sb / 127 && got[3] == 0.f);
  EXPECT_STATUS({{ p }}_add_int8(nullptr, 2, da.ptr(), a_scale.ptr(), db.ptr(), b_scale.ptr(), 128, y.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_STATUS({{ p }}_add_int8(nullptr, -1, da.ptr(), a_scale.ptr(), db.ptr(), b_scale.ptr(), 127, y.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_STATUS({{ p }}_add_int8(nullptr, 2, da.ptr(), nullptr, db.ptr(), b_scale.ptr(), 127, y.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);
}

// An int8 engine's softmax: along the middle axis of [outer, axis, inner], from the integers'
// differences to the row's largest (a table of their exponentials), against the float softmax of
// the dequantized values.
CONFORMANCE_CASE("ops.quant", int8_softmax_takes_the_exponentials_of_the_integer_differences) {
  // outer 2, axis 3, inner 2; qmax 64 and scale 2: one step of the grid is 1/32
  const std::vector<int8_t> x = {-128, 5, 127, 5, 0, 5,  //
                                 7, -1, 7, 3, 7, -128};
  Dev<int8_t> dx(x);
  Dev<float> scale(std::vector<float>{2.f}), y(x.size(), -7.f);
  REQUIRE_OK({{ p }}_launch_host_func(nullptr, conformance::sleep_ms, conformance::millis(kDelayMs)));
  REQUIRE_OK({{ p }}_softmax_int8(nullptr, 2, 3, 2, dx.ptr(), scale.ptr(), 64, y.ptr()));
  const std::vector<float> got = y.host();
  for (int64_t o = 0; o < 2; ++o) {
    for (int64_t i = 0; i < 2; ++i) {
      double top = -1e30, sum = 0;
      for (int64_t j = 0; j < 3; ++j) top = std::max<double>(top, x[(o * 3 + j) * 2 + i] / 32.0);
      for (int64_t j = 0; j < 3; ++j) sum += std::exp(x[(o * 3 + j) * 2 + i] / 32.0 - top);
      for (int64_t j = 0; j < 3; ++j) {
        const int64_t at = (o * 3 + j) * 2 + i;
        EXPECT(std::fabs(got[at] - std::exp(x[at] / 32.0 - top) / sum) <= 1e-6);
      }
    }
  }
  // a row of one value: each 1/3, to float32 rounding; -128 against 127: exp(-255/32), not 0
  EXPECT(got[1] == static_cast<float>(1.0 / 3) && got[3] == got[1] && got[5] == got[1]);
  EXPECT(got[0] > 0.f && got[0] < 1e-3f);
  EXPECT_STATUS({{ p }}_softmax_int8(nullptr, 2, -1, 2, dx.ptr(), scale.ptr(), 64, y.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_STATUS({{ p }}_softmax_int8(nullptr, 2, 3, 2, dx.ptr(), scale.ptr(), 128, y.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_STATUS({{ p }}_softmax_int8(nullptr, 2, 3, 2, dx.ptr(), nullptr, 64, y.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);
}

// An int8 engine's concat: each operand's integers rescaled once by its own scale (as
// dequantize_linear takes them back) into its slice along the middle axis of [outer, axis, inner].
CONFORMANCE_CASE("ops.quant", int8_concat_rescales_each_operand_into_its_slice) {
  // outer 2, inner 2; a: 1 along the axis, b: 2
  const std::vector<int8_t> a = {-128, 3, 127, -1}, b = {1, 2, 3, 4, -5, -6, -7, 127};
  const float sa = 0.37f, sb = 1.93f;
  Dev<int8_t> da(a), db(b);
  Dev<float> a_scale(std::vector<float>{sa}), b_scale(std::vector<float>{sb}), y(12, -7.f);
  const int8_t* parts[] = {da.ptr(), db.ptr()};
  const float* scales[] = {a_scale.ptr(), b_scale.ptr()};
  const int64_t lens[] = {1, 2};
  REQUIRE_OK({{ p }}_launch_host_func(nullptr, conformance::sleep_ms, conformance::millis(kDelayMs)));
  REQUIRE_OK({{ p }}_concat_int8(nullptr, 2, parts, scales, lens, 2, 2, 127, y.ptr()));
  auto v = [](int8_t q, float s) { return static_cast<float>(q) * s / 127.f; };
  const std::vector<float> want = {v(-128, sa), v(3, sa),  v(1, sb),  v(2, sb),  v(3, sb),  v(4, sb),  //
                                   v(127, sa),  v(-1, sa), v(-5, sb), v(-6, sb), v(-7, sb), v(127, sb)};
  EXPECT(y.host() == want);
  const int64_t negative[] = {1, -2};
  EXPECT_STATUS({{ p }}_concat_int8(nullptr, 2, parts, scales, negative, 2, 2, 127, y.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_STATUS({{ p }}_concat_int8(nullptr, 0, parts, scales, lens, 2, 2, 127, y.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_STATUS({{ p }}_concat_int8(nullptr, 2, parts, scales, lens, 2, 2, 0, y.ptr()),
                {{ NAME }}_ERROR_INVALID_VALUE);
}
