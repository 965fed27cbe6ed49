// Conformance, area ops.movement (device/src/movement_ops.cc): the data movement every flavour
// implements -- fills, casts, views made contiguous.
#include <vector>

#include "conformance.h"

CONFORMANCE_CASE("ops.movement", fill_every_dtype_width) {
  Dev<int64_t> l(4);
  Dev<float> f(4);
  Dev<uint8_t> b(4);
  REQUIRE_OK({{ p }}_fill(nullptr, {{ NAME }}_INT64, l.ptr(), 4, 7));
  EXPECT_OK({{ p }}_fill(nullptr, {{ NAME }}_FLOAT32, f.ptr(), 4, -2.5));
  EXPECT_OK({{ p }}_fill(nullptr, {{ NAME }}_BOOL, b.ptr(), 4, 1));
  EXPECT((l.host() == std::vector<int64_t>{7, 7, 7, 7}));
  EXPECT((f.host() == std::vector<float>(4, -2.5f)));
  EXPECT((b.host() == std::vector<uint8_t>(4, 1)));
}

CONFORMANCE_CASE("ops.movement", cast_between_dtypes) {
  Dev<float> x(std::vector<float>{-1.5f, 0.f, 2.7f, 9.f});
  Dev<int32_t> i(4);
  Dev<uint8_t> m(4);
  REQUIRE_OK({{ p }}_cast(nullptr, {{ NAME }}_FLOAT32, x.ptr(), {{ NAME }}_INT32, i.ptr(), 4));
  EXPECT_OK({{ p }}_cast(nullptr, {{ NAME }}_FLOAT32, x.ptr(), {{ NAME }}_BOOL, m.ptr(), 4));
  EXPECT((i.host() == std::vector<int32_t>{-1, 0, 2, 9}));
  EXPECT((m.host() == std::vector<uint8_t>{1, 0, 1, 1}));
}

// The transposed view of a [2,3] array (strides 1, 3) into a dense [3,2] one.
CONFORMANCE_CASE("ops.movement", strided_copy_of_a_transposed_view) {
  Dev<int32_t> x(std::vector<int32_t>{0, 1, 2, 3, 4, 5}), c(6);
  const auto dims = conformance::shape({3, 2});
  const int64_t src_strides[2] = {1, 3}, dst_strides[2] = {2, 1};
  REQUIRE_OK({{ p }}_strided_copy(nullptr, {{ NAME }}_INT32, &dims, x.ptr(), src_strides, c.ptr(), dst_strides));
  EXPECT((c.host() == std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  Dev<float> f(std::vector<float>{0, 1, 2, 3, 4, 5}), out(6);
  const auto fd = conformance::shape({2, 3});
  const int64_t view[] = {1, 2}, dense[] = {3, 1};  // the transpose view of a [3,2] array
  REQUIRE_OK({{ p }}_strided_copy(nullptr, {{ NAME }}_FLOAT32, &fd, f.ptr(), view, out.ptr(), dense));
  EXPECT((out.host() == std::vector<float>{0, 2, 4, 1, 3, 5}));
}
