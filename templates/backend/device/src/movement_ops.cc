// {{ NAME }} device library: the data movement every flavour must implement beside its runtime
// -- fill (a tensor made on the device), cast (a dtype conversion) and strided copies
// (materializing and writing views) -- because both frameworks' tensor plumbing uses them
// (PyTorch's copy_ and zero_, Paddle's full and contiguous), not only kernels a framework could
// run on the CPU instead (toolchain/scaffold/op_kernels.toml: `required`). The kernels that use
// them live in their families (paddle/kernels/creation_kernels.cc, shape_kernels.cc, stride_kernels.cc).
// Here too: FloatOperands (internal.h), the float32 views of 16-bit arrays that ops with a
// float32 body compute through.
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

template <typename F>
void dispatch_half({{ p }}_dtype_t dtype, F&& f) {
  if (dtype == {{ NAME }}_FLOAT16) f(Tag<float16>{});
  else if (dtype == {{ NAME }}_BFLOAT16) f(Tag<bfloat16>{});
}

}  // namespace

float* FloatOperands::buffer(int64_t n) {
  buffers_.emplace_back(new float[static_cast<size_t>(std::max<int64_t>(n, 1))]);
  return buffers_.back().get();
}

const float* FloatOperands::in(const void* p, int64_t n) {
  if (p == nullptr || dtype_ == {{ NAME }}_FLOAT32) return static_cast<const float*>(p);
  float* wide = buffer(n);
  dispatch_half(dtype_, [&](auto tag) {
    const auto* src = static_cast<const typename decltype(tag)::type*>(p);
    parallel_for(n, 2, [&](int64_t begin, int64_t end) { std::copy(src + begin, src + end, wide + begin); });
  });
  return wide;
}

float* FloatOperands::out(void* p, int64_t n, bool read) {
  if (p == nullptr || dtype_ == {{ NAME }}_FLOAT32) return static_cast<float*>(p);
  float* wide = read ? const_cast<float*>(in(p, n)) : buffer(n);
  outputs_.push_back({wide, {p, n}});
  return wide;
}

void FloatOperands::finish() {
  for (const auto& [wide, array] : outputs_)
    dispatch_half(dtype_, [&, wide = wide, array = array](auto tag) {
      auto* dst = static_cast<typename decltype(tag)::type*>(array.first);
      parallel_for(array.second, 4, [&](int64_t begin, int64_t end) { std::copy(wide + begin, wide + end, dst + begin); });
    });
  outputs_.clear();
}

}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_fill({{ p }}_stream_t s, {{ p }}_dtype_t dtype, void* out, int64_t numel,
                       double value) {
  debug::Trace trace_("fill");
  trace_.attr("value", value).tensor("out", out, dtype, {numel});
  if (numel > 0 && !out) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, out);
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          std::fill_n(static_cast<T*>(out), numel, static_cast<T>(value));
        }))
      status_ = {{ NAME }}_ERROR_UNSUPPORTED;
  });
}

{{ p }}_status_t {{ p }}_cast({{ p }}_stream_t s, {{ p }}_dtype_t in_dtype, const void* x,
                       {{ p }}_dtype_t out_dtype, void* out, int64_t numel) {
  debug::Trace trace_("cast");
  trace_.tensor("x", x, in_dtype, {numel}).tensor("out", out, out_dtype, {numel});
  {{ NAME }}_DEVICE_POINTERS(s, x, out);
  {{ NAME }}_SUBMIT(s, {
    bool ok = dispatch(in_dtype, [&](auto in_tag) {
      using In = typename decltype(in_tag)::type;
      ok = dispatch(out_dtype, [&](auto out_tag) {
        using Out = typename decltype(out_tag)::type;
        const In* src = static_cast<const In*>(x);
        Out* dst = static_cast<Out*>(out);
        for (int64_t i = 0; i < numel; ++i) dst[i] = static_cast<Out>(src[i]);
      });
    });
    if (!ok) status_ = {{ NAME }}_ERROR_UNSUPPORTED;
  });
}

{{ p }}_status_t {{ p }}_strided_copy({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                               const {{ p }}_shape_t* dims, const void* src,
                               const int64_t* src_strides, void* dst,
                               const int64_t* dst_strides) {
  debug::Trace trace_("strided_copy");
  if (dims) trace_.tensor("src", src, dtype, dims).tensor("dst", dst, dtype, dims);
  if (!dims || dims->ndim < 0 || dims->ndim > {{ NAME }}_MAX_DIMS || (dims->ndim > 0 && (!src_strides || !dst_strides)))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  int64_t total = 1;
  for (int d = 0; d < dims->ndim; ++d) total *= dims->dims[d];
  if (total > 0 && (!src || !dst)) return {{ NAME }}_ERROR_INVALID_VALUE;
  keep_n(src_strides, dims->ndim);
  keep_n(dst_strides, dims->ndim);
  keep(dims);
  {{ NAME }}_DEVICE_POINTERS(s, src, dst);
  {{ NAME }}_SUBMIT(s, {
    if (!dispatch(dtype, [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* in = as<T>(src);
          T* out = as<T>(dst);
          const int nd = dims->ndim;
          if (total == 0) return;
          if (nd == 0) {
            out[0] = in[0];
            return;
          }
          // odometer over all but the last dimension; the last one is the inner loop
          std::vector<int64_t> idx(nd, 0);
          const int64_t n_inner = dims->dims[nd - 1];
          const int64_t si = src_strides[nd - 1], di = dst_strides[nd - 1];
          int64_t so = 0, dof = 0;
          for (int64_t done = 0; done < total; done += n_inner) {
            if (si == 1 && di == 1) {
              std::copy(in + so, in + so + n_inner, out + dof);
            } else {
              for (int64_t k = 0; k < n_inner; ++k) out[dof + k * di] = in[so + k * si];
            }
            for (int d = nd - 2; d >= 0; --d) {
              ++idx[d];
              so += src_strides[d];
              dof += dst_strides[d];
              if (idx[d] < dims->dims[d]) break;
              so -= src_strides[d] * dims->dims[d];
              dof -= dst_strides[d] * dims->dims[d];
              idx[d] = 0;
            }
          }
        }))
      status_ = {{ NAME }}_ERROR_UNSUPPORTED;
  });
}

}  // extern "C"
