// Tensors on the device: creation, views, resize, copies between host and device (any
// dtype and layout), scalars, fill. Also the helpers in common.h that move data.
#include <ATen/EmptyTensor.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/view_native.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/set_native.h>
#include <c10/core/DeviceGuard.h>

#include <vector>

#include "common.h"
#include "runtime/caching_allocator.h"

namespace torch_{{ p }} {

bool device_dtype(at::ScalarType type, {{ p }}_dtype_t* out) {
  switch (type) {
    case at::kBool: *out = {{ NAME }}_BOOL; return true;
    case at::kByte: *out = {{ NAME }}_UINT8; return true;
    case at::kChar: *out = {{ NAME }}_INT8; return true;
    case at::kShort: *out = {{ NAME }}_INT16; return true;
    case at::kInt: *out = {{ NAME }}_INT32; return true;
    case at::kLong: *out = {{ NAME }}_INT64; return true;
    case at::kFloat: *out = {{ NAME }}_FLOAT32; return true;
    case at::kDouble: *out = {{ NAME }}_FLOAT64; return true;
{%- if half_precision %}
    case at::kHalf: *out = {{ NAME }}_FLOAT16; return true;
    case at::kBFloat16: *out = {{ NAME }}_BFLOAT16; return true;
{%- endif %}
    default: return false;
  }
}

{{ p }}_dtype_t device_dtype(at::ScalarType type) {
  {{ p }}_dtype_t d;
  TORCH_CHECK(device_dtype(type, &d), "{{ device_type }} has no ops for dtype ", type);
  return d;
}

bool is_device_dtype(at::ScalarType type) {
  {{ p }}_dtype_t d;
  return device_dtype(type, &d);
}

{{ p }}_shape_t shape_of(at::IntArrayRef sizes) {
  TORCH_CHECK(sizes.size() <= {{ NAME }}_MAX_DIMS, "{{ device_type }} supports at most ", {{ NAME }}_MAX_DIMS, " dims, got ", sizes.size());
  {{ p }}_shape_t s;
  s.ndim = static_cast<int>(sizes.size());
  for (int i = 0; i < s.ndim; ++i) s.dims[i] = sizes[i];
  return s;
}

namespace {

// Strided copies move bytes: any dtype copies as the integer type of its element size.
{{ p }}_dtype_t move_dtype(at::ScalarType type) {
  switch (c10::elementSize(type)) {
    case 1: return {{ NAME }}_UINT8;
    case 2: return {{ NAME }}_INT16;
    case 4: return {{ NAME }}_INT32;
    case 8: return {{ NAME }}_INT64;
    default: TORCH_CHECK(false, "{{ device_type }} cannot copy elements of ", type, " (", c10::elementSize(type), " bytes)");
  }
}

// dst (dst_strides) = src (src_strides), both device tensors of the same shape and dtype.
// 16-byte elements (complex128) move as pairs of 8-byte ones: one more, innermost dim of 2.
void strided_copy(const at::Tensor& src, const at::Tensor& dst) {
  if (dst.numel() == 0) return;
  if (c10::elementSize(dst.scalar_type()) != 16) {
    {{ p }}_shape_t dims = shape_of(dst.sizes());
    check({{ p }}_strided_copy(current_stream(), move_dtype(dst.scalar_type()), &dims, src.const_data_ptr(),
                            src.strides().data(), dst.data_ptr(), dst.strides().data()),
          "strided_copy");
    return;
  }
  std::vector<int64_t> sizes(dst.sizes().begin(), dst.sizes().end()), src_strides, dst_strides;
  sizes.push_back(2);
  for (int64_t s : src.strides()) src_strides.push_back(2 * s);
  for (int64_t s : dst.strides()) dst_strides.push_back(2 * s);
  src_strides.push_back(1);
  dst_strides.push_back(1);
  {{ p }}_shape_t dims = shape_of(sizes);
  check({{ p }}_strided_copy(current_stream(), {{ NAME }}_INT64, &dims, src.const_data_ptr(), src_strides.data(),
                          dst.data_ptr(), dst_strides.data()),
        "strided_copy");
}

void memcpy_kind(void* dst, const void* src, size_t n, {{ p }}_copy_kind_t kind) {
  if (n == 0) return;
  check({{ p }}_memcpy_async(current_stream(), dst, src, n, kind), "memcpy");
  if (kind == {{ NAME }}_COPY_DEVICE_TO_HOST) check({{ p }}_stream_synchronize(current_stream()), "stream_synchronize");
}

}  // namespace

// Straight to the allocator, not through the dispatcher and empty.memory_format: kernels
// create several temporaries each, and tiny ops are dominated by such overhead.
at::Tensor empty_device(at::IntArrayRef sizes, const at::TensorOptions& options, at::MemoryFormat format) {
  const c10::DeviceGuard guard(options.device());
  return at::detail::empty_generic(sizes, c10::GetAllocator(c10::DeviceType::PrivateUse1),
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), options.dtype().toScalarType(),
                                   format);
}

namespace {
// An uninitialised device tensor of `like`'s sizes and device, with `strides` (a dense layout).
at::Tensor empty_device_strided(const at::Tensor& like, at::IntArrayRef strides, at::ScalarType type) {
  const c10::DeviceGuard guard(like.device());
  return at::detail::empty_strided_generic(like.sizes(), strides, c10::GetAllocator(c10::DeviceType::PrivateUse1),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), type);
}
}  // namespace

at::Tensor empty_device_like(const at::Tensor& like, at::ScalarType type) {
  return empty_device_strided(like, like.strides(), type);
}

at::Tensor contiguous(const at::Tensor& t) {
  if (t.is_contiguous()) return t;
  at::Tensor out = empty_device(t.sizes(), t.options());
  strided_copy(t, out);
  return out;
}

at::Tensor dense(const at::Tensor& t) {
  if (t.is_non_overlapping_and_dense()) return t;
  at::Tensor out = empty_device_strided(t, at::infer_dense_strides(t.sizes(), t.strides()), t.scalar_type());
  strided_copy(t, out);
  return out;
}

at::Tensor in_layout_of(const at::Tensor& result, const at::Tensor& like) {
  // the layout TensorIterator gives a result of `like` (at::infer_dense_strides: its dims in the order of its strides)
  const std::vector<int64_t> strides = at::infer_dense_strides(like.sizes(), like.strides());
  bool same = true;  // (a dimension of size 1 has any stride)
  for (int64_t d = 0; d < result.dim(); ++d) same = same && (result.size(d) <= 1 || result.stride(d) == strides[d]);
  if (same) return result;
  at::Tensor out = empty_device_strided(result, strides, result.scalar_type());
  strided_copy(result, out);
  return out;
}

at::Tensor contiguous_as(const at::Tensor& t, at::ScalarType type) {
  at::Tensor c = contiguous(t);
  if (t.scalar_type() == type) return c;
  at::Tensor out = empty_device(t.sizes(), t.options().dtype(type));
  if (t.numel() > 0)
    check({{ p }}_cast(current_stream(), device_dtype(t.scalar_type()), c.const_data_ptr(), device_dtype(type),
                    out.data_ptr(), t.numel()),
          "cast");
  return out;
}

void copy_into(const at::Tensor& src, const at::Tensor& dst) {
  if (src.is_same(dst)) return;
  strided_copy(src, dst);
}

at::Tensor& store(const at::Tensor& result, at::Tensor& out) {
  TORCH_CHECK(at::canCast(result.scalar_type(), out.scalar_type()), "result type ", result.scalar_type(),
              " can't be cast to the desired output type ", out.scalar_type());
  at::native::resize_output(out, result.sizes());
  copy_into(result.scalar_type() == out.scalar_type() ? result : contiguous_as(result, out.scalar_type()), out);
  return out;
}

at::Tensor scalar_on_device(const at::Scalar& value, at::ScalarType type, const at::Device& device) {
  at::Tensor t = empty_device({}, at::TensorOptions().dtype(type).device(device));
  const double v = value.isBoolean() ? static_cast<double>(value.toBool()) : value.toDouble();
  check({{ p }}_fill(current_stream(), device_dtype(type), t.data_ptr(), 1, v), "fill");
  return t;
}

namespace memory {

// ---- creation and views ----------------------------------------------------------
at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format) {
  const at::Device d = c10::device_or_default(device);
  TORCH_CHECK(c10::layout_or_default(layout) == at::Layout::Strided, "{{ device_type }} tensors are strided only");
  const c10::DeviceGuard guard(d);
  return at::detail::empty_generic(size, c10::GetAllocator(c10::DeviceType::PrivateUse1),
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory) {
  const at::Device d = c10::device_or_default(device);
  TORCH_CHECK(c10::layout_or_default(layout) == at::Layout::Strided, "{{ device_type }} tensors are strided only");
  const c10::DeviceGuard guard(d);
  return at::detail::empty_strided_generic(size, stride, c10::GetAllocator(c10::DeviceType::PrivateUse1),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           c10::dtype_or_default(dtype));
}

at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor view(const at::Tensor& self, c10::IntArrayRef size) { return at::native::view(self, size); }

at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size, std::optional<at::MemoryFormat> format) {
  // The same sizes and no layout asked for: nothing changes, as with torch's own resize_. (The
  // CPU fallback writes an in-place op's result back through _copy_from_and_resize: restriding a
  // transposed view there left its base laid out otherwise than autograd's record of the view,
  // and the gradients of `x.t().exp_()` wrong.)
  if (self.sizes() == size && !format.has_value()) return self;
  const c10::DeviceGuard guard(self.device());
  // Contiguous strides for the new sizes (channels-last when asked), then storage for them.
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  if (format.has_value() && *format != at::MemoryFormat::Preserve && *format != at::MemoryFormat::Contiguous)
    impl->empty_tensor_restride(*format);
  const size_t needed = at::detail::computeStorageNbytes(size, self.strides(), self.dtype().itemsize(),
                                                         self.storage_offset());
  if (needed > self.storage().nbytes()) resize_device_storage(self.storage(), needed);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, at::Storage source) {
  const int64_t n = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return self.set_(source, 0, {n}, {});
}

at::Tensor& set_storage_offset(at::Tensor& self, at::Storage source, int64_t offset, c10::IntArrayRef size,
                               c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, source, offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(offset);
  std::optional<at::IntArrayRef> strides = stride.data() ? std::optional<at::IntArrayRef>(stride) : std::nullopt;
  // Sets sizes/strides, growing the storage through resize_device_storage when it is too small.
  auto* impl = self.unsafeGetTensorImpl();
  if (strides) impl->set_sizes_and_strides(size, *strides);
  else impl->set_sizes_contiguous(size);
  const size_t needed = at::detail::computeStorageNbytes(self.sizes(), self.strides(), self.dtype().itemsize(), offset);
  if (needed > self.storage().nbytes()) resize_device_storage(self.storage(), needed);
  return self;
}

// ---- copies -----------------------------------------------------------------------
// One of src/dst is a {{ device_type }} tensor; the other is on the CPU or the device.
// Casts run on the device when it has the dtypes, else on the host side of the copy.
// A contiguous copy of `src` (another device's tensor) on device `to`: made contiguous where
// it lies, then moved by the device library's peer copy on `to`'s current stream.
// The copy is queued on `to`'s stream, so that stream first waits (an event, not the host)
// for the work on `src`'s device that produced it.
at::Tensor peer_copy(const at::Tensor& src, const at::Device& to) {
  at::Tensor dense;
  {{ p }}_event_t produced = nullptr;
  {
    const c10::DeviceGuard guard(src.device());
    dense = contiguous(src);
    check({{ p }}_event_create(src.device().index(), &produced), "event_create");
    check({{ p }}_event_record(produced, current_stream()), "event_record");
  }
  const c10::DeviceGuard guard(to);
  at::Tensor out = empty_device(src.sizes(), src.options().device(to));
  const {{ p }}_status_t waited = {{ p }}_stream_wait_event(current_stream(), produced);
  {{ p }}_event_destroy(produced);  // the queue keeps the position it waits for, not the event
  check(waited, "stream_wait_event");
  check({{ p }}_memcpy_peer_async(current_stream(), out.data_ptr(), to.index(), dense.const_data_ptr(),
                               src.device().index(), dense.nbytes()),
        "memcpy_peer");
  return out;
}

// The elements of a device tensor as they lie in its storage (a conjugate or negative view's
// bits not applied), in a CPU tensor that carries the same bits: its value is src's.
at::Tensor raw_to_host(const at::Tensor& src) {
  const c10::DeviceGuard guard(src.device());
  at::Tensor dense = contiguous(src);
  at::Tensor host = at::empty(src.sizes(), src.options().device(at::kCPU));
  memcpy_kind(host.data_ptr(), dense.const_data_ptr(), host.nbytes(), {{ NAME }}_COPY_DEVICE_TO_HOST);
  host._set_conj(src.is_conj());
  host._set_neg(src.is_neg());
  return host;
}

// Copies with a conjugate or negative view on either side. The device has no complex
// kernels, so the bits are resolved on the CPU: a device source comes over as raw bytes with
// its bits, and a device destination receives the bytes that its own bits turn into the value.
// (torch's Conjugate/Negative fallbacks would resolve src with clone -> copy_ -> _copy_from,
// which lands here again: those keys fall through for _copy_from, see the registration.)
at::Tensor copy_views(const at::Tensor& src, const at::Tensor& dst) {
  at::Tensor value = src.is_cpu() ? src : raw_to_host(src);
  if (dst.is_cpu()) return dst.copy_(value);
  at::Tensor stored = value.to(dst.scalar_type()).resolve_conj().resolve_neg();
  if (dst.is_conj()) stored = stored.conj_physical();
  if (dst.is_neg()) stored = stored.neg();
  stored = stored.contiguous();
  const c10::DeviceGuard guard(dst.device());
  at::Tensor staged = empty_device(dst.sizes(), dst.options());
  memcpy_kind(staged.data_ptr(), stored.const_data_ptr(), stored.nbytes(), {{ NAME }}_COPY_HOST_TO_DEVICE);
  copy_into(staged, dst);
  return dst;
}

at::Tensor copy_from(const at::Tensor& src, const at::Tensor& dst, bool non_blocking) {
  KernelName k("aten::_copy_from");
  TORCH_CHECK(src.sizes() == dst.sizes(), "_copy_from: sizes differ (", src.sizes(), " vs ", dst.sizes(), ")");
  if (dst.numel() == 0) return dst;
  if (src.is_conj() || src.is_neg() || dst.is_conj() || dst.is_neg()) return copy_views(src, dst);
  const bool device_cast = is_device_dtype(src.scalar_type()) && is_device_dtype(dst.scalar_type());
  if (src.is_cpu()) {  // host -> device
    const c10::DeviceGuard guard(dst.device());
    at::Tensor host = src.to(device_cast ? src.scalar_type() : dst.scalar_type()).contiguous();
    at::Tensor staged = empty_device(dst.sizes(), dst.options().dtype(host.scalar_type()));
    memcpy_kind(staged.data_ptr(), host.const_data_ptr(), host.nbytes(), {{ NAME }}_COPY_HOST_TO_DEVICE);
    copy_into(contiguous_as(staged, dst.scalar_type()), dst);
  } else if (dst.is_cpu()) {  // device -> host
    const c10::DeviceGuard guard(src.device());
    at::Tensor dense = device_cast ? contiguous_as(src, dst.scalar_type()) : contiguous(src);
    at::Tensor host = at::empty(dst.sizes(), dst.options().dtype(dense.scalar_type()));
    memcpy_kind(host.data_ptr(), dense.const_data_ptr(), host.nbytes(), {{ NAME }}_COPY_DEVICE_TO_HOST);
    if (host.scalar_type() == dst.scalar_type() && dst.is_contiguous())
      std::memcpy(dst.data_ptr(), host.const_data_ptr(), host.nbytes());
    else
      dst.copy_(host);  // host-side layout/dtype conversion
  } else if (!device_cast && src.scalar_type() != dst.scalar_type()) {
    dst.copy_(src.cpu().to(dst.scalar_type()));  // a cast the device lacks: via the host
  } else {  // device -> device, on one device or between two (the library's peer copy)
    const at::Tensor from = src.device() == dst.device() ? src : peer_copy(src, dst.device());
    const c10::DeviceGuard guard(dst.device());
    copy_into(from.scalar_type() == dst.scalar_type() ? from : contiguous_as(from, dst.scalar_type()), dst);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& src, const at::Tensor& dst) {
  resize_(dst, src.sizes(), std::nullopt);
  return copy_from(src, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  at::Tensor host = at::empty({}, self.options().device(at::kCPU));
  const c10::DeviceGuard guard(self.device());
  memcpy_kind(host.data_ptr(), self.const_data_ptr(), self.dtype().itemsize(), {{ NAME }}_COPY_DEVICE_TO_HOST);
  return host.item();
}

// tensor.record_stream(s): its block is not reused before the work queued on `s` by the time
// the tensor is freed has run.
void record_stream(at::Tensor& self, c10::Stream stream) {
  caching_allocator().recordStream(self.storage().data_ptr(), stream);
}

// torch.cat: each input copied into its slice of `out` by the device's strided copy (cast to
// out's dtype on the device first where it differs). 1-d empty inputs are skipped, as torch
// does; anything else unusual (other devices, conjugate or negative views, sizes that do not
// line up) runs on the CPU, which also gives torch's own error for a wrong call.
at::Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
  KernelName k("aten::cat.out");
  std::vector<at::Tensor> parts;
  for (const at::Tensor& t : tensors)
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(t);
  bool ok = !parts.empty() && !out.is_conj() && !out.is_neg();
  for (const at::Tensor& t : parts)
    ok = ok && t.device() == out.device() && !t.is_conj() && !t.is_neg() && t.dim() == parts[0].dim() &&
         (t.scalar_type() == out.scalar_type() || (device_dtypes(t) && device_dtypes(out)));
  if (ok) dim = c10::maybe_wrap_dim(dim, parts[0].dim());
  std::vector<int64_t> sizes = ok ? parts[0].sizes().vec() : std::vector<int64_t>{};
  for (size_t i = 1; ok && i < parts.size(); ++i)
    for (int64_t d = 0; ok && d < parts[i].dim(); ++d)
      if (d == dim)
        sizes[d] += parts[i].size(d);
      else
        ok = parts[i].size(d) == sizes[d];
  if (!ok) return run_on_cpu<ATEN_OP2(cat, out)>(tensors, dim, out);
  const c10::DeviceGuard guard(out.device());
  at::native::resize_output(out, sizes);
  int64_t offset = 0;
  for (const at::Tensor& t : parts) {
    const at::Tensor src = t.scalar_type() == out.scalar_type() ? t : contiguous_as(t, out.scalar_type());
    strided_copy(src, out.narrow(dim, offset, t.size(dim)));
    offset += t.size(dim);
  }
  return out;
}

}  // namespace memory

// copy_from resolves conjugate and negative views itself (copy_views): the fallbacks of those
// keys would recurse through clone -> copy_ -> _copy_from until the stack is gone.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

namespace {

// Sparse layouts: {{ device_type }} tensors are strided only. One line naming the op and the layout,
// where torch would print a screen ("Could not run ... from the 'Sparse{{ device_type }}' backend").
template <c10::Layout kKeyLayout>
void refuse_sparse(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  c10::Layout layout = kKeyLayout;  // a creation op has no tensor to tell CSR from CSC, BSR, BSC
  for (const c10::IValue& arg : torch::jit::last(*stack, op.schema().arguments().size()))
    if (arg.isTensor() && arg.toTensor().layout() != at::kStrided) {
      layout = arg.toTensor().layout();
      break;
    }
  TORCH_CHECK_NOT_IMPLEMENTED(false, op.schema().operator_name(), ": {{ device_type }} has no ", layout,
                              " tensors, only strided ones; run the op on the CPU or use .to_dense() first");
}

}  // namespace

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_sparse<at::kSparse>>());
}
TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_sparse<at::kSparseCsr>>());
}

}  // namespace torch_{{ p }}
