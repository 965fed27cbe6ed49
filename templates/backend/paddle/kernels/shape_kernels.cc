// Data movement kernels: reshape, flatten, assign, cast, scale, concat, stack, transpose, pad.
#include <memory>
#include <type_traits>

#include "kernel_helpers.h"
#include "paddle/phi/common/bfloat16.h"
#include "paddle/phi/common/complex.h"
#include "paddle/phi/common/float16.h"
#include "paddle/phi/kernels/assign_kernel.h"
#include "paddle/phi/kernels/cast_kernel.h"
#include "paddle/phi/kernels/concat_kernel.h"
#include "paddle/phi/kernels/flatten_grad_kernel.h"
#include "paddle/phi/kernels/flatten_kernel.h"
#include "paddle/phi/kernels/reshape_grad_kernel.h"
#include "paddle/phi/kernels/reshape_kernel.h"
#include "paddle/phi/kernels/pad_kernel.h"
#include "paddle/phi/kernels/scale_kernel.h"
#include "paddle/phi/kernels/stack_kernel.h"
#include "paddle/phi/kernels/transpose_grad_kernel.h"
#include "paddle/phi/kernels/transpose_kernel.h"

namespace {{ p }}_kernels {

// Paddle's shape inference has already given `out` its dims; a reshape only
// moves the bytes (or nothing, when out already shares x's buffer).
template <typename T, typename Context>
void ReshapeKernel(const Context& ctx, const phi::DenseTensor& x, const phi::IntArray& shape,
                   phi::DenseTensor* out) {
  copy_tensor(ctx, x, out);
}
{{ NAME }}_CHECK_SIGNATURE_ANY_DTYPE(ReshapeKernel, phi::ReshapeKernel);

template <typename T, typename Context>
void ReshapeGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& out_grad,
                       phi::DenseTensor* x_grad) {
  x_grad->Resize(x.dims());
  copy_tensor(ctx, out_grad, x_grad);
}
{{ NAME }}_CHECK_SIGNATURE_ANY_DTYPE(ReshapeGradKernel, phi::ReshapeGradKernel);

template <typename T, typename Context>
void FlattenKernel(const Context& ctx, const phi::DenseTensor& x, int start_axis, int stop_axis,
                   phi::DenseTensor* out) {
  copy_tensor(ctx, x, out);
}
{{ NAME }}_CHECK_SIGNATURE(FlattenKernel, phi::FlattenKernel);

template <typename T, typename Context>
void FlattenGradKernel(const Context& ctx, const phi::DenseTensor& x, const phi::DenseTensor& out_grad,
                       phi::DenseTensor* x_grad) {
  x_grad->Resize(x.dims());
  copy_tensor(ctx, out_grad, x_grad);
}
{{ NAME }}_CHECK_SIGNATURE(FlattenGradKernel, phi::FlattenGradKernel);

template <typename T, typename Context>
void AssignKernel(const Context& ctx, const phi::DenseTensor& x, phi::DenseTensor* out) {
  out->Resize(x.dims());
  copy_tensor(ctx, x, out);
}
{{ NAME }}_CHECK_SIGNATURE_ANY_DTYPE(AssignKernel, phi::AssignKernel);

// A cast to a dtype the device library lacks (complex; float16 and bfloat16, which AMP asks of a
// float32 tensor, on a flavour without them): the values are converted on the host between copies the device library
// makes, so that the kernel, chosen by x's dtype alone, is right for every out_dtype, only slower.
template <typename T, typename Out>
void cast_on_host(const Context& ctx, const phi::DenseTensor& x, void* o) {
  const int64_t n = x.numel();
  std::unique_ptr<T[]> in(new T[n]);  // (not std::vector: vector<bool> holds no bools)
  std::unique_ptr<Out[]> converted(new Out[n]);
  {{ p }}_stream_t s = stream_of(ctx);
  {{ NAME }}_CHECK({{ p }}_memcpy_async(s, in.get(), x.data(), n * sizeof(T), {{ NAME }}_COPY_DEVICE_TO_HOST), "cast");
  {{ NAME }}_CHECK({{ p }}_stream_synchronize(s), "cast");
  using Via = std::conditional_t<std::is_same<T, double>::value, double, float>;
  for (int64_t i = 0; i < n; ++i) converted[i] = static_cast<Out>(static_cast<Via>(in[i]));
  {{ NAME }}_CHECK({{ p }}_memcpy_async(s, o, converted.get(), n * sizeof(Out), {{ NAME }}_COPY_HOST_TO_DEVICE),
                   "cast");
  {{ NAME }}_CHECK({{ p }}_stream_synchronize(s), "cast");  // (`converted` is read until then)
}

template <typename T, typename Context>
void CastKernel(const Context& ctx, const phi::DenseTensor& x, phi::DataType out_dtype, phi::DenseTensor* out) {
  void* o = ctx.Alloc(out, out_dtype);
  if (x.numel() == 0) return;
  if (device_has_dtype(out_dtype)) {
    {{ NAME }}_CHECK({{ p }}_cast(stream_of(ctx), dtype_of<T>(), x.data(), dtype_of(out_dtype), o, x.numel()),
                     "cast");
    return;
  }
  switch (out_dtype) {
    case phi::DataType::FLOAT16: return cast_on_host<T, phi::dtype::float16>(ctx, x, o);
    case phi::DataType::BFLOAT16: return cast_on_host<T, phi::dtype::bfloat16>(ctx, x, o);
    case phi::DataType::COMPLEX64: return cast_on_host<T, phi::dtype::complex<float>>(ctx, x, o);
    case phi::DataType::COMPLEX128: return cast_on_host<T, phi::dtype::complex<double>>(ctx, x, o);
    default:
      PADDLE_THROW(common::errors::Unimplemented("{{ device_type }} cannot cast to %s",
                                                 phi::DataTypeToString(out_dtype)));
  }
}
{{ NAME }}_CHECK_SIGNATURE(CastKernel, phi::CastKernel);

template <typename T, typename Context>
void ScaleKernel(const Context& ctx, const phi::DenseTensor& x, const phi::Scalar& scale,
                 const phi::Scalar& bias, bool bias_after_scale, phi::DenseTensor* out) {
  T* o = ctx.template Alloc<T>(out);
  {{ NAME }}_CHECK({{ p }}_scale(stream_of(ctx), dtype_of<T>(), x.data(), o, x.numel(), scale.to<double>(),
                      bias.to<double>(), bias_after_scale),
        "scale");
}
{{ NAME }}_CHECK_SIGNATURE(ScaleKernel, phi::ScaleKernel);

template <typename T, typename Context>
void ConcatKernel(const Context& ctx, const std::vector<const phi::DenseTensor*>& x, const phi::Scalar& axis_scalar,
                  phi::DenseTensor* out) {
  char* dst = static_cast<char*>(ctx.Alloc(out, x.front()->dtype()));
  const int nd = out->dims().size();
  int axis = axis_scalar.to<int>();
  if (axis < 0) axis += nd;
  int64_t outer = 1, inner = static_cast<int64_t>(sizeof(T));
  for (int d = 0; d < axis; ++d) outer *= out->dims()[d];
  for (int d = axis + 1; d < nd; ++d) inner *= out->dims()[d];
  const int64_t out_pitch = out->dims()[axis] * inner;
  int64_t offset = 0;
  for (const phi::DenseTensor* t : x) {  // each input is an [outer, width] slab of the output
    const int64_t width = t->dims()[axis] * inner;
    {{ NAME }}_CHECK({{ p }}_copy_2d(stream_of(ctx), dst + offset, out_pitch, t->data(), width, width, outer), "concat");
    offset += width;
  }
}
{{ NAME }}_CHECK_SIGNATURE(ConcatKernel, phi::ConcatKernel);

// out (x's dims with a new axis of size x.size() at `axis`): input i is the [outer, width] slab
// at column i * width (paddle.distributed.all_gather stacks what it gathered with this).
template <typename T, typename Context>
void StackKernel(const Context& ctx, const std::vector<const phi::DenseTensor*>& x, int axis, phi::DenseTensor* out) {
  char* dst = static_cast<char*>(ctx.Alloc(out, x.front()->dtype()));
  const int nd = x.front()->dims().size();
  if (axis < 0) axis += nd + 1;
  int64_t outer = 1, width = static_cast<int64_t>(sizeof(T));
  for (int d = 0; d < axis; ++d) outer *= x.front()->dims()[d];
  for (int d = axis; d < nd; ++d) width *= x.front()->dims()[d];
  const int64_t out_pitch = width * static_cast<int64_t>(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    {{ NAME }}_CHECK({{ p }}_copy_2d(stream_of(ctx), dst + i * width, out_pitch, x[i]->data(), width, width, outer), "stack");
}
{{ NAME }}_CHECK_SIGNATURE(StackKernel, phi::StackKernel);

template <typename T, typename Context>
void TransposeKernel(const Context& ctx, const phi::DenseTensor& x, const std::vector<int>& axis,
                     phi::DenseTensor* out) {
  T* o = ctx.template Alloc<T>(out);
  std::vector<int> perm(axis);
  for (int& a : perm) a = a < 0 ? a + static_cast<int>(perm.size()) : a;
  const {{ p }}_shape_t xs = shape_of(x);
  {{ NAME }}_CHECK({{ p }}_transpose(stream_of(ctx), dtype_of<T>(), x.data(), &xs, perm.data(), o), "transpose");
}
{{ NAME }}_CHECK_SIGNATURE(TransposeKernel, phi::TransposeKernel);

template <typename T, typename Context>
void TransposeGradKernel(const Context& ctx, const phi::DenseTensor& out_grad, const std::vector<int>& axis,
                         phi::DenseTensor* x_grad) {
  std::vector<int> inverse(axis.size());
  for (size_t i = 0; i < axis.size(); ++i) {
    const int a = axis[i] < 0 ? axis[i] + static_cast<int>(axis.size()) : axis[i];
    inverse[a] = static_cast<int>(i);
  }
  {{ p }}_kernels::TransposeKernel<T, Context>(ctx, out_grad, inverse, x_grad);  // qualified: ADL finds phi's too
}
{{ NAME }}_CHECK_SIGNATURE(TransposeGradKernel, phi::TransposeGradKernel);

template <typename T, typename Context>
void PadKernel(const Context& ctx, const phi::DenseTensor& x, const std::vector<int>& paddings,
               const phi::Scalar& pad_value, phi::DenseTensor* out) {
  T* o = ctx.template Alloc<T>(out);
  std::vector<int64_t> before(x.dims().size());
  for (size_t d = 0; d < before.size(); ++d) before[d] = paddings[2 * d];  // [before0, after0, before1, ...]
  const {{ p }}_shape_t xs = shape_of(x), os = shape_of(*out);
  {{ NAME }}_CHECK({{ p }}_pad(stream_of(ctx), dtype_of<T>(), x.data(), &xs, before.data(), pad_value.to<double>(), o, &os),
        "pad");
}
{{ NAME }}_CHECK_SIGNATURE(PadKernel, phi::PadKernel);

}  // namespace {{ p }}_kernels

#define {{ NAME }}_REGISTER_ANY_DTYPE(name, fn)                                                  \
  PD_REGISTER_PLUGIN_KERNEL(name, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::fn, bool, uint8_t, \
                            int8_t, int16_t, int32_t, int64_t, float, double {{ NAME }}_AND_HALF_TYPES) {}

{{ NAME }}_REGISTER_ANY_DTYPE(reshape, ReshapeKernel)
{{ NAME }}_REGISTER_ANY_DTYPE(reshape_grad, ReshapeGradKernel)
{{ NAME }}_REGISTER_ANY_DTYPE(flatten, FlattenKernel)
{{ NAME }}_REGISTER_ANY_DTYPE(flatten_grad, FlattenGradKernel)
{{ NAME }}_REGISTER_ANY_DTYPE(assign, AssignKernel)
{{ NAME }}_REGISTER_ANY_DTYPE(concat, ConcatKernel)
{{ NAME }}_REGISTER_ANY_DTYPE(stack, StackKernel)
{{ NAME }}_REGISTER_ANY_DTYPE(transpose, TransposeKernel)
{{ NAME }}_REGISTER_ANY_DTYPE(transpose_grad, TransposeGradKernel)

PD_REGISTER_PLUGIN_KERNEL(pad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::PadKernel, int32_t, int64_t, float,
                          double {{ NAME }}_AND_HALF_TYPES) {}

PD_REGISTER_PLUGIN_KERNEL(cast, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::CastKernel, bool, uint8_t, int8_t,
                          int16_t, int32_t, int64_t, float, double {{ NAME }}_AND_HALF_TYPES) {
  kernel->OutputAt(0).SetDataType(phi::DataType::UNDEFINED);
}
PD_REGISTER_PLUGIN_KERNEL(scale, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::ScaleKernel, int32_t, int64_t,
                          float, double {{ NAME }}_AND_HALF_TYPES) {}
