// Conformance, area ops.amp (device/src/amp_ops.cc): the loss-scaling ops of mixed-precision
// training. Their flag, scale and counters are device memory written by queued work, read
// back here through the synchronising copy only.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "conformance.h"

namespace {

constexpr int kDelayMs = 50;  // keeps the stream busy, so the ops below are queued behind it

}  // namespace

CONFORMANCE_CASE("ops.amp", check_finite_and_unscale_sets_the_flag_behind_queued_work) {
  Dev<float> a(std::vector<float>{2.f, -4.f}), b(std::vector<float>{8.f}), scale(std::vector<float>{2.f});
  Dev<uint8_t> found(1, 0);
  const void* xs[] = {a.ptr(), b.ptr()};
  void* outs[] = {a.ptr(), b.ptr()};
  const int64_t numels[] = {2, 1};
  REQUIRE_OK({{ p }}_launch_host_func(nullptr, conformance::sleep_ms, conformance::millis(kDelayMs)));
  REQUIRE_OK({{ p }}_check_finite_and_unscale(nullptr, {{ NAME }}_FLOAT32, 2, xs, outs, numels, scale.ptr(), 1,
                                             {{ NAME }}_BOOL, found.ptr()));
  EXPECT((a.host() == std::vector<float>{1.f, -2.f}));
  EXPECT((b.host() == std::vector<float>{4.f}));
  EXPECT((found.host() == std::vector<uint8_t>{0}));
  // an infinity in the second tensor: the flag (FLOAT32, as PyTorch keeps it) becomes 1 behind the delay
  Dev<float> c(std::vector<float>{1.f, std::numeric_limits<float>::infinity()}), flag(1, 0.f);
  const void* ys[] = {b.ptr(), c.ptr()};
  void* youts[] = {b.ptr(), c.ptr()};
  const int64_t ynumels[] = {1, 2};
  REQUIRE_OK({{ p }}_launch_host_func(nullptr, conformance::sleep_ms, conformance::millis(kDelayMs)));
  REQUIRE_OK({{ p }}_check_finite_and_unscale(nullptr, {{ NAME }}_FLOAT32, 2, ys, youts, ynumels, scale.ptr(), 0,
                                             {{ NAME }}_FLOAT32, flag.ptr()));
  EXPECT((flag.host() == std::vector<float>{1.f}));
  EXPECT((b.host() == std::vector<float>{8.f}));  // multiplied by the scale itself (invert_scale 0)
  EXPECT_STATUS({{ p }}_check_finite_and_unscale(nullptr, {{ NAME }}_FLOAT32, 1, ys, youts, ynumels, scale.ptr(), 1,
                                                {{ NAME }}_INT64, flag.ptr()),
                {{ NAME }}_ERROR_UNSUPPORTED);
}

CONFORMANCE_CASE("ops.amp", a_float16_nan_is_found) {
  Dev<uint16_t> h(std::vector<uint16_t>{0x3c00, 0x7e00});  // 1.0, NaN
  Dev<float> scale(std::vector<float>{4.f});
  Dev<uint8_t> found(1, 0);
  const void* xs[] = {h.ptr()};
  void* outs[] = {h.ptr()};
  const int64_t numels[] = {2};
  REQUIRE_OK({{ p }}_check_finite_and_unscale(nullptr, {{ NAME }}_FLOAT16, 1, xs, outs, numels, scale.ptr(), 1,
                                             {{ NAME }}_BOOL, found.ptr()));
  EXPECT((found.host() == std::vector<uint8_t>{1}));
  EXPECT(h.host().at(0) == 0x3400);  // 0.25
}

// grow after 2 clean steps, shrink after 2 overflowing ones (Paddle's counters), floor 1.
CONFORMANCE_CASE("ops.amp", update_loss_scale_grows_and_shrinks_by_the_counters) {
  const {{ p }}_loss_scale_params_t params = {2, 2, 2.f, 0.5f, 1.f};
  Dev<float> scale(std::vector<float>{4.f});
  Dev<int32_t> good(1, 0), bad(1, 0);
  Dev<uint8_t> clean(1, 0), overflow(1, 1);
  auto step = [&](const Dev<uint8_t>& flag) {
    REQUIRE_OK({{ p }}_update_loss_scale(nullptr, &params, {{ NAME }}_BOOL, flag.ptr(), scale.ptr(), good.ptr(), bad.ptr()));
  };
  step(clean);
  EXPECT((scale.host() == std::vector<float>{4.f}) && (good.host() == std::vector<int32_t>{1}));
  step(clean);
  EXPECT((scale.host() == std::vector<float>{8.f}) && (good.host() == std::vector<int32_t>{0}));
  step(overflow);
  EXPECT((scale.host() == std::vector<float>{8.f}) && (bad.host() == std::vector<int32_t>{1}));
  step(overflow);
  EXPECT((scale.host() == std::vector<float>{4.f}) && (bad.host() == std::vector<int32_t>{0}));
  for (int i = 0; i < 8; ++i) step(overflow);
  EXPECT((scale.host() == std::vector<float>{1.f}));  // the floor
  // PyTorch's form: no bad-step counter, shrink at the first overflow, no floor
  const {{ p }}_loss_scale_params_t torch_params = {2000, 1, 2.f, 0.5f, 0.f};
  Dev<float> flag(1, 1.f), t_scale(std::vector<float>{65536.f});
  Dev<int32_t> tracker(1, 5);
  REQUIRE_OK({{ p }}_update_loss_scale(nullptr, &torch_params, {{ NAME }}_FLOAT32, flag.ptr(), t_scale.ptr(),
                                      tracker.ptr(), nullptr));
  EXPECT((t_scale.host() == std::vector<float>{32768.f}) && (tracker.host() == std::vector<int32_t>{0}));
  const {{ p }}_loss_scale_params_t needs_counter = {2, 2, 2.f, 0.5f, 0.f};
  EXPECT_STATUS({{ p }}_update_loss_scale(nullptr, &needs_counter, {{ NAME }}_FLOAT32, flag.ptr(), t_scale.ptr(),
                                         tracker.ptr(), nullptr),
                {{ NAME }}_ERROR_INVALID_VALUE);
}

CONFORMANCE_CASE("ops.amp", a_grown_scale_that_overflows_is_kept) {
  const {{ p }}_loss_scale_params_t params = {1, 1, 2.f, 0.5f, 0.f};
  Dev<float> scale(std::vector<float>{std::numeric_limits<float>::max()}), clean(1, 0.f);
  Dev<int32_t> good(1, 0);
  REQUIRE_OK({{ p }}_update_loss_scale(nullptr, &params, {{ NAME }}_FLOAT32, clean.ptr(), scale.ptr(), good.ptr(), nullptr));
  EXPECT((scale.host() == std::vector<float>{std::numeric_limits<float>::max()}));
}

CONFORMANCE_CASE("ops.amp", zero_if_found_drops_the_gradients_of_an_overflowing_step) {
  Dev<float> g(std::vector<float>{1.f, 2.f}), out(2, -1.f);
  Dev<uint8_t> clean(1, 0), overflow(1, 1);
  const void* xs[] = {g.ptr()};
  void* outs[] = {out.ptr()};
  const int64_t numels[] = {2};
  REQUIRE_OK({{ p }}_zero_if_found(nullptr, {{ NAME }}_FLOAT32, 1, xs, outs, numels, {{ NAME }}_BOOL, clean.ptr()));
  EXPECT((out.host() == std::vector<float>{1.f, 2.f}));
  REQUIRE_OK({{ p }}_zero_if_found(nullptr, {{ NAME }}_FLOAT32, 1, xs, outs, numels, {{ NAME }}_BOOL, overflow.ptr()));
  EXPECT((out.host() == std::vector<float>{0.f, 0.f}));
}
