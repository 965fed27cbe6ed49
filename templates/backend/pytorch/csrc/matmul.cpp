// Matrix products (device/src/matmul_ops.cc): mm, addmm, bmm on the device gemm, in float32
// (and float16/bfloat16, computed in float32); other dtypes take the CPU from inside the kernel.

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/addr_native.h>

#include "common.h"

namespace torch_{{ p }} {
namespace matmul {

// ---- matrix products ------------------------------------------------------------------
// A 2-D operand for gemm: row-major with leading dimension `ld`, or the transpose of one
// (a .t() view costs no copy); anything else is made contiguous first.
struct GemmOperand {
  at::Tensor t;
  bool trans = false;
  int64_t ld = 0;
};

GemmOperand gemm_operand(const at::Tensor& m) {
  const int64_t rows = m.size(0), cols = m.size(1);
  if (m.stride(1) == 1 && m.stride(0) >= std::max<int64_t>(1, cols)) return {m, false, m.stride(0)};
  if (m.stride(0) == 1 && m.stride(1) >= std::max<int64_t>(1, rows)) return {m, true, m.stride(1)};
  at::Tensor c = contiguous(m);
  return {c, false, std::max<int64_t>(1, cols)};
}

// out[M,N] (contiguous, a's dtype: gemm_dtype_device) = alpha * a @ b + beta * out
void gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out, double alpha, double beta) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const {{ p }}_dtype_t dtype = device_dtype(out.scalar_type());
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: out = beta * out
    check({{ p }}_scale(current_stream(), dtype, out.const_data_ptr(), out.data_ptr(), out.numel(), beta, 0, 1), "scale");
    return;
  }
  GemmOperand A = gemm_operand(a), B = gemm_operand(b);
  check({{ p }}_gemm(current_stream(), dtype, A.trans, B.trans, m, n, k, static_cast<float>(alpha), A.t.const_data_ptr(), A.ld,
                  B.t.const_data_ptr(), B.ld, static_cast<float>(beta), out.data_ptr(), n),
        "gemm");
}

// Whether an out= tensor can take the product itself (torch.compile's extern kernels pass one
// for every matmul): the result's shape and dtype, contiguous, and sharing no memory with an
// operand (gemm would read what it writes). Otherwise the product is made apart and stored.
bool takes_result(const at::Tensor& out, at::IntArrayRef sizes, std::initializer_list<const at::Tensor*> operands) {
  if (out.sizes() != sizes || out.scalar_type() != (*operands.begin())->scalar_type() || !out.is_contiguous()) return false;
  for (const at::Tensor* t : operands)
    if (at::get_overlap_status(out, *t) != at::MemOverlapStatus::No) return false;
  return true;
}

void check_mm(const at::Tensor& self, const at::Tensor& mat2) {
  TORCH_CHECK(self.dim() == 2 && mat2.dim() == 2, "mm: both arguments must be 2-D, got ", self.dim(), "-D and ", mat2.dim(), "-D");
  TORCH_CHECK(self.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", self.size(0), "x", self.size(1),
              " and ", mat2.size(0), "x", mat2.size(1), ")");
}

// out (takes_result) = self @ mat2
at::Tensor& mm_into(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  if (self.size(1) == 0) return out.zero_();
  gemm(self, mat2, out, 1.0, 0.0);
  return out;
}

at::Tensor mm_device(const at::Tensor& self, const at::Tensor& mat2) {
  check_mm(self, mat2);
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = empty_device({self.size(0), mat2.size(1)}, self.options());
  return mm_into(self, mat2, out);
}

at::Tensor mm(const at::Tensor& self, const at::Tensor& mat2) {
  KernelName k("aten::mm");
  if (!gemm_dtype_device({&self, &mat2})) return run_on_cpu<ATEN_OP(mm)>(self, mat2);
  return mm_device(self, mat2);
}

at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  KernelName k("aten::mm.out");
  if (!gemm_dtype_device({&self, &mat2, &out})) return run_on_cpu<ATEN_OP2(mm, out)>(self, mat2, out);
  check_mm(self, mat2);
  if (!takes_result(out, {self.size(0), mat2.size(1)}, {&self, &mat2})) return store(mm_device(self, mat2), out);
  const c10::DeviceGuard guard(self.device());
  return mm_into(self, mat2, out);
}

void check_addmm(const at::Tensor& mat1, const at::Tensor& mat2) {
  TORCH_CHECK(mat1.dim() == 2 && mat2.dim() == 2, "addmm: mat1 and mat2 must be 2-D");
  TORCH_CHECK(mat1.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", mat1.size(0), "x", mat1.size(1),
              " and ", mat2.size(0), "x", mat2.size(1), ")");
}

// out (takes_result) = beta * self + alpha * mat1 @ mat2
at::Tensor& addmm_into(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                       const at::Scalar& alpha, at::Tensor& out) {
  if (out.numel() == 0) return out;
  const std::vector<int64_t> sizes{mat1.size(0), mat2.size(1)};
  const double b = beta.toDouble();
  if (b == 0.0) {  // self is ignored, NaNs included (as in PyTorch)
    out.zero_();
  } else {
    at::Tensor s = contiguous(self);
    {{ p }}_shape_t ss = shape_of(s.sizes()), os = shape_of(sizes);
    check({{ p }}_broadcast(current_stream(), device_dtype(out.scalar_type()), s.const_data_ptr(), &ss, out.data_ptr(), &os),
          "broadcast");
  }
  gemm(mat1, mat2, out, alpha.toDouble(), b);
  return out;
}

at::Tensor addmm_device(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                        const at::Scalar& alpha) {
  check_addmm(mat1, mat2);
  const c10::DeviceGuard guard(mat1.device());
  at::Tensor out = empty_device({mat1.size(0), mat2.size(1)}, mat1.options());
  return addmm_into(self, mat1, mat2, beta, alpha, out);
}

at::Tensor addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  KernelName k("aten::addmm");
  if (!gemm_dtype_device({&self, &mat1, &mat2})) return run_on_cpu<ATEN_OP(addmm)>(self, mat1, mat2, beta, alpha);
  return addmm_device(self, mat1, mat2, beta, alpha);
}

at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& beta,
                      const at::Scalar& alpha, at::Tensor& out) {
  KernelName k("aten::addmm.out");
  if (!gemm_dtype_device({&self, &mat1, &mat2, &out})) return run_on_cpu<ATEN_OP2(addmm, out)>(self, mat1, mat2, beta, alpha, out);
  check_addmm(mat1, mat2);
  if (!takes_result(out, {mat1.size(0), mat2.size(1)}, {&mat1, &self, &mat2}))
    return store(addmm_device(self, mat1, mat2, beta, alpha), out);
  const c10::DeviceGuard guard(mat1.device());
  return addmm_into(self, mat1, mat2, beta, alpha, out);
}

at::Tensor bmm_device(const at::Tensor& self, const at::Tensor& mat2) {
  TORCH_CHECK(self.dim() == 3 && mat2.dim() == 3, "bmm: both arguments must be 3-D");
  TORCH_CHECK(self.size(0) == mat2.size(0) && self.size(2) == mat2.size(1), "bmm: shapes cannot be multiplied (",
              self.sizes(), " and ", mat2.sizes(), ")");
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = empty_device({self.size(0), self.size(1), mat2.size(2)}, self.options());
  if (out.numel() == 0) return out;
  if (self.size(2) == 0) return out.zero_();
  for (int64_t i = 0; i < self.size(0); ++i) gemm(self[i], mat2[i], out[i], 1.0, 0.0);  // one launch per matrix
  return out;
}

at::Tensor bmm(const at::Tensor& self, const at::Tensor& mat2) {
  KernelName k("aten::bmm");
  if (!gemm_dtype_device({&self, &mat2})) return run_on_cpu<ATEN_OP(bmm)>(self, mat2);
  return bmm_device(self, mat2);
}

at::Tensor& bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  KernelName k("aten::bmm.out");
  if (!gemm_dtype_device({&self, &mat2, &out})) return run_on_cpu<ATEN_OP2(bmm, out)>(self, mat2, out);
  return store(bmm_device(self, mat2), out);
}

// ---- outer product -------------------------------------------------------------------
// addr in float16/bfloat16 as torch's CPU kernel computes it: (alpha * vec1) outer vec2, plus
// beta * self, each step rounded to the 16-bit type. torch's composite for other backends
// (math_addr, which other dtypes keep) takes alpha * (vec1 outer vec2): a ulp off the CPU (0.06 at
// 50 in float16, 1.0 at 300 in bfloat16: OpInfo's samples failed); computed in float32 and
// rounded once it is as far off.
at::Tensor addr(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2, const at::Scalar& beta,
                const at::Scalar& alpha) {
  KernelName k("aten::addr");
  const at::ScalarType type = self.scalar_type();
  if (!half_type(type) || vec1.scalar_type() != type || vec2.scalar_type() != type || vec1.dim() != 1 ||
      vec2.dim() != 1 || !at::is_expandable_to(self.sizes(), {vec1.size(0), vec2.size(0)}))
    return at::native::math_addr(self, vec1, vec2, beta, alpha);
  const at::Tensor product = vec1.mul(alpha).unsqueeze(1).mul(vec2);
  return beta.toComplexDouble() == 0.0 ? product : self.mul(beta).add(product);  // beta 0 ignores self's NaN
}

}  // namespace matmul

}  // namespace torch_{{ p }}
