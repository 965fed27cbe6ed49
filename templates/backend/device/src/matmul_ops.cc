// {{ NAME }} device library: GEMM
// (the device side of kernels/matmul_kernels.cc).
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {
namespace {

// Copy op(X) (rows x cols after the op) into a dense row-major buffer.
void materialize(const float* x, int64_t ld, bool trans, int64_t rows, int64_t cols,
                 std::vector<float>* out) {
  out->resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      (*out)[r * cols + c] = trans ? x[c * ld + r] : x[r * ld + c];
}

}  // namespace

// ---- GEMM (declared in internal.h) -------------------------------------------
// Row-major C[m,n] = alpha*A[m,k]*B[k,n] + beta*C with contiguous A and B.
// Blocked over k and n so the inner loop streams rows of B and C and the
// compiler vectorizes it.
void gemm_nn(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
             const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* crow = c + i * ldc;
    if (beta == 0.f) {
      std::fill(crow, crow + n, 0.f);
    } else if (beta != 1.f) {
      for (int64_t j = 0; j < n; ++j) crow[j] *= beta;
    }
  }
  constexpr int64_t kBlockK = 128, kBlockN = 512;
  for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
    const int64_t k1 = std::min(k, k0 + kBlockK);
    for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
      const int64_t j1 = std::min(n, j0 + kBlockN);
      for (int64_t i = 0; i < m; ++i) {
        float* __restrict crow = c + i * ldc;
        const float* arow = a + i * lda;
        for (int64_t p = k0; p < k1; ++p) {
          const float av = alpha * arow[p];
          if (av == 0.f) continue;
          const float* __restrict brow = b + p * ldb;
          for (int64_t j = j0; j < j1; ++j) crow[j] += av * brow[j];
        }
      }
    }
  }
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  std::vector<float> abuf, bbuf;
  if (ta) {
    materialize(a, lda, true, m, k, &abuf);
    a = abuf.data();
    lda = k;
  }
  if (tb) {
    materialize(b, ldb, true, k, n, &bbuf);
    b = bbuf.data();
    ldb = n;
  }
  gemm_nn(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_gemm({{ p }}_stream_t s, int trans_a, int trans_b, int64_t m, int64_t n,
                       int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                       int64_t ldb, float beta, float* c, int64_t ldc) {
  debug::Trace trace_("gemm");
  trace_.attr("trans_a", trans_a).attr("trans_b", trans_b).attr("m", m).attr("n", n).attr("k", k).attr("alpha", alpha).attr("beta", beta).tensor("a", a, {{ NAME }}_FLOAT32, {trans_a ? k : m, trans_a ? m : k}).tensor("b", b, {{ NAME }}_FLOAT32, {trans_b ? n : k, trans_b ? k : n}).tensor("c", c, {{ NAME }}_FLOAT32, {m, n});
  if (m < 0 || n < 0 || k < 0 || (m * n > 0 && !c)) return {{ NAME }}_ERROR_INVALID_VALUE;
  const bool compare = debug::settings().autocompare && m * n > 0;
  std::vector<float> c_before;  // beta reads C, which the op overwrites
  if (compare && beta != 0.f) c_before.assign(c, c + (m - 1) * ldc + n);
  {{ NAME }}_SUBMIT(s, {
    gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (compare) {
      std::vector<float> want(static_cast<size_t>((m - 1) * ldc + n)), got(m * n), packed(m * n);
      reference::gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c_before.data(), want.data(), ldc);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          got[i * n + j] = c[i * ldc + j];
          packed[i * n + j] = want[i * ldc + j];
        }
      debug::compare("gemm", "c", got.data(), packed.data(), m * n, debug::dims_string({m, n}));
    }
  });
}

}  // extern "C"
