// Conformance, area ops.elementwise (device/src/elementwise_ops.cc): broadcasting binary ops
// and their reduction back to an operand's shape.
#include <vector>

#include "conformance.h"

using conformance::shape;

CONFORMANCE_CASE("ops.elementwise", broadcast_add_and_sum_to_shape) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  Dev<float> dx(x), dy(std::vector<float>{10, 20, 30}), dout(6), dback(3);
  {
    // the shapes live on this stack only until the call returns (the op runs later)
    auto xs = shape({2, 3}), ys = shape({3}), os = shape({2, 3});
    REQUIRE_OK({{ p }}_binary(nullptr, {{ NAME }}_BINARY_ADD, {{ NAME }}_FLOAT32, dx.ptr(), &xs, dy.ptr(), &ys, dout.ptr(), &os));
    REQUIRE_OK({{ p }}_sum_to_shape(nullptr, {{ NAME }}_FLOAT32, dout.ptr(), &os, dback.ptr(), &ys));
    xs = shape({9}), ys = shape({9}), os = shape({9});  // reused at once, as callers do
  }
  EXPECT((dout.host() == std::vector<float>{11, 22, 33, 14, 25, 36}));
  EXPECT((dback.host() == std::vector<float>{25, 47, 69}));
  Dev<int64_t> a(std::vector<int64_t>{1, 2, 3}), b(std::vector<int64_t>{1, 1, 1}), c(3);
  auto s3 = shape({3});
  EXPECT_OK({{ p }}_binary(nullptr, {{ NAME }}_BINARY_ADD, {{ NAME }}_INT64, a.ptr(), &s3, b.ptr(), &s3, c.ptr(), &s3));
  EXPECT((c.host() == std::vector<int64_t>{2, 3, 4}));
  auto xs = shape({2, 3}), os = shape({2, 3}), bad = shape({4});
  EXPECT_STATUS({{ p }}_binary(nullptr, {{ NAME }}_BINARY_ADD, {{ NAME }}_FLOAT32, dx.ptr(), &xs, dy.ptr(), &bad, dout.ptr(), &os),
                {{ NAME }}_ERROR_INVALID_VALUE);
  // host memory is no device memory: refused, not read
  EXPECT_STATUS({{ p }}_binary(nullptr, {{ NAME }}_BINARY_ADD, {{ NAME }}_FLOAT32, x.data(), &xs, x.data(), &xs, dout.ptr(), &os),
                {{ NAME }}_ERROR_INVALID_VALUE);
}

CONFORMANCE_CASE("ops.elementwise", divide_and_compare) {
  Dev<float> x(std::vector<float>{1, 2, 3, 4, 5, 6}), y(std::vector<float>{2, 4, 8}), out(6);
  Dev<uint8_t> less(6);
  const auto xs = shape({2, 3}), ys = shape({3});
  REQUIRE_OK({{ p }}_binary(nullptr, {{ NAME }}_BINARY_DIV, {{ NAME }}_FLOAT32, x.ptr(), &xs, y.ptr(), &ys, out.ptr(), &xs));
  EXPECT((out.host() == std::vector<float>{0.5f, 0.5f, 0.375f, 2.f, 1.25f, 0.75f}));
  EXPECT_OK({{ p }}_binary(nullptr, {{ NAME }}_BINARY_LESS, {{ NAME }}_FLOAT32, x.ptr(), &xs, y.ptr(), &ys, less.ptr(), &xs));
  EXPECT((less.host() == std::vector<uint8_t>{1, 1, 1, 0, 0, 1}));
}
