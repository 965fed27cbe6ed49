// Conformance, area ops.stride (device/src/stride_ops.cc): views made contiguous.
#include <vector>

#include "conformance.h"

// The transposed view of a [2,3] array (strides 1, 3) into a dense [3,2] one.
CONFORMANCE_CASE("ops.stride", strided_copy_of_a_transposed_view) {
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
