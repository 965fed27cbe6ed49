// Element-wise kernels with numpy broadcasting, their gradients, and comparisons.
#include "kernel_helpers.h"
#include "paddle/phi/kernels/bitwise_kernel.h"
#include "paddle/phi/kernels/compare_kernel.h"
#include "paddle/phi/kernels/elementwise_add_grad_kernel.h"
#include "paddle/phi/kernels/elementwise_add_kernel.h"
#include "paddle/phi/kernels/elementwise_divide_grad_kernel.h"
#include "paddle/phi/kernels/elementwise_divide_kernel.h"
#include "paddle/phi/kernels/elementwise_multiply_grad_kernel.h"
#include "paddle/phi/kernels/elementwise_multiply_kernel.h"
#include "paddle/phi/kernels/elementwise_subtract_grad_kernel.h"
#include "paddle/phi/kernels/elementwise_subtract_kernel.h"

namespace {{ p }}_kernels {

template <typename T>
void binary(const Context& ctx, {{ p }}_binary_op_t op, const phi::DenseTensor& x,
            const phi::DenseTensor& y, phi::DenseTensor* out, const char* name) {
  void* data = op >= {{ NAME }}_BINARY_EQUAL ? static_cast<void*>(ctx.template Alloc<bool>(out))
                                          : static_cast<void*>(ctx.template Alloc<T>(out));
  if (out->numel() == 0) return;
  {{ p }}_shape_t xs = shape_of(x), ys = shape_of(y), os = shape_of(*out);
  {{ NAME }}_CHECK({{ p }}_binary(stream_of(ctx), op, dtype_of<T>(), x.data(), &xs, y.data(), &ys, data, &os), name);
}

// Paddle's legacy `axis` aligns y at that axis of x; -1 (what the Python API
// passes) is numpy's trailing alignment, the only one this backend implements.
inline void check_axis(const phi::DenseTensor& x, const phi::DenseTensor& y, int axis) {
  const int trailing = static_cast<int>(x.dims().size()) - static_cast<int>(y.dims().size());
  PADDLE_ENFORCE_EQ(axis == -1 || axis == trailing, true,
                    common::errors::Unimplemented("{{ device_type }}: elementwise axis=%d is not supported", axis));
}

// grad = reduce `g` (shaped like out) to the shape of `target`.
// Paddle's grad ops run in place where they can (add_grad: out_grad -> x_grad),
// so dx may be dout's buffer: every grad kernel below writes dx last.
template <typename T>
void reduce_to(const Context& ctx, const phi::DenseTensor& g, const phi::DenseTensor& target,
               phi::DenseTensor* grad) {
  grad->Resize(target.dims());
  T* data = ctx.template Alloc<T>(grad);
  if (grad->numel() == 0) return;
  {{ p }}_shape_t gs = shape_of(g), ts = shape_of(target);
  {{ NAME }}_CHECK({{ p }}_sum_to_shape(stream_of(ctx), dtype_of<T>(), g.data(), &gs, data, &ts), "sum_to_shape");
}

// tmp = a (op) b with a, b broadcast to `dims`
template <typename T>
phi::DenseTensor binary_tmp(const Context& ctx, {{ p }}_binary_op_t op, const phi::DenseTensor& a,
                            const phi::DenseTensor& b, const phi::DDim& dims) {
  phi::DenseTensor tmp = scratch<T>(ctx, dims);
  binary<T>(ctx, op, a, b, &tmp, "elementwise_grad");
  return tmp;
}

#define {{ NAME }}_BINARY_KERNEL(Name, OP)                                                   \
  template <typename T, typename Context>                                                 \
  void Name##Kernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& y, \
                    phi::DenseTensor* out) {                                              \
    binary<T>(ctx, OP, x, y, out, #Name);                                                 \
  }                                                                                       \
  {{ NAME }}_CHECK_SIGNATURE(Name##Kernel, phi::Name##Kernel)

{{ NAME }}_BINARY_KERNEL(Add, {{ NAME }}_BINARY_ADD);
{{ NAME }}_BINARY_KERNEL(Subtract, {{ NAME }}_BINARY_SUB);
{{ NAME }}_BINARY_KERNEL(Multiply, {{ NAME }}_BINARY_MUL);
{{ NAME }}_BINARY_KERNEL(Divide, {{ NAME }}_BINARY_DIV);
{{ NAME }}_BINARY_KERNEL(Equal, {{ NAME }}_BINARY_EQUAL);
{{ NAME }}_BINARY_KERNEL(NotEqual, {{ NAME }}_BINARY_NOT_EQUAL);
{{ NAME }}_BINARY_KERNEL(LessThan, {{ NAME }}_BINARY_LESS);
{{ NAME }}_BINARY_KERNEL(GreaterThan, {{ NAME }}_BINARY_GREATER);

template <typename T, typename Context>
void AddGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& y,
                   const phi::DenseTensor& dout, int axis, phi::DenseTensor* dx, phi::DenseTensor* dy) {
  check_axis(x, y, axis);
  if (dy) reduce_to<T>(ctx, dout, y, dy);
  if (dx) reduce_to<T>(ctx, dout, x, dx);  // last: dx may share dout's buffer
}
{{ NAME }}_CHECK_SIGNATURE(AddGradKernel, phi::AddGradKernel);

template <typename T, typename Context>
void SubtractGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& y,
                        const phi::DenseTensor& dout, int axis, phi::DenseTensor* dx,
                        phi::DenseTensor* dy) {
  check_axis(x, y, axis);
  if (dy) {
    phi::DenseTensor neg = scratch<T>(ctx, dout.dims());
    {{ NAME }}_CHECK({{ p }}_scale(stream_of(ctx), dtype_of<T>(), dout.data(), neg.data(), dout.numel(), -1.0, 0.0, 1),
          "subtract_grad");
    reduce_to<T>(ctx, neg, y, dy);
  }
  if (dx) reduce_to<T>(ctx, dout, x, dx);  // last: dx may share dout's buffer
}
{{ NAME }}_CHECK_SIGNATURE(SubtractGradKernel, phi::SubtractGradKernel);

template <typename T, typename Context>
void MultiplyGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& y,
                        const phi::DenseTensor& dout, int axis, phi::DenseTensor* dx,
                        phi::DenseTensor* dy) {
  check_axis(x, y, axis);
  if (dy) reduce_to<T>(ctx, binary_tmp<T>(ctx, {{ NAME }}_BINARY_MUL, dout, x, dout.dims()), y, dy);
  if (dx) reduce_to<T>(ctx, binary_tmp<T>(ctx, {{ NAME }}_BINARY_MUL, dout, y, dout.dims()), x, dx);
}
{{ NAME }}_CHECK_SIGNATURE(MultiplyGradKernel, phi::MultiplyGradKernel);

template <typename T, typename Context>
void DivideGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& y,
                      const phi::DenseTensor& out, const phi::DenseTensor& dout, int axis,
                      phi::DenseTensor* dx, phi::DenseTensor* dy) {
  check_axis(x, y, axis);
  // d(x/y)/dx = 1/y ; d(x/y)/dy = -out/y
  if (dy) {
    phi::DenseTensor t = binary_tmp<T>(ctx, {{ NAME }}_BINARY_MUL, dout, out, dout.dims());
    phi::DenseTensor q = binary_tmp<T>(ctx, {{ NAME }}_BINARY_DIV, t, y, dout.dims());
    {{ NAME }}_CHECK({{ p }}_scale(stream_of(ctx), dtype_of<T>(), q.data(), q.data(), q.numel(), -1.0, 0.0, 1),
          "divide_grad");
    reduce_to<T>(ctx, q, y, dy);
  }
  if (dx) reduce_to<T>(ctx, binary_tmp<T>(ctx, {{ NAME }}_BINARY_DIV, dout, y, dout.dims()), x, dx);
}
{{ NAME }}_CHECK_SIGNATURE(DivideGradKernel, phi::DivideGradKernel);

// bitwise_or of BOOL tensors (GradScaler merges its found-inf flags with it): a logical or,
// which the device library's BOOL addition is. (Registered for bool only.)
template <typename T, typename Context>
void BitwiseOrKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& y,
                     phi::DenseTensor* out) {
  binary<T>(ctx, {{ NAME }}_BINARY_ADD, x, y, out, "bitwise_or");
}
{{ NAME }}_CHECK_SIGNATURE(BitwiseOrKernel, phi::BitwiseOrKernel);

}  // namespace {{ p }}_kernels

#define {{ NAME }}_REGISTER_ARITHMETIC(name, fn)                                                   \
  PD_REGISTER_PLUGIN_KERNEL(name, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::fn, int32_t, int64_t, \
                            float, double {{ NAME }}_AND_HALF_TYPES) {}

{{ NAME }}_REGISTER_ARITHMETIC(add, AddKernel)
{{ NAME }}_REGISTER_ARITHMETIC(subtract, SubtractKernel)
{{ NAME }}_REGISTER_ARITHMETIC(multiply, MultiplyKernel)
{{ NAME }}_REGISTER_ARITHMETIC(divide, DivideKernel)
{{ NAME }}_REGISTER_ARITHMETIC(add_grad, AddGradKernel)
{{ NAME }}_REGISTER_ARITHMETIC(subtract_grad, SubtractGradKernel)
{{ NAME }}_REGISTER_ARITHMETIC(multiply_grad, MultiplyGradKernel)
PD_REGISTER_PLUGIN_KERNEL(divide_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::DivideGradKernel,
                          float, double {{ NAME }}_AND_HALF_TYPES) {}

#define {{ NAME }}_REGISTER_COMPARE(name, fn)                                                      \
  PD_REGISTER_PLUGIN_KERNEL(name, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::fn, bool, int32_t,    \
                            int64_t, float, double {{ NAME }}_AND_HALF_TYPES) {                 \
    kernel->OutputAt(0).SetDataType(phi::DataType::BOOL);                                      \
  }

{{ NAME }}_REGISTER_COMPARE(equal, EqualKernel)
{{ NAME }}_REGISTER_COMPARE(not_equal, NotEqualKernel)
{{ NAME }}_REGISTER_COMPARE(less_than, LessThanKernel)
{{ NAME }}_REGISTER_COMPARE(greater_than, GreaterThanKernel)
PD_REGISTER_PLUGIN_KERNEL(bitwise_or, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::BitwiseOrKernel, bool) {}
