// Views and the kernels that move their data: contiguous, strided_copy and fill (what
// Paddle's stride mechanism needs from a device: with FLAGS_use_stride_kernel, its
// default, transpose/slice/split/... return views, materialized by `contiguous`
// before a kernel reads them, written through by `strided_copy` and zeroed by `fill`
// in strided gradients), and the dense
// slice, split and concat_grad kernels (FLAGS_use_stride_kernel=0, static graphs,
// Paddle Inference).
#include "kernel_helpers.h"
#include "paddle/phi/kernels/concat_grad_kernel.h"
#include "paddle/phi/kernels/contiguous_kernel.h"
#include "paddle/phi/kernels/fill_kernel.h"
#include "paddle/phi/kernels/slice_grad_kernel.h"
#include "paddle/phi/kernels/slice_kernel.h"
#include "paddle/phi/kernels/split_kernel.h"
#include "paddle/phi/kernels/strided_copy_kernel.h"

namespace {{ p }}_kernels {
namespace {

std::vector<int64_t> dense_strides(const phi::DDim& dims) {
  std::vector<int64_t> s(dims.size());
  int64_t stride = 1;
  for (int d = dims.size() - 1; d >= 0; --d) {
    s[d] = stride;
    stride *= dims[d];
  }
  return s;
}

// dst (strides dst_strides, element 0 at dst) = src (strides src_strides), both `dims`-shaped.
template <typename T>
void strided_copy(const Context& ctx, const phi::DDim& dims, const void* src, const std::vector<int64_t>& src_strides,
                  void* dst, const std::vector<int64_t>& dst_strides, const char* kernel) {
  if (common::product(dims) == 0) return;
  const {{ p }}_shape_t shape = shape_of(dims);
  {{ NAME }}_CHECK({{ p }}_strided_copy(stream_of(ctx), dtype_of<T>(), &shape, src, src_strides.data(), dst, dst_strides.data()),
        kernel);
}

// The [start, end) that `slice` takes along each of `axes`, as Paddle's CPU kernel
// normalizes them: negative values count from the end, both clamp to [0, dim].
struct SliceWindow {
  phi::DDim dims;                 // the slice's shape before decrease_axis
  std::vector<int64_t> starts;    // per dimension of the input
};

SliceWindow slice_window(const phi::DDim& in, const std::vector<int64_t>& axes, const phi::IntArray& starts,
                         const phi::IntArray& ends) {
  SliceWindow w{in, std::vector<int64_t>(in.size(), 0)};
  const auto& s = starts.GetData();
  const auto& e = ends.GetData();
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + in.size() : axes[i];
    const int64_t dim = in[axis];
    int64_t start = s.size() == 1 ? s[0] : s[i];
    int64_t end = e.size() == 1 ? e[0] : e[i];
    start = start < 0 ? start + dim : start;
    end = end < 0 ? end + dim : end;
    start = std::min(std::max<int64_t>(start, 0), dim);
    end = std::min(std::max<int64_t>(end, 0), dim);
    w.starts[axis] = start;
    w.dims[axis] = std::max<int64_t>(end - start, 0);
  }
  return w;
}

int64_t offset_of(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t o = 0;
  for (size_t d = 0; d < index.size(); ++d) o += index[d] * strides[d];
  return o;
}

int split_axis(const phi::Scalar& axis, const phi::DDim& dims) {
  int a = axis.to<int>();
  return a < 0 ? a + dims.size() : a;
}

// Copies consecutive pieces of `x` along `axis` into `outs` (whose dims Paddle set).
template <typename T>
void split_into(const Context& ctx, const phi::DenseTensor& x, int axis, const std::vector<phi::DenseTensor*>& outs,
                const char* kernel) {
  const AxisView v = axis_view(x.dims(), axis);
  const int64_t row = v.axis * v.inner * static_cast<int64_t>(sizeof(T));
  int64_t offset = 0;
  for (phi::DenseTensor* out : outs) {
    const int64_t part = out->dims().size() > 0 ? out->dims()[axis] : 1;
    const int64_t width = part * v.inner * static_cast<int64_t>(sizeof(T));
    char* dst = reinterpret_cast<char*>(ctx.template Alloc<T>(out));
    if (width > 0 && v.outer > 0) {
      {{ NAME }}_CHECK({{ p }}_copy_2d(stream_of(ctx), dst, width, static_cast<const char*>(x.data()) + offset, row, width,
                            v.outer),
            kernel);
    }
    offset += width;
  }
}

}  // namespace

template <typename T, typename Context>
void ContiguousKernel(const Context& ctx, const phi::DenseTensor& input, phi::DenseTensor* out) {
  phi::DenseTensorMeta meta = input.meta();
  meta.strides = meta.calc_strides(meta.dims);
  meta.offset = 0;
  out->set_meta(meta);
  T* o = ctx.template Alloc<T>(out);
  const auto in_strides = common::vectorize<int64_t>(input.strides());
  strided_copy<T>(ctx, input.dims(), input.data(), in_strides, o, dense_strides(input.dims()), "contiguous");
}
{{ NAME }}_CHECK_SIGNATURE(ContiguousKernel, phi::ContiguousKernel);

// Writes `input` into the view (dims, out_stride, byte offset) of out's existing buffer.
template <typename T, typename Context>
void StridedCopyKernel(const Context& ctx, const phi::DenseTensor& input, const std::vector<int64_t>& dims,
                       const std::vector<int64_t>& out_stride, int64_t offset, phi::DenseTensor* out) {
  phi::DenseTensorMeta meta = input.meta();
  meta.strides = common::make_ddim(out_stride);
  meta.dims = common::make_ddim(dims);
  meta.offset = offset;
  out->set_meta(meta);
  PADDLE_ENFORCE_EQ(input.dims(), out->dims(),
                    common::errors::InvalidArgument("{{ device_type }}: strided_copy input dims %s != out dims %s",
                                                    input.dims(), out->dims()));
  T* o = out->data<T>();
  PADDLE_ENFORCE_NOT_NULL(o, common::errors::InvalidArgument("{{ device_type }}: strided_copy out has no buffer"));
  strided_copy<T>(ctx, input.dims(), input.data(), common::vectorize<int64_t>(input.strides()), o, out_stride,
                  "strided_copy");
}
{{ NAME }}_CHECK_SIGNATURE(StridedCopyKernel, phi::StridedCopyKernel);

// fill_ (in place: out is x, possibly a view, e.g. the zeroed input gradient of a
// strided slice_grad): every element of out's view = value.
template <typename T, typename Context>
void FillKernel(const Context& ctx, const phi::DenseTensor& x, const phi::Scalar& value, phi::DenseTensor* out) {
  T* o = ctx.template Alloc<T>(out);
  if (out->numel() == 0) return;
  const auto strides = common::vectorize<int64_t>(out->strides());
  if (out->meta().is_contiguous() || strides.empty()) {
    {{ NAME }}_CHECK({{ p }}_fill(stream_of(ctx), dtype_of<T>(), o, out->numel(), value.to<double>()), "fill");
    return;
  }
  phi::DenseTensor dense = scratch<T>(ctx, out->dims());
  {{ NAME }}_CHECK({{ p }}_fill(stream_of(ctx), dtype_of<T>(), dense.data(), dense.numel(), value.to<double>()), "fill");
  strided_copy<T>(ctx, out->dims(), dense.data(), dense_strides(out->dims()), o, strides, "fill");
}
{{ NAME }}_CHECK_SIGNATURE(FillKernel, phi::FillKernel);

// infer_flags only matter to shape inference; decrease_axis only drops size-1
// dimensions from out's shape, which Paddle has already set.
template <typename T, typename Context>
void SliceKernel(const Context& ctx, const phi::DenseTensor& input, const std::vector<int64_t>& axes,
                 const phi::IntArray& starts, const phi::IntArray& ends, const std::vector<int64_t>& infer_flags,
                 const std::vector<int64_t>& decrease_axis, phi::DenseTensor* out) {
  const SliceWindow w = slice_window(input.dims(), axes, starts, ends);
  T* o = ctx.template Alloc<T>(out);
  const auto in_strides = dense_strides(input.dims());
  strided_copy<T>(ctx, w.dims, static_cast<const T*>(input.data()) + offset_of(w.starts, in_strides), in_strides, o,
                  dense_strides(w.dims), "slice");
}
{{ NAME }}_CHECK_SIGNATURE(SliceKernel, phi::SliceKernel);

template <typename T, typename Context>
void SliceGradKernel(const Context& ctx, const phi::DenseTensor& input, const phi::DenseTensor& out_grad,
                     const std::vector<int64_t>& axes, const phi::IntArray& starts, const phi::IntArray& ends,
                     const std::vector<int64_t>& infer_flags, const std::vector<int64_t>& decrease_axis,
                     phi::DenseTensor* input_grad) {
  input_grad->Resize(input.dims());
  T* dx = ctx.template Alloc<T>(input_grad);
  {{ NAME }}_CHECK({{ p }}_fill(stream_of(ctx), dtype_of<T>(), dx, input_grad->numel(), 0.0), "slice_grad");
  const SliceWindow w = slice_window(input.dims(), axes, starts, ends);
  const auto in_strides = dense_strides(input.dims());
  strided_copy<T>(ctx, w.dims, out_grad.data(), dense_strides(w.dims), dx + offset_of(w.starts, in_strides),
                  in_strides, "slice_grad");
}
{{ NAME }}_CHECK_SIGNATURE(SliceGradKernel, phi::SliceGradKernel);

// sections (with at most one -1) or num equal parts: Paddle has set each output's dims.
template <typename T, typename Context>
void SplitKernel(const Context& ctx, const phi::DenseTensor& x, const phi::IntArray& sections,
                 const phi::Scalar& axis, std::vector<phi::DenseTensor*> out) {
  split_into<T>(ctx, x, split_axis(axis, x.dims()), out, "split");
}
{{ NAME }}_CHECK_SIGNATURE(SplitKernel, phi::SplitKernel);

template <typename T, typename Context>
void SplitWithNumKernel(const Context& ctx, const phi::DenseTensor& x, int num, const phi::Scalar& axis,
                        std::vector<phi::DenseTensor*> out) {
  split_into<T>(ctx, x, split_axis(axis, x.dims()), out, "split_with_num");
}
{{ NAME }}_CHECK_SIGNATURE(SplitWithNumKernel, phi::SplitWithNumKernel);

// The gradient of concat: out_grad split back into the inputs' shapes (x_grad
// entries of inputs that need no gradient are null).
template <typename T, typename Context>
void ConcatGradKernel(const Context& ctx, const std::vector<const phi::DenseTensor*>& x,
                      const phi::DenseTensor& out_grad, const phi::Scalar& axis_scalar,
                      std::vector<phi::DenseTensor*> x_grad) {
  const int axis = split_axis(axis_scalar, out_grad.dims());
  std::vector<phi::DenseTensor> unused(x.size());
  std::vector<phi::DenseTensor*> outs(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    outs[i] = i < x_grad.size() && x_grad[i] ? x_grad[i] : &unused[i];
    outs[i]->Resize(x[i]->dims());
  }
  split_into<T>(ctx, out_grad, axis, outs, "concat_grad");
}
{{ NAME }}_CHECK_SIGNATURE(ConcatGradKernel, phi::ConcatGradKernel);

}  // namespace {{ p }}_kernels

#define {{ NAME }}_REGISTER_ALL_DTYPES(name, fn)                                                 \
  PD_REGISTER_PLUGIN_KERNEL(name, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::fn, bool, uint8_t, \
                            int8_t, int16_t, int32_t, int64_t, float, double {{ NAME }}_AND_HALF_TYPES) {}

{{ NAME }}_REGISTER_ALL_DTYPES(contiguous, ContiguousKernel)
{{ NAME }}_REGISTER_ALL_DTYPES(strided_copy, StridedCopyKernel)
{{ NAME }}_REGISTER_ALL_DTYPES(fill, FillKernel)
{{ NAME }}_REGISTER_ALL_DTYPES(slice, SliceKernel)
{{ NAME }}_REGISTER_ALL_DTYPES(split, SplitKernel)
{{ NAME }}_REGISTER_ALL_DTYPES(split_with_num, SplitWithNumKernel)
PD_REGISTER_PLUGIN_KERNEL(slice_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::SliceGradKernel, int32_t, int64_t,
                          float, double {{ NAME }}_AND_HALF_TYPES) {}
PD_REGISTER_PLUGIN_KERNEL(concat_grad, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::ConcatGradKernel, int32_t,
                          int64_t, float, double {{ NAME }}_AND_HALF_TYPES) {}
