// matmul (batched, broadcasting, optional transposes) and its gradient.
#include "kernel_helpers.h"
#include "paddle/phi/kernels/matmul_grad_kernel.h"
#include "paddle/phi/kernels/matmul_kernel.h"

namespace {{ p }}_kernels {
namespace {

// A matmul operand seen as [batch..., rows, cols] in storage order.
struct Operand {
  std::vector<int64_t> batch;
  int64_t rows = 1, cols = 1;
};

// 1-D x is a row vector [1, K]; 1-D y a column vector [K, 1] (numpy rules).
Operand operand(const phi::DDim& d, bool is_x) {
  Operand o;
  const int nd = d.size();
  if (nd == 1) {
    o.rows = is_x ? 1 : d[0];
    o.cols = is_x ? d[0] : 1;
    return o;
  }
  for (int i = 0; i < nd - 2; ++i) o.batch.push_back(d[i]);
  o.rows = d[nd - 2];
  o.cols = d[nd - 1];
  return o;
}

struct Plan {
  Operand x, y;
  int64_t m, n, k;
  std::vector<int64_t> batch;             // broadcast batch shape of the output
  std::vector<int64_t> x_off, y_off;      // per output batch: operand matrix index
};

std::vector<int64_t> batch_offsets(const std::vector<int64_t>& src, const std::vector<int64_t>& out) {
  // matrix index in `src` for each output batch index (trailing-aligned broadcast)
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  std::vector<int64_t> offsets(total, 0), idx(out.size(), 0);
  for (int64_t b = 0; b < total; ++b) {
    int64_t off = 0, stride = 1;
    for (int i = static_cast<int>(out.size()) - 1, j = static_cast<int>(src.size()) - 1; j >= 0; --i, --j) {
      if (src[j] != 1) off += idx[i] * stride;
      stride *= src[j];
    }
    offsets[b] = off;
    for (int i = static_cast<int>(out.size()) - 1; i >= 0; --i) {
      if (++idx[i] < out[i]) break;
      idx[i] = 0;
    }
  }
  return offsets;
}

Plan plan(const phi::DenseTensor& x, const phi::DenseTensor& y, bool tx, bool ty) {
  Plan p;
  p.x = operand(x.dims(), true);
  p.y = operand(y.dims(), false);
  if (x.dims().size() == 1) tx = false;
  if (y.dims().size() == 1) ty = false;
  p.m = tx ? p.x.cols : p.x.rows;
  p.k = tx ? p.x.rows : p.x.cols;
  p.n = ty ? p.y.rows : p.y.cols;
  const int64_t ky = ty ? p.y.cols : p.y.rows;
  PADDLE_ENFORCE_EQ(p.k, ky, common::errors::InvalidArgument("matmul: inner dimensions differ"));
  const size_t nb = std::max(p.x.batch.size(), p.y.batch.size());
  p.batch.assign(nb, 1);
  for (size_t i = 0; i < nb; ++i) {
    const int64_t a = i + p.x.batch.size() >= nb ? p.x.batch[i + p.x.batch.size() - nb] : 1;
    const int64_t b = i + p.y.batch.size() >= nb ? p.y.batch[i + p.y.batch.size() - nb] : 1;
    p.batch[i] = std::max(a, b);
  }
  p.x_off = batch_offsets(p.x.batch, p.batch);
  p.y_off = batch_offsets(p.y.batch, p.batch);
  return p;
}

}  // namespace

template <typename T, typename Context>
void MatmulKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& y,
                  bool transpose_x, bool transpose_y, phi::DenseTensor* out) {
  T* o = ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  const Plan p = plan(x, y, transpose_x, transpose_y);
  const bool tx = transpose_x && x.dims().size() > 1, ty = transpose_y && y.dims().size() > 1;
  const T* xd = x.data<T>();
  const T* yd = y.data<T>();
  for (size_t b = 0; b < p.x_off.size(); ++b)
    {{ NAME }}_CHECK({{ p }}_gemm(stream_of(ctx), dtype_of<T>(), tx, ty, p.m, p.n, p.k, 1.f, xd + p.x_off[b] * p.x.rows * p.x.cols,
                       p.x.cols, yd + p.y_off[b] * p.y.rows * p.y.cols, p.y.cols, 0.f,
                       o + b * p.m * p.n, p.n),
          "matmul");
}
{{ NAME }}_CHECK_SIGNATURE(MatmulKernel, phi::MatmulKernel);

namespace {

// Sum per-output-batch operand gradients `full` ([out batch, rows, cols]) into
// `grad`, shaped like the operand (whose batch may broadcast).
template <typename T>
void reduce_batches(const Context& ctx, const phi::DenseTensor& full, const Operand& op,
                    const std::vector<int64_t>& out_batch, phi::DenseTensor* grad) {
  {{ p }}_shape_t src, dst;
  src.ndim = dst.ndim = static_cast<int>(out_batch.size()) + 2;
  const size_t pad = out_batch.size() - op.batch.size();
  for (size_t i = 0; i < out_batch.size(); ++i) {
    src.dims[i] = out_batch[i];
    dst.dims[i] = i < pad ? 1 : op.batch[i - pad];
  }
  src.dims[src.ndim - 2] = dst.dims[dst.ndim - 2] = op.rows;
  src.dims[src.ndim - 1] = dst.dims[dst.ndim - 1] = op.cols;
  {{ NAME }}_CHECK({{ p }}_sum_to_shape(stream_of(ctx), dtype_of<T>(), full.data(), &src, grad->data(), &dst),
        "matmul_grad");
}

}  // namespace

template <typename T, typename Context>
void MatmulGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& y,
                      const phi::DenseTensor& dout, bool transpose_x, bool transpose_y,
                      phi::DenseTensor* dx, phi::DenseTensor* dy) {
  const Plan p = plan(x, y, transpose_x, transpose_y);
  const bool tx = transpose_x && x.dims().size() > 1, ty = transpose_y && y.dims().size() > 1;
  const int64_t nb = static_cast<int64_t>(p.x_off.size());
  const T* xd = x.data<T>();
  const T* yd = y.data<T>();
  const T* g = dout.data<T>();
  const int64_t ldx = p.x.cols, ldy = p.y.cols, xsz = p.x.rows * p.x.cols, ysz = p.y.rows * p.y.cols;
  auto s = stream_of(ctx);
  // out = A B with A = op(X), B = op(Y): dA = dOut B^T, dB = A^T dOut.
  if (dx) {
    dx->Resize(x.dims());
    ctx.template Alloc<T>(dx);
    phi::DenseTensor full = scratch<T>(ctx, common::make_ddim({nb, p.x.rows, p.x.cols}));
    for (int64_t b = 0; b < nb; ++b) {
      const T* yb = yd + p.y_off[b] * ysz;
      const T* gb = g + b * p.m * p.n;
      T* out = full.data<T>() + b * xsz;
      if (!tx)  // dX[M,K] = dOut[M,N] op(Y)^T
        {{ NAME }}_CHECK({{ p }}_gemm(s, dtype_of<T>(), false, !ty, p.m, p.k, p.n, 1.f, gb, p.n, yb, ldy, 0.f, out, p.k), "matmul_grad");
      else      // dX[K,M] = op(Y)[K,N] dOut^T
        {{ NAME }}_CHECK({{ p }}_gemm(s, dtype_of<T>(), ty, true, p.k, p.m, p.n, 1.f, yb, ldy, gb, p.n, 0.f, out, p.m), "matmul_grad");
    }
    reduce_batches<T>(ctx, full, p.x, p.batch, dx);
  }
  if (dy) {
    dy->Resize(y.dims());
    ctx.template Alloc<T>(dy);
    phi::DenseTensor full = scratch<T>(ctx, common::make_ddim({nb, p.y.rows, p.y.cols}));
    for (int64_t b = 0; b < nb; ++b) {
      const T* xb = xd + p.x_off[b] * xsz;
      const T* gb = g + b * p.m * p.n;
      T* out = full.data<T>() + b * ysz;
      if (!ty)  // dY[K,N] = op(X)^T dOut
        {{ NAME }}_CHECK({{ p }}_gemm(s, dtype_of<T>(), !tx, false, p.k, p.n, p.m, 1.f, xb, ldx, gb, p.n, 0.f, out, p.n), "matmul_grad");
      else      // dY[N,K] = dOut^T op(X)
        {{ NAME }}_CHECK({{ p }}_gemm(s, dtype_of<T>(), true, tx, p.n, p.k, p.m, 1.f, gb, p.n, xb, ldx, 0.f, out, p.k), "matmul_grad");
    }
    reduce_batches<T>(ctx, full, p.y, p.batch, dy);
  }
}
{{ NAME }}_CHECK_SIGNATURE(MatmulGradKernel, phi::MatmulGradKernel);

}  // namespace {{ p }}_kernels

PD_REGISTER_PLUGIN_KERNEL(matmul, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::MatmulKernel,
                          float {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(matmul_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::MatmulGradKernel,
                          float {{ NAME }}_AND_HALF_TYPES) {}
