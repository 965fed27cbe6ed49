// Conformance, area ops.matmul (device/src/matmul_ops.cc): GEMM against a naive product.
#include <cmath>
#include <vector>

#include "conformance.h"

// Odd tiles; a long k over a small C (split across threads); a skinny product; a short k; both
// operands transposed (stored explicitly) with beta = 1 adding to C.
CONFORMANCE_CASE("ops.matmul", gemm_matches_naive) {
  const int64_t shapes[][3] = { {37, 29, 53}, {6, 25, 5000}, {16, 150, 700}, {150, 40, 16} };
  for (const auto& mnk : shapes) {
    const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
    const double tol = 1e-5 * static_cast<double>(k);  // float sums of k products vs double
    std::vector<float> a(m * k), b(k * n), c(m * n, 7.f), ref(m * n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(static_cast<float>(i));
    for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(static_cast<float>(i));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += static_cast<double>(a[i * k + p]) * b[p * n + j];
        ref[i * n + j] = static_cast<float>(acc);
      }
    Dev<float> da(a), db(b), dc(c);
    REQUIRE_OK({{ p }}_gemm(nullptr, {{ NAME }}_FLOAT32, 0, 0, m, n, k, 1.f, da.ptr(), k, db.ptr(), n, 0.f, dc.ptr(), n));
    c = dc.host();
    REQUIRE(c.size() == ref.size());
    for (size_t i = 0; i < c.size(); ++i) EXPECT(conformance::near(c[i], ref[i], tol));
    std::vector<float> at(k * m), bt(n * k);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) at[p * m + i] = a[i * k + p];
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) bt[j * k + p] = b[p * n + j];
    Dev<float> dat(at), dbt(bt);
    EXPECT_OK({{ p }}_gemm(nullptr, {{ NAME }}_FLOAT32, 1, 1, m, n, k, 1.f, dat.ptr(), m, dbt.ptr(), k, 1.f, dc.ptr(), n));
    c = dc.host();
    REQUIRE(c.size() == ref.size());
    for (size_t i = 0; i < c.size(); ++i) EXPECT(conformance::near(c[i], 2.f * ref[i], tol));
    if (conformance::failed()) return;  // one shape's mismatches are enough to read
  }
}

CONFORMANCE_CASE("ops.matmul", gemm_alpha_beta) {
  const int64_t m = 3, n = 5, k = 4;
  std::vector<float> a(m * k), b(n * k), c0(m * n, 1.f), want(m * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.25f * i - 1;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.5f - 0.125f * i;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += a[i * k + p] * b[j * k + p];  // B transposed: [n, k]
      want[i * n + j] = 2 * acc + 0.5f * c0[i * n + j];
    }
  Dev<float> da(a), db(b), dc(c0);
  REQUIRE_OK({{ p }}_gemm(nullptr, {{ NAME }}_FLOAT32, 0, 1, m, n, k, 2.f, da.ptr(), k, db.ptr(), k, 0.5f, dc.ptr(), n));
  const std::vector<float> c = dc.host();
  REQUIRE(c.size() == want.size());
  for (size_t i = 0; i < c.size(); ++i) EXPECT(conformance::near(c[i], want[i], 1e-5));
}
