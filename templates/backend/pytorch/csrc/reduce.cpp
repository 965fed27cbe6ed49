// Reductions (device/src/reduce_ops.cc): sum and mean over dimensions.
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/Resize.h>

#include "common.h"

namespace torch_{{ p }} {
namespace reduce {

// out = reduce(self) over `dims` (empty: all), computed in `type`.
at::Tensor reduce(const at::Tensor& self, at::OptionalIntArrayRef dims, bool keepdim, at::ScalarType type,
                  {{ p }}_reduce_op_t op) {
  const c10::DeviceGuard guard(self.device());
  const int64_t nd = self.dim();
  std::bitset<at::dim_bitset_size> mask;
  if (dims.has_value() && !dims->empty()) mask = at::dim_list_to_bitset(*dims, nd);
  else mask.set();
  std::vector<int> reduce_mask(nd);
  std::vector<int64_t> out_sizes, kept_sizes;
  int64_t group = 1;
  for (int64_t d = 0; d < nd; ++d) {
    reduce_mask[d] = mask[d] ? 1 : 0;
    if (mask[d]) {
      group *= self.size(d);
      if (keepdim) out_sizes.push_back(1);
    } else {
      out_sizes.push_back(self.size(d));
    }
  }
  at::Tensor x = contiguous_as(self, type);
  at::Tensor out = empty_device(out_sizes, self.options().dtype(type));
  if (out.numel() == 0) return out;
  if (self.numel() == 0) {  // sum of nothing is 0, mean of nothing NaN
    check({{ p }}_fill(current_stream(), device_dtype(type), out.data_ptr(), out.numel(),
                    op == {{ NAME }}_REDUCE_MEAN ? std::nan("") : 0.0),
          "fill");
    return out;
  }
  {{ p }}_shape_t xs = shape_of(x.sizes());
  check({{ p }}_reduce(current_stream(), op, device_dtype(type), x.const_data_ptr(), &xs, reduce_mask.data(), out.data_ptr()),
        "reduce");
  return out;
}

at::ScalarType sum_type(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  if (dtype) return *dtype;
  return at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong : self.scalar_type();
}

at::Tensor sum_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  KernelName k("aten::sum.dim_IntList");
  const at::ScalarType type = sum_type(self, dtype);
  if (!is_device_dtype(type) || !is_device_dtype(self.scalar_type()))
    return run_on_cpu<ATEN_OP2(sum, dim_IntList)>(self, dim, keepdim, dtype);
  return reduce(self, dim, keepdim, type, {{ NAME }}_REDUCE_SUM);
}

at::Tensor& sum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype,
                    at::Tensor& out) {
  KernelName k("aten::sum.IntList_out");
  const at::ScalarType type = dtype ? *dtype : out.scalar_type();
  if (!is_device_dtype(type) || !is_device_dtype(self.scalar_type()))
    return run_on_cpu<ATEN_OP2(sum, IntList_out)>(self, dim, keepdim, dtype, out);
  at::Tensor r = reduce(self, dim, keepdim, type, {{ NAME }}_REDUCE_SUM);
  at::native::resize_output(out, r.sizes());
  copy_into(contiguous_as(r, out.scalar_type()), out);
  return out;
}

at::Tensor mean_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, std::optional<at::ScalarType> dtype) {
  KernelName k("aten::mean.dim");
  const at::ScalarType type = dtype ? *dtype : self.scalar_type();
  TORCH_CHECK(at::isFloatingType(type) || at::isComplexType(type),
              "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: ", type);
  if (!is_device_dtype(type) || !is_device_dtype(self.scalar_type()))
    return run_on_cpu<ATEN_OP2(mean, dim)>(self, dim, keepdim, dtype);
  return reduce(self, dim, keepdim, type, {{ NAME }}_REDUCE_MEAN);
}

}  // namespace reduce

}  // namespace torch_{{ p }}
