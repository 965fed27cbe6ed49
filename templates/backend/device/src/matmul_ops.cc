// {{ NAME }} device library: GEMM
// (the device side of paddle/kernels/matmul_kernels.cc).
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
// FMAs. Per k-slice, A is packed once (MR-tall strips, op() and alpha applied) and shared
// by the threads; each task then packs one KC x NR strip of op(B) into its own buffer (it
// stays in L1) and runs it against every strip of A. So B is packed once, in parallel,
// and transposed operands cost nothing extra. That order also suits the skinny products
// convolutions make (LeNet: 16 x 150 x 6400, 150 x 6400 x 16, 16 x 6400 x 150).
constexpr int64_t kMR = 6, kNR = 16;
constexpr int64_t kKC = 256;  // k-slice: a KC x NR strip of B (16 KB) stays in L1
constexpr int64_t kMC = 768;  // rows of A packed at once: MC x KC floats (768 KB) stay in L2

// op(B)[k0:k0+kc, j0:j0+w] as one NR-wide strip of kc rows, zero padded.
void pack_b_strip(const float* b, int64_t ldb, bool tb, int64_t k0, int64_t kc, int64_t j0, int64_t w,
                  float* out) {
  if (!tb) {
    for (int64_t p = 0; p < kc; ++p) {
      const float* src = b + (k0 + p) * ldb + j0;
      float* dst = out + p * kNR;
      if (w == kNR) {
        std::memcpy(dst, src, sizeof(float) * kNR);
      } else {
        std::memcpy(dst, src, sizeof(float) * w);
        std::fill(dst + w, dst + kNR, 0.f);
      }
    }
    return;
  }
  // op(B) = B^T: column c of the strip is row j0 + c of B, read along its length
  for (int64_t c = 0; c < kNR; ++c) {
    if (c >= w) {
      for (int64_t p = 0; p < kc; ++p) out[p * kNR + c] = 0.f;
      continue;
    }
    const float* src = b + (j0 + c) * ldb + k0;
    for (int64_t p = 0; p < kc; ++p) out[p * kNR + c] = src[p];
  }
}

// alpha * op(A)[i0:i0+rows, k0:k0+kc] as one MR-tall strip, zero padded.
void pack_a(const float* a, int64_t lda, bool ta, float alpha, int64_t i0, int64_t rows, int64_t k0,
            int64_t kc, float* out) {
  for (int64_t p = 0; p < kc; ++p) {
    float* dst = out + p * kMR;
    if (ta) {
      const float* src = a + (k0 + p) * lda + i0;  // op(A) = A^T: a row of A holds the strip's column
      for (int64_t r = 0; r < rows; ++r) dst[r] = alpha * src[r];
    } else {
      for (int64_t r = 0; r < rows; ++r) dst[r] = alpha * a[(i0 + r) * lda + k0 + p];
    }
    for (int64_t r = rows; r < kMR; ++r) dst[r] = 0.f;
  }
}

// C[rows, cols] += Ap (MR x kc strip) * Bp (kc x NR strip). The accumulators are GCC
// vector-extension values (8 floats), so they stay in registers on any target; on x86-64
// GCC also emits an AVX+FMA version and picks it at load time when the CPU has FMA (ifunc).
typedef float Vec8 __attribute__((vector_size(32)));
static_assert(kNR == 16, "the micro-kernel holds a 16-wide row of C in two Vec8");

// (Not under ThreadSanitizer: it instruments the ifunc resolver, which runs before it is set up.)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
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
  if (cols == kNR) {  // whole rows of the tile: vector adds into C (small k makes this the cost)
    for (int64_t r = 0; r < rows; ++r) {
      Vec8 c0, c1;
      std::memcpy(&c0, c + r * ldc, sizeof c0);
      std::memcpy(&c1, c + r * ldc + 8, sizeof c1);
      c0 += acc[r][0];
      c1 += acc[r][1];
      std::memcpy(c + r * ldc, &c0, sizeof c0);
      std::memcpy(c + r * ldc + 8, &c1, sizeof c1);
    }
    return;
  }
  float tile[kMR][kNR];
  std::memcpy(tile, acc, sizeof tile);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) c[r * ldc + j] += tile[r][j];
}

void scale_rows(float beta, int64_t m, int64_t n, float* c, int64_t ldc) {
  if (beta == 1.f) return;
  parallel_for(m, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float* crow = c + i * ldc;
      if (beta == 0.f) {
        std::fill(crow, crow + n, 0.f);  // beta == 0 ignores C, NaN included (BLAS semantics)
      } else {
        for (int64_t j = 0; j < n; ++j) crow[j] *= beta;
      }
    }
  });
}

}  // namespace

// ---- GEMM (declared in internal.h) -------------------------------------------
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  // A small C over a long k (a weight gradient: 6 x 25 over 50176 in LeNet) has too few
  // tiles to share out, and one parallel region per k-slice costs more than the slice: the
  // threads take a part of k each (a whole GEMM, inline) and their C parts are summed.
  const int64_t parts = std::min<int64_t>(worker_threads(), k / (4 * kKC));
  if (parts > 1 && m * n <= (int64_t{1} << 14) && m > 0 && n > 0) {
    std::vector<float> partial(static_cast<size_t>(parts * m * n));
    run_chunks(parts, parts, [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        const int64_t k0 = k * part / parts, k1 = k * (part + 1) / parts;
        gemm(ta, tb, m, n, k1 - k0, alpha, ta ? a + k0 * lda : a + k0, lda, tb ? b + k0 : b + k0 * ldb, ldb, 0.f,
             partial.data() + part * m * n, n);
      }
    });
    scale_rows(beta, m, n, c, ldc);
    for (int64_t part = 0; part < parts; ++part)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] += partial[(part * m + i) * n + j];
    return;
  }
  scale_rows(beta, m, n, c, ldc);
  if (m == 0 || n == 0 || k == 0 || alpha == 0.f) return;
  const int64_t col_strips = (n + kNR - 1) / kNR;
  float* apack = scratch(Scratch::kGemmPanel, static_cast<size_t>(((std::min(kMC, m) + kMR - 1) / kMR) * kMR * std::min(kKC, k)));
  for (int64_t k0 = 0; k0 < k; k0 += kKC) {
    const int64_t kc = std::min(kKC, k - k0);
    for (int64_t i0 = 0; i0 < m; i0 += kMC) {
      const int64_t mc = std::min(kMC, m - i0), row_strips = (mc + kMR - 1) / kMR;
      parallel_for(row_strips, 2 * kMR * kc, [&](int64_t begin, int64_t end) {
        for (int64_t is = begin; is < end; ++is)
          pack_a(a, lda, ta, alpha, i0 + is * kMR, std::min(kMR, mc - is * kMR), k0, kc,
                 apack + is * kMR * kc);
      });
      // A task is a column strip: its B strip is packed once and meets every strip of A.
      parallel_for(col_strips, 2 * kMR * kNR * kc * row_strips, [&](int64_t begin, int64_t end) {
        alignas(64) float bstrip[kKC * kNR];
        for (int64_t js = begin; js < end; ++js) {
          const int64_t j0 = js * kNR, w = std::min(kNR, n - j0);
          pack_b_strip(b, ldb, tb, k0, kc, j0, w, bstrip);
          for (int64_t is = 0; is < row_strips; ++is) {
            const int64_t r0 = is * kMR;
            micro_kernel(kc, apack + r0 * kc, bstrip, c + (i0 + r0) * ldc + j0, ldc,
                         std::min(kMR, mc - r0), w);
          }
        }
      });
    }
  }
}

}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_gemm({{ p }}_stream_t s, {{ p }}_dtype_t dtype, int trans_a, int trans_b, int64_t m,
                       int64_t n, int64_t k, float alpha, const void* a, int64_t lda, const void* b,
                       int64_t ldb, float beta, void* c, int64_t ldc) {
  debug::Trace trace_("gemm");
  trace_.attr("trans_a", trans_a).attr("trans_b", trans_b).attr("m", m).attr("n", n).attr("k", k).attr("alpha", alpha).attr("beta", beta).tensor("a", a, dtype, {trans_a ? k : m, trans_a ? m : k}).tensor("b", b, dtype, {trans_b ? n : k, trans_b ? k : n}).tensor("c", c, dtype, {m, n});
  if (m < 0 || n < 0 || k < 0 || (m * n > 0 && !c)) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (!float_body_dtype(dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  const bool compare = debug::settings().autocompare && m * n > 0;
  {{ NAME }}_DEVICE_POINTERS(s, a, b, c);
  {{ NAME }}_SUBMIT(s, {
    // the extent of each row-major operand, up to its last element
    auto extent = [](int64_t rows, int64_t cols, int64_t ld) { return rows > 0 && cols > 0 ? (rows - 1) * ld + cols : 0; };
    FloatOperands f(dtype);
    const float* fa = f.in(a, trans_a ? extent(k, m, lda) : extent(m, k, lda));
    const float* fb = f.in(b, trans_b ? extent(n, k, ldb) : extent(k, n, ldb));
    float* fc = f.out(c, extent(m, n, ldc), beta != 0.f || ldc != n);  // (rows apart: keep what lies between)
    std::vector<float> c_before;  // beta reads C, which the op overwrites
    if (compare && beta != 0.f) c_before.assign(fc, fc + (m - 1) * ldc + n);
    gemm(trans_a, trans_b, m, n, k, alpha, fa, lda, fb, ldb, beta, fc, ldc);
    if (compare) {
      std::vector<float> want(static_cast<size_t>((m - 1) * ldc + n)), got(m * n), packed(m * n);
      reference::gemm(trans_a, trans_b, m, n, k, alpha, fa, lda, fb, ldb, beta, c_before.data(), want.data(), ldc);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          got[i * n + j] = fc[i * ldc + j];
          packed[i * n + j] = want[i * ldc + j];
        }
      debug::compare("gemm", "c", got.data(), packed.data(), m * n, debug::dims_string({m, n}));
    }
    f.finish();
  });
}

}  // extern "C"
