// Metrics (device/src/metric_ops.cc): argmax.
#include <vector>

#include "common.h"

namespace torch_{{ p }} {
namespace metric {

at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  KernelName k("aten::argmax");
  if (!is_device_dtype(self.scalar_type()) || self.scalar_type() == at::kBool)
    return run_on_cpu<ATEN_OP(argmax)>(self, dim, keepdim);
  TORCH_CHECK(self.numel() > 0 || (dim && self.dim() > 0 && self.size(at::maybe_wrap_dim(*dim, self.dim())) > 0),
              "argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  const c10::DeviceGuard guard(self.device());
  at::Tensor x = contiguous(self);
  int64_t outer = 1, axis = x.numel(), inner = 1;
  std::vector<int64_t> out_sizes;
  if (dim.has_value() && self.dim() > 0) {
    const int64_t d = at::maybe_wrap_dim(*dim, self.dim());
    outer = 1, axis = self.size(d), inner = 1;
    for (int64_t i = 0; i < self.dim(); ++i) {
      if (i < d) outer *= self.size(i);
      if (i > d) inner *= self.size(i);
      if (i != d) out_sizes.push_back(self.size(i));
      else if (keepdim) out_sizes.push_back(1);
    }
  } else if (keepdim) {
    out_sizes.assign(self.dim(), 1);
  }
  at::Tensor out = empty_device(out_sizes, self.options().dtype(at::kLong));
  if (out.numel() > 0)
    check({{ p }}_argmax(current_stream(), device_dtype(self.scalar_type()), x.const_data_ptr(), outer, axis, inner,
                      out.data_ptr<int64_t>()),
          "argmax");
  return out;
}

}  // namespace metric

}  // namespace torch_{{ p }}
