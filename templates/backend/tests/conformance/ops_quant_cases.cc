// Conformance, area ops.quant (device/src/quant_ops.cc): symmetric linear int8 quantization.
// Inputs are chosen so that x * (qmax / s) is exact in float32 (qmax 64, scales powers of two):
// the expected integers are then those of the rounding rule alone, ties included.
#include <cstdint>
#include <vector>

#include "conformance.h"

namespace {

int kDelayMs = 50;  // keeps the stream busy, so the ops below are queued behind it

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
  REQUIRE_OK({{ p }}_launch_host_func(nullptr, conformance::sleep_ms, &kDelayMs));
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
  REQUIRE_OK({{ p }}_launch_host_func(nullptr, conformance::sleep_ms, &kDelayMs));
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
