// Shared helpers of the {{ NAME }} kernels adapter: translate Paddle tensors and
// contexts into device-library arguments, and check kernel signatures against
// the installed Paddle at compile time.
#pragma once

#include <string>
#include <type_traits>
#include <vector>

#include "paddle/common/enforce.h"
#include "paddle/phi/backends/custom/custom_context.h"
#include "paddle/phi/core/dense_tensor.h"
#include "paddle/phi/core/kernel_registry.h"
#include "{{ p }}_device.h"

namespace {{ p }}_kernels {

using Context = phi::CustomContext;

// Fails the build when a kernel's signature differs from the declaration of the
// same kernel in the Paddle headers it is compiled against, instead of failing
// at run time with "kernel output args (...) defs should equal op outputs".
#define {{ NAME }}_CHECK_SIGNATURE(ours, paddles)                                      \
  static_assert(std::is_same<decltype(&ours<float, phi::CustomContext>),             \
                             decltype(&paddles<float, phi::CustomContext>)>::value,  \
                #ours " does not match " #paddles " in the installed Paddle headers; " \
                "update its parameters to the declaration in paddle/phi/kernels/")

// The same for kernels that Paddle declares without a dtype parameter.
#define {{ NAME }}_CHECK_SIGNATURE_ANY_DTYPE(ours, paddles)                            \
  static_assert(std::is_same<decltype(&ours<float, phi::CustomContext>),             \
                             decltype(&paddles<phi::CustomContext>)>::value,         \
                #ours " does not match " #paddles " in the installed Paddle headers; " \
                "update its parameters to the declaration in paddle/phi/kernels/")

inline {{ p }}_stream_t stream_of(const Context& ctx) {
  return reinterpret_cast<{{ p }}_stream_t>(ctx.stream());
}

inline void check_status({{ p }}_status_t status, const char* op) {
  if (status != {{ NAME }}_OK) {
    // (an error of earlier queued work, returned by a synchronising call, names its op)
    PADDLE_THROW(common::errors::External("{{ device_type }} device op %s failed: %s %s", op,
                                          {{ p }}_status_string(status), {{ p }}_error_detail()));
  }
}

// A seed drawn from the device generator (paddle.seed) for a random op. Refused inside a graph
// capture: drawn once, when captured, it would give every replay the same numbers.
inline uint64_t generator_seed(const Context& ctx) {
  int capturing = 0;  // (a device library without graphs answers UNSUPPORTED: not capturing)
  PADDLE_ENFORCE_EQ({{ p }}_stream_is_capturing(stream_of(ctx), &capturing) == {{ NAME }}_OK && capturing != 0, false,
                    common::errors::Unavailable("random numbers in a {{ device_type }} graph capture would repeat "
                                                "on every replay (their seed is drawn when captured): draw them "
                                                "outside the capture, or give the op a fixed seed"));
  return ctx.GetGenerator()->Random64();
}

// {{ NAME }}_CHECK(device_call, "kernel"): names the kernel to the device library
// before the call (for {{ NAME }}_DUMP_OP_ARGS / {{ NAME }}_AUTOCOMPARE lines), then
// turns a failed status into a Paddle error. (Prefixed: a macro named `check` would
// rewrite every other `check(` in a translation unit, Paddle's headers included.)
#define {{ NAME }}_CHECK(call, kernel) \
  ::{{ p }}_kernels::check_status((::{{ p }}_debug_kernel(kernel), (call)), kernel)

// The 16-bit floating-point types, appended to the dtypes of a kernel registration
// (`float, double {{ NAME }}_AND_HALF_TYPES`) whose device op computes them: empty when the
// device library's flavour has no float16/bfloat16 (flavour.toml: half-precision), so those
// kernels stay unregistered and Paddle runs them elsewhere instead of failing.
{%- if half_precision %}
#define {{ NAME }}_AND_HALF_TYPES , phi::dtype::float16, phi::dtype::bfloat16
{%- else %}
#define {{ NAME }}_AND_HALF_TYPES
{%- endif %}

// Whether the device library has `dtype` (dtype_of throws for the others).
inline bool device_has_dtype(phi::DataType dtype) {
  switch (dtype) {
    case phi::DataType::BOOL: case phi::DataType::UINT8: case phi::DataType::INT8: case phi::DataType::INT16:
    case phi::DataType::INT32: case phi::DataType::INT64: case phi::DataType::FLOAT32: case phi::DataType::FLOAT64:
      return true;
    case phi::DataType::FLOAT16: case phi::DataType::BFLOAT16:
      return {{ "true" if half_precision else "false" }};
    default:
      return false;
  }
}

inline {{ p }}_dtype_t dtype_of(phi::DataType dtype) {
  switch (dtype) {
    case phi::DataType::BOOL: return {{ NAME }}_BOOL;
    case phi::DataType::UINT8: return {{ NAME }}_UINT8;
    case phi::DataType::INT8: return {{ NAME }}_INT8;
    case phi::DataType::INT16: return {{ NAME }}_INT16;
    case phi::DataType::INT32: return {{ NAME }}_INT32;
    case phi::DataType::INT64: return {{ NAME }}_INT64;
    case phi::DataType::FLOAT32: return {{ NAME }}_FLOAT32;
    case phi::DataType::FLOAT64: return {{ NAME }}_FLOAT64;
{%- if half_precision %}
    case phi::DataType::FLOAT16: return {{ NAME }}_FLOAT16;
    case phi::DataType::BFLOAT16: return {{ NAME }}_BFLOAT16;
{%- endif %}
    default:
      PADDLE_THROW(common::errors::Unimplemented("{{ device_type }} has no kernels for dtype %s",
                                                 phi::DataTypeToString(dtype)));
  }
}

template <typename T>
inline {{ p }}_dtype_t dtype_of() {
  return dtype_of(phi::CppTypeToDataType<T>::Type());
}

inline {{ p }}_shape_t shape_of(const phi::DDim& dims) {
  {{ p }}_shape_t s;
  PADDLE_ENFORCE_LE(dims.size(), {{ NAME }}_MAX_DIMS,
                    common::errors::Unimplemented("{{ device_type }} supports at most %d dims",
                                                  {{ NAME }}_MAX_DIMS));
  s.ndim = dims.size();
  for (int i = 0; i < s.ndim; ++i) s.dims[i] = dims[i];
  return s;
}

inline {{ p }}_shape_t shape_of(const phi::DenseTensor& t) { return shape_of(t.dims()); }

// [outer, axis, inner] view of `dims` around `axis` (negative counts from the end).
struct AxisView {
  int64_t outer = 1, axis = 1, inner = 1;
};

inline AxisView axis_view(const phi::DDim& dims, int axis) {
  AxisView v;
  const int nd = dims.size();
  if (nd == 0) return v;
  if (axis < 0) axis += nd;
  for (int i = 0; i < nd; ++i) {
    if (i < axis) v.outer *= dims[i];
    else if (i == axis) v.axis = dims[i];
    else v.inner *= dims[i];
  }
  return v;
}

// A device buffer with the shape of `like`, for intermediate results.
template <typename T>
inline phi::DenseTensor scratch(const Context& ctx, const phi::DDim& dims) {
  phi::DenseTensor t;
  t.Resize(dims);
  ctx.template Alloc<T>(&t);
  return t;
}

// Copies the bytes of `src` into `dst` (already shaped) on the device.
inline void copy_tensor(const Context& ctx, const phi::DenseTensor& src, phi::DenseTensor* dst) {
  void* out = ctx.Alloc(dst, src.dtype());
  if (out == src.data() || src.numel() == 0) return;
  {{ NAME }}_CHECK({{ p }}_memcpy_async(stream_of(ctx), out, src.data(),
                             src.numel() * phi::SizeOf(src.dtype()),
                             {{ NAME }}_COPY_DEVICE_TO_DEVICE),
        "copy");
}

}  // namespace {{ p }}_kernels
