// {{ NAME }} device library: GEMM
// (the device side of kernels/matmul_kernels.cc).
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {
namespace {

// ---- packed GEMM ----------------------------------------------------------------
// An MR x NR tile of C lives in registers while the loop over k broadcasts one value
// of A against NR packed values of B: the compiler turns the inner loop into vector
// FMAs. A and B are packed per k-slice into contiguous strips (op() and alpha applied
// while packing), so transposed operands cost nothing extra.
constexpr int64_t kMR = 6, kNR = 16;
constexpr int64_t kKC = 256;   // k-slice: an MR x KC strip of A and a KC x NR strip of B stay in L1
constexpr int64_t kNC = 3072;  // columns of B packed at once: KC x NC floats (3 MB) share L2/L3

inline float element(const float* x, int64_t ld, bool trans, int64_t r, int64_t c) {
  return trans ? x[c * ld + r] : x[r * ld + c];
}

// op(B)[k0:k0+kc, j0:j0+nc] as NR-wide strips of kc rows, zero padded.
void pack_b(const float* b, int64_t ldb, bool tb, int64_t k0, int64_t kc, int64_t j0, int64_t nc,
            float* out) {
  for (int64_t s = 0; s < nc; s += kNR) {
    const int64_t w = std::min(kNR, nc - s);
    float* strip = out + s * kc;
    for (int64_t p = 0; p < kc; ++p) {
      float* dst = strip + p * kNR;
      if (!tb) {
        const float* src = b + (k0 + p) * ldb + j0 + s;
        for (int64_t c = 0; c < w; ++c) dst[c] = src[c];
      } else {
        for (int64_t c = 0; c < w; ++c) dst[c] = b[(j0 + s + c) * ldb + k0 + p];
      }
      for (int64_t c = w; c < kNR; ++c) dst[c] = 0.f;
    }
  }
}

// alpha * op(A)[i0:i0+rows, k0:k0+kc] as one MR-tall strip, zero padded.
void pack_a(const float* a, int64_t lda, bool ta, float alpha, int64_t i0, int64_t rows, int64_t k0,
            int64_t kc, float* out) {
  for (int64_t p = 0; p < kc; ++p) {
    float* dst = out + p * kMR;
    for (int64_t r = 0; r < rows; ++r) dst[r] = alpha * element(a, lda, ta, i0 + r, k0 + p);
    for (int64_t r = rows; r < kMR; ++r) dst[r] = 0.f;
  }
}

// C[rows, cols] += Ap (MR x kc strip) * Bp (kc x NR strip). The accumulators are GCC
// vector-extension values (8 floats), so they stay in registers on any target; on x86-64
// GCC also emits an AVX+FMA version and picks it at load time when the CPU has FMA (ifunc).
typedef float Vec8 __attribute__((vector_size(32)));
static_assert(kNR == 16, "the micro-kernel holds a 16-wide row of C in two Vec8");

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("fma", "default")))
#endif
void micro_kernel(int64_t kc, const float* __restrict ap, const float* __restrict bp,
                  float* __restrict c, int64_t ldc, int64_t rows, int64_t cols) {
  Vec8 acc[kMR][2] = {};
  for (int64_t p = 0; p < kc; ++p) {
    Vec8 b0, b1;
    std::memcpy(&b0, bp + p * kNR, sizeof b0);
    std::memcpy(&b1, bp + p * kNR + 8, sizeof b1);
    for (int64_t r = 0; r < kMR; ++r) {
      const Vec8 x = Vec8{} + ap[p * kMR + r];  // broadcast
      acc[r][0] += x * b0;
      acc[r][1] += x * b1;
    }
  }
  float tile[kMR][kNR];
  std::memcpy(tile, acc, sizeof tile);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) c[r * ldc + j] += tile[r][j];
}

void scale_rows(float beta, int64_t m, int64_t n, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* crow = c + i * ldc;
    if (beta == 0.f) {
      std::fill(crow, crow + n, 0.f);  // beta == 0 ignores C, NaN included (BLAS semantics)
    } else if (beta != 1.f) {
      for (int64_t j = 0; j < n; ++j) crow[j] *= beta;
    }
  }
}

}  // namespace

// ---- GEMM (declared in internal.h) -------------------------------------------
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  scale_rows(beta, m, n, c, ldc);
  if (m == 0 || n == 0 || k == 0 || alpha == 0.f) return;
  std::vector<float> bpack(static_cast<size_t>(std::min(kKC, k) * ((std::min(kNC, n) + kNR - 1) / kNR) * kNR));
  for (int64_t k0 = 0; k0 < k; k0 += kKC) {
    const int64_t kc = std::min(kKC, k - k0);
    for (int64_t j0 = 0; j0 < n; j0 += kNC) {
      const int64_t nc = std::min(kNC, n - j0);
      pack_b(b, ldb, tb, k0, kc, j0, nc, bpack.data());
      const int64_t row_strips = (m + kMR - 1) / kMR, col_strips = (nc + kNR - 1) / kNR;
      // Tasks are (row strip, column strip) pairs, row-major, so a worker repacks A
      // only when its row strip changes. Splitting only pays for enough work.
      parallel_for(row_strips * col_strips, 2 * kMR * kNR * kc, [&](int64_t begin, int64_t end) {
        float apack[kMR * kKC];
        int64_t packed_row = -1;
        for (int64_t t = begin; t < end; ++t) {
          const int64_t is = t / col_strips, js = t % col_strips;
          const int64_t i0 = is * kMR, rows = std::min(kMR, m - i0);
          if (is != packed_row) {
            pack_a(a, lda, ta, alpha, i0, rows, k0, kc, apack);
            packed_row = is;
          }
          const int64_t jj = js * kNR;
          micro_kernel(kc, apack, bpack.data() + jj * kc, c + i0 * ldc + j0 + jj, ldc, rows,
                       std::min(kNR, nc - jj));
        }
      });
    }
  }
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
