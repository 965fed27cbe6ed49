// {{ NAME }} device library: loss scaling for mixed-precision training -- the found-inf
// check with unscaling, the scale update, and dropping a step's gradients when it
// overflowed (the device side of paddle/kernels/amp_kernels.cc and pytorch/csrc/amp.cpp).
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay. The flag, the scale and
// the counters are device memory: they are read here, on the stream, never by the caller.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {
namespace {

bool valid_flag_dtype({{ p }}_dtype_t dtype) { return dtype == {{ NAME }}_BOOL || dtype == {{ NAME }}_FLOAT32; }

bool read_flag({{ p }}_dtype_t dtype, const void* flag) {
  return dtype == {{ NAME }}_BOOL ? *static_cast<const uint8_t*>(flag) != 0 : *static_cast<const float*>(flag) != 0.f;
}

void set_flag({{ p }}_dtype_t dtype, void* flag) {
  if (dtype == {{ NAME }}_BOOL) *static_cast<uint8_t*>(flag) = 1;
  else *static_cast<float*>(flag) = 1.f;
}

// A list of tensors as the op will see them: device pointers re-pointed at the library's
// views and the host arrays copied (the caller's arrays are gone when the op runs).
struct TensorList {
  std::vector<const void*> in;
  std::vector<void*> out;
  std::vector<int64_t> numels;
};

bool take_list({{ p }}_stream_t s, int count, const void* const* xs, void* const* outs, const int64_t* numels,
               TensorList* list) {
  if (count < 0 || (count > 0 && (!xs || !outs || !numels))) return false;
  for (int i = 0; i < count; ++i) {
    const void* x = xs[i];
    void* o = outs[i];
    if (numels[i] < 0 || (numels[i] > 0 && (!x || !o)) || !device_views(s, x, o)) return false;
    list->in.push_back(x);
    list->out.push_back(o);
    list->numels.push_back(numels[i]);
  }
  return true;
}

}  // namespace
}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_check_finite_and_unscale({{ p }}_stream_t s, {{ p }}_dtype_t dtype, int count,
                                           const void* const* xs, void* const* outs,
                                           const int64_t* numels, const float* scale,
                                           int invert_scale, {{ p }}_dtype_t found_dtype,
                                           void* found_inf) {
  debug::Trace trace_("check_finite_and_unscale");
  trace_.attr("count", count).attr("invert_scale", invert_scale);
  if (!real_dtype(dtype) || !valid_flag_dtype(found_dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  TensorList list;
  if (!scale || !found_inf || !take_list(s, count, xs, outs, numels, &list)) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, scale, found_inf);
  {{ NAME }}_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      const compute_t<T> m = invert_scale ? 1 / compute_t<T>(*scale) : compute_t<T>(*scale);
      bool found = false;
      for (size_t i = 0; i < list.in.size(); ++i) {
        const T* x = static_cast<const T*>(list.in[i]);
        T* o = static_cast<T*>(list.out[i]);
        for (int64_t j = 0; j < list.numels[i]; ++j) {
          const compute_t<T> v = x[j];
          found = found || !std::isfinite(v);
          o[j] = static_cast<T>(v * m);
        }
      }
      if (found) set_flag(found_dtype, found_inf);
    });
  });
}

{{ p }}_status_t {{ p }}_update_loss_scale({{ p }}_stream_t s, const {{ p }}_loss_scale_params_t* p,
                                    {{ p }}_dtype_t found_dtype, const void* found_inf, float* scale,
                                    int32_t* good_steps, int32_t* bad_steps) {
  debug::Trace trace_("update_loss_scale");
  if (!valid_flag_dtype(found_dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  if (!p || !found_inf || !scale || !good_steps || (!bad_steps && p->shrink_every != 1) || p->grow_every < 1 ||
      p->shrink_every < 1)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  trace_.attr("grow_every", p->grow_every).attr("shrink_every", p->shrink_every);
  keep(p);
  {{ NAME }}_DEVICE_POINTERS(s, found_inf, scale, good_steps, bad_steps);
  {{ NAME }}_SUBMIT(s, {
    if (read_flag(found_dtype, found_inf)) {
      *good_steps = 0;
      const int32_t bad = bad_steps ? *bad_steps + 1 : 1;
      if (bad >= p->shrink_every) {
        *scale = std::max(*scale * p->shrink_factor, p->min_scale);
        if (bad_steps) *bad_steps = 0;
      } else {
        *bad_steps = bad;
      }
    } else {
      if (bad_steps) *bad_steps = 0;
      const int32_t good = *good_steps + 1;
      if (good >= p->grow_every) {
        const float grown = *scale * p->grow_factor;
        if (std::isfinite(grown)) *scale = grown;
        *good_steps = 0;
      } else {
        *good_steps = good;
      }
    }
  });
}

{{ p }}_status_t {{ p }}_zero_if_found({{ p }}_stream_t s, {{ p }}_dtype_t dtype, int count,
                                const void* const* xs, void* const* outs, const int64_t* numels,
                                {{ p }}_dtype_t found_dtype, const void* found_inf) {
  debug::Trace trace_("zero_if_found");
  trace_.attr("count", count);
  if (!valid_flag_dtype(found_dtype) || {{ p }}_dtype_size(dtype) == 0) return {{ NAME }}_ERROR_UNSUPPORTED;
  TensorList list;
  if (!found_inf || !take_list(s, count, xs, outs, numels, &list)) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ NAME }}_DEVICE_POINTERS(s, found_inf);
  const size_t size = {{ p }}_dtype_size(dtype);
  {{ NAME }}_SUBMIT(s, {
    const bool found = read_flag(found_dtype, found_inf);
    for (size_t i = 0; i < list.in.size(); ++i) {
      const size_t bytes = static_cast<size_t>(list.numels[i]) * size;
      if (found) std::memset(list.out[i], 0, bytes);  // all-zero bytes: 0 in every dtype
      else if (list.out[i] != list.in[i]) std::memmove(list.out[i], list.in[i], bytes);
    }
  });
}

}  // extern "C"
