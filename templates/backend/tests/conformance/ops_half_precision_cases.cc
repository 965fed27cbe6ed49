// Conformance, area ops.half_precision: the 16-bit floating-point dtypes ({{ NAME }}_FLOAT16,
// {{ NAME }}_BFLOAT16) across the op families -- storage rounded to nearest even, values
// computed and accumulated in float32. The expected bit patterns are IEEE 754 facts, written
// out here (not computed by the core's own conversions, which the library uses).
#include <cstdint>
#include <cstring>
#include <vector>

#include "conformance.h"
#include "half_types.h"

using conformance::shape;

namespace {

float f32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::vector<uint16_t> cast_to(const std::vector<float>& values, {{ p }}_dtype_t dtype) {
  Dev<float> x(values);
  Dev<uint16_t> out(values.size());
  REQUIRE_OK({{ p }}_cast(nullptr, {{ NAME }}_FLOAT32, x.ptr(), dtype, out.ptr(), static_cast<int64_t>(values.size())));
  return out.host();
}

std::vector<float> as_float(const std::vector<uint16_t>& bits, {{ p }}_dtype_t dtype) {
  std::vector<float> out;
  for (uint16_t b : bits)
    out.push_back(dtype == {{ NAME }}_FLOAT16 ? {{ p }}::core::float16_bits_to_float(b)
                                             : {{ p }}::core::bfloat16_bits_to_float(b));
  return out;
}

// got within `rtol` of want (relative, with an absolute floor of rtol for values near 0).
bool all_near(const std::vector<float>& got, const std::vector<float>& want, double rtol) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (!conformance::near(got[i], want[i], rtol)) return false;
  return true;
}

const {{ p }}_dtype_t kHalfTypes[] = { {{- NAME }}_FLOAT16, {{ NAME }}_BFLOAT16};
double tolerance({{ p }}_dtype_t dtype) { return dtype == {{ NAME }}_FLOAT16 ? 1e-3 : 8e-3; }

}  // namespace

CONFORMANCE_CASE("ops.half_precision", cast_to_float16_rounds_to_nearest_even) {
  const std::vector<float> in = {
      1.f,          -2.f,         65504.f,      65519.f,      65520.f,      -1e6f,       f32(0x7f800000),
      f32(0x3f801000),  // 1 + 2^-11: halfway between 1 and the next float16, ties to the even 1
      f32(0x3f803000),  // 1 + 3 * 2^-11: halfway, ties to the even 1 + 2^-9
      f32(0x33800000),  // 2^-24: the smallest subnormal
      f32(0x33000000),  // 2^-25: halfway to it, ties to zero
      f32(0x33400000),  // 1.5 * 2^-25: rounds up to the smallest subnormal
      f32(0x38800000),  // 2^-14: the smallest normal
      -0.f,
  };
  const std::vector<uint16_t> want = {0x3c00, 0xc000, 0x7bff, 0x7bff, 0x7c00, 0xfc00, 0x7c00,
                                      0x3c00, 0x3c02, 0x0001, 0x0000, 0x0001, 0x0400, 0x8000};
  EXPECT(cast_to(in, {{ NAME }}_FLOAT16) == want);
  const std::vector<uint16_t> nan = cast_to({f32(0x7fc00000), f32(0xffc00001)}, {{ NAME }}_FLOAT16);
  REQUIRE(nan.size() == 2);
  EXPECT((nan[0] & 0x7c00) == 0x7c00 && (nan[0] & 0x3ff) != 0);  // still NaN
  EXPECT((nan[1] & 0xfc00) == 0xfc00 && (nan[1] & 0x3ff) != 0);  // sign kept
}

CONFORMANCE_CASE("ops.half_precision", cast_to_bfloat16_rounds_to_nearest_even) {
  const std::vector<float> in = {
      1.f, -2.f, f32(0x3f808000) /* 1 + 2^-8: halfway, ties to the even 1 */,
      f32(0x3f818000) /* 1 + 3 * 2^-8: halfway, ties to 1 + 2^-6 */, f32(0x3f808001) /* just above halfway */,
      f32(0x7f7fffff) /* the largest float rounds to infinity */, f32(0xff800000), f32(0x00000001), -0.f};
  const std::vector<uint16_t> want = {0x3f80, 0xc000, 0x3f80, 0x3f82, 0x3f81, 0x7f80, 0xff80, 0x0000, 0x8000};
  EXPECT(cast_to(in, {{ NAME }}_BFLOAT16) == want);
  const std::vector<uint16_t> nan = cast_to({f32(0x7f800001)}, {{ NAME }}_BFLOAT16);  // a NaN with a low payload
  REQUIRE(nan.size() == 1);
  EXPECT((nan[0] & 0x7f80) == 0x7f80 && (nan[0] & 0x7f) != 0);  // does not become infinity
}

// Every float16 value survives float16 -> float32 -> float16 unchanged, NaNs as NaNs;
// the same for every bfloat16 value.
CONFORMANCE_CASE("ops.half_precision", every_16_bit_value_round_trips_through_float32) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  for ({{ p }}_dtype_t dtype : kHalfTypes) {
    Dev<uint16_t> bits(all), back(all.size());
    Dev<float> wide(all.size());
    REQUIRE_OK({{ p }}_cast(nullptr, dtype, bits.ptr(), {{ NAME }}_FLOAT32, wide.ptr(), 65536));
    REQUIRE_OK({{ p }}_cast(nullptr, {{ NAME }}_FLOAT32, wide.ptr(), dtype, back.ptr(), 65536));
    const std::vector<uint16_t> got = back.host();
    REQUIRE(got.size() == all.size());
    const uint16_t exponent = dtype == {{ NAME }}_FLOAT16 ? 0x7c00 : 0x7f80;
    int64_t changed = 0;
    for (uint32_t i = 0; i < all.size(); ++i) {
      const bool nan = (i & exponent) == exponent && (i & ~(exponent | 0x8000u)) != 0;
      const bool still_nan = (got[i] & exponent) == exponent && (got[i] & ~(exponent | 0x8000u)) != 0;
      if (nan ? !still_nan : got[i] != all[i]) ++changed;
    }
    EXPECT(changed == 0);
  }
}

// Binary and unary ops read their operands into float32 and round the result once.
CONFORMANCE_CASE("ops.half_precision", elementwise_ops_compute_in_float32) {
  const std::vector<float> a = {1.5f, -2.25f, 3.f, 0.1f, 100.f, -0.5f}, b = {0.5f, 4.f, -1.f, 3.f, 0.3f, 2.f};
  for ({{ p }}_dtype_t dtype : kHalfTypes) {
    Dev<uint16_t> x(cast_to(a, dtype)), y(cast_to(b, dtype)), out(a.size());
    const std::vector<float> ra = as_float(x.host(), dtype), rb = as_float(y.host(), dtype);
    const auto s = shape({6});
    const {{ p }}_binary_op_t ops[] = { {{- NAME }}_BINARY_ADD, {{ NAME }}_BINARY_MUL, {{ NAME }}_BINARY_DIV};
    for ({{ p }}_binary_op_t op : ops) {
      REQUIRE_OK({{ p }}_binary(nullptr, op, dtype, x.ptr(), &s, y.ptr(), &s, out.ptr(), &s));
      std::vector<float> want;
      for (size_t i = 0; i < a.size(); ++i)
        want.push_back(op == {{ NAME }}_BINARY_ADD ? ra[i] + rb[i] : op == {{ NAME }}_BINARY_MUL ? ra[i] * rb[i] : ra[i] / rb[i]);
      EXPECT(all_near(as_float(out.host(), dtype), want, tolerance(dtype)));
    }
    REQUIRE_OK({{ p }}_unary(nullptr, {{ NAME }}_UNARY_SIGMOID, dtype, x.ptr(), out.ptr(), 6));
    std::vector<float> want;
    for (float v : ra) want.push_back(1.f / (1.f + std::exp(-v)));
    EXPECT(all_near(as_float(out.host(), dtype), want, tolerance(dtype)));
    REQUIRE_OK({{ p }}_unary(nullptr, {{ NAME }}_UNARY_RELU, dtype, x.ptr(), out.ptr(), 6));
    want.clear();
    for (float v : ra) want.push_back(v > 0 ? v : 0.f);
    EXPECT(as_float(out.host(), dtype) == want);  // exact: relu only selects
  }
}

// 4096 ones summed: a float16 accumulator stops at 2048 (2048 + 1 rounds back to 2048);
// accumulating in float32 gives 4096, which float16 and bfloat16 both hold exactly.
CONFORMANCE_CASE("ops.half_precision", sums_accumulate_in_float32) {
  for ({{ p }}_dtype_t dtype : kHalfTypes) {
    Dev<uint16_t> x(cast_to(std::vector<float>(4096, 1.f), dtype)), sum(1), to_shape(1);
    const auto xs = shape({4096}), one = shape({1});
    const int mask[1] = {1};
    REQUIRE_OK({{ p }}_reduce(nullptr, {{ NAME }}_REDUCE_SUM, dtype, x.ptr(), &xs, mask, sum.ptr()));
    EXPECT(as_float(sum.host(), dtype) == std::vector<float>{4096.f});
    REQUIRE_OK({{ p }}_sum_to_shape(nullptr, dtype, x.ptr(), &xs, to_shape.ptr(), &one));
    EXPECT(as_float(to_shape.host(), dtype) == std::vector<float>{4096.f});
  }
}

// A float16 overflow is infinity, not a wrapped or saturated value: what loss scaling detects.
CONFORMANCE_CASE("ops.half_precision", float16_overflow_is_infinity) {
  Dev<uint16_t> x(cast_to({60000.f, -60000.f}, {{ NAME }}_FLOAT16)), out(2);
  const auto s = shape({2});
  REQUIRE_OK({{ p }}_binary(nullptr, {{ NAME }}_BINARY_ADD, {{ NAME }}_FLOAT16, x.ptr(), &s, x.ptr(), &s, out.ptr(), &s));
  EXPECT((out.host() == std::vector<uint16_t>{0x7c00, 0xfc00}));
}

// A 16-bit GEMM with transposed operands into the middle of a wider C (ldc > n): the product
// matches float32 on the same (rounded) inputs, and what lies between C's rows is untouched.
CONFORMANCE_CASE("ops.half_precision", gemm_computes_in_float32_and_keeps_the_rest_of_c) {
  const int64_t m = 3, n = 4, k = 5, ldc = 6;
  std::vector<float> a(k * m), b(n * k), c(m * ldc, 7.f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.25f * static_cast<float>(i) - 1.f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.5f * static_cast<float>(i));
  for ({{ p }}_dtype_t dtype : kHalfTypes) {
    Dev<uint16_t> da(cast_to(a, dtype)), db(cast_to(b, dtype)), dc(cast_to(c, dtype));
    const std::vector<float> ra = as_float(da.host(), dtype), rb = as_float(db.host(), dtype);
    // C = 2 * A^T B^T + 0.5 * C, A stored [k, m] and B [n, k]
    REQUIRE_OK({{ p }}_gemm(nullptr, dtype, 1, 1, m, n, k, 2.f, da.ptr(), m, db.ptr(), k, 0.5f, dc.ptr(), ldc));
    const std::vector<float> got = as_float(dc.host(), dtype);
    REQUIRE(got.size() == c.size());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        float want = 7.f;
        if (j < n) {
          float acc = 0.f;
          for (int64_t p = 0; p < k; ++p) acc += ra[p * m + i] * rb[j * k + p];
          want = 2.f * acc + 0.5f * 7.f;
        }
        EXPECT(conformance::near(got[i * ldc + j], want, tolerance(dtype)));
      }
  }
}

// Convolution, pooling and softmax on 16-bit storage give the float32 op's result on the same
// inputs, rounded once.
CONFORMANCE_CASE("ops.half_precision", conv_pool_and_softmax_match_float32) {
  {{ p }}_conv2d_params_t cp = {2, 3, 6, 6, 4, 4, 4, 3, 3, 1, 1, 0, 0, 1, 1, 1};
  {{ p }}_pool2d_params_t pp = {2, 4, 4, 4, 2, 2, 2, 2, 2, 2, 0, 0, 1, 0, 0};
  std::vector<float> x(2 * 3 * 36), w(4 * 3 * 9);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.2f * std::cos(0.11f * static_cast<float>(i));
  for ({{ p }}_dtype_t dtype : kHalfTypes) {
    Dev<uint16_t> hx(cast_to(x, dtype)), hw(cast_to(w, dtype)), hy(2 * 4 * 16), hp(2 * 4 * 4), hs(2 * 4 * 16);
    Dev<float> fx(as_float(hx.host(), dtype)), fw(as_float(hw.host(), dtype)), fy(2 * 4 * 16), fp(2 * 4 * 4),
        fs(2 * 4 * 16);
    REQUIRE_OK({{ p }}_conv2d_forward(nullptr, dtype, &cp, hx.ptr(), hw.ptr(), hy.ptr()));
    REQUIRE_OK({{ p }}_conv2d_forward(nullptr, {{ NAME }}_FLOAT32, &cp, fx.ptr(), fw.ptr(), fy.ptr()));
    REQUIRE_OK({{ p }}_pool2d_forward(nullptr, dtype, &pp, hy.ptr(), hp.ptr()));
    REQUIRE_OK({{ p }}_pool2d_forward(nullptr, {{ NAME }}_FLOAT32, &pp, fy.ptr(), fp.ptr()));
    REQUIRE_OK({{ p }}_softmax_forward(nullptr, dtype, hy.ptr(), hs.ptr(), 2, 4, 16));
    REQUIRE_OK({{ p }}_softmax_forward(nullptr, {{ NAME }}_FLOAT32, fy.ptr(), fs.ptr(), 2, 4, 16));
    // (pooling and softmax read the 16-bit convolution's output, so they carry its rounding)
    EXPECT(all_near(as_float(hy.host(), dtype), fy.host(), tolerance(dtype)));
    EXPECT(all_near(as_float(hp.host(), dtype), fp.host(), 2 * tolerance(dtype)));
    EXPECT(all_near(as_float(hs.host(), dtype), fs.host(), 4 * tolerance(dtype)));
  }
}
