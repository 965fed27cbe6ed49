// Mixed precision (device/src/amp_ops.cc): torch.autocast on the device and the two ops
// torch.amp.GradScaler runs every step. The autocast policy is torch's own, whole: its op lists
// (ATen/autocast_mode.h: lower precision, float32, float32 with a dtype, promote) registered for
// AutocastPrivateUse1, as torch registers them for CUDA. The scaler's found-inf flag, scale and
// growth tracker stay on the device; torch reads them only through synchronising copies.
#include <ATen/autocast_mode.h>

#include <map>
#include <vector>

#include "common.h"

namespace torch_{{ p }} {
namespace amp {

bool one_float(const at::Tensor& t) { return t.numel() == 1 && t.scalar_type() == at::kFloat; }

// Each tensor of `self` (one dtype per call, as GradScaler groups them; any mix is split here)
// multiplied by inv_scale in place; found_inf set to 1 when any element is infinite or NaN.
void non_finite_check_and_unscale(at::TensorList self, at::Tensor& found_inf, const at::Tensor& inv_scale) {
  KernelName k("aten::_amp_foreach_non_finite_check_and_unscale_");
  TORCH_CHECK(one_float(found_inf) && one_float(inv_scale),
              "_amp_foreach_non_finite_check_and_unscale_: found_inf and inv_scale must be one-element float32 tensors");
  const c10::DeviceGuard guard(found_inf.device());
  std::map<at::ScalarType, std::vector<at::Tensor>> by_dtype;
  for (const at::Tensor& t : self) by_dtype[t.scalar_type()].push_back(t);
  for (auto& [type, tensors] : by_dtype) {
    std::vector<at::Tensor> dense;  // contiguous (copies of strided ones, written back below)
    std::vector<const void*> in;
    std::vector<void*> out;
    std::vector<int64_t> numels;
    for (const at::Tensor& t : tensors) {
      dense.push_back(contiguous(t));
      in.push_back(dense.back().const_data_ptr());
      out.push_back(dense.back().data_ptr());
      numels.push_back(t.numel());
    }
    check({{ p }}_check_finite_and_unscale(current_stream(), device_dtype(type), static_cast<int>(in.size()), in.data(),
                                         out.data(), numels.data(), inv_scale.const_data_ptr<float>(), 0,
                                         {{ NAME }}_FLOAT32, found_inf.data_ptr()),
          "check_finite_and_unscale");
    for (size_t i = 0; i < tensors.size(); ++i)
      if (!dense[i].is_same(tensors[i])) copy_into(dense[i], tensors[i]);
  }
}

// torch's rule: an overflow shrinks the scale at once (no bad-step count, no floor); growth_interval
// clean steps in a row grow it, unless that overflows float32.
at::Tensor& update_scale(at::Tensor& self, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                         double scale_growth_factor, double scale_backoff_factor, int64_t growth_interval) {
  KernelName k("aten::_amp_update_scale_");
  TORCH_CHECK(one_float(self) && one_float(found_inf) && growth_tracker.numel() == 1 &&
                  growth_tracker.scalar_type() == at::kInt,
              "_amp_update_scale_: scale and found_inf must be one-element float32 tensors, growth_tracker int32");
  const c10::DeviceGuard guard(self.device());
  const {{ p }}_loss_scale_params_t params = {static_cast<int32_t>(growth_interval), 1,
                                             static_cast<float>(scale_growth_factor),
                                             static_cast<float>(scale_backoff_factor), 0.f};
  check({{ p }}_update_loss_scale(current_stream(), &params, {{ NAME }}_FLOAT32, found_inf.const_data_ptr(),
                                self.data_ptr<float>(), growth_tracker.data_ptr<int32_t>(), nullptr),
        "update_loss_scale");
  return self;
}

// torch bans binary_cross_entropy under autocast on every backend (unsafe in float16): the same here.
at::Tensor binary_cross_entropy_under_autocast(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                               int64_t) {
  TORCH_CHECK(false,
              "binary_cross_entropy is unsafe under autocast on {{ device_type }} (as on every torch backend): use "
              "binary_cross_entropy_with_logits (nn.BCEWithLogitsLoss), which autocast runs in float32");
  return at::Tensor();
}

}  // namespace amp

{%- if half_precision %}

// Ops outside torch's lists run in whatever dtype their inputs have.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

// (ADD_NS: the namespace torch's lists expect their op names in)
#define ADD_NS(RAW_OP) at::RAW_OP
#define {{ NAME }}_AUTOCAST_LOWER_PRECISION_FP(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define {{ NAME }}_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define {{ NAME }}_AUTOCAST_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define {{ NAME }}_AUTOCAST_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  using namespace at;  // (the lists name ops and types as ATen's own sources do)
  AT_FORALL_LOWER_PRECISION_FP({{ NAME }}_AUTOCAST_LOWER_PRECISION_FP)
  AT_FORALL_FP32({{ NAME }}_AUTOCAST_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE({{ NAME }}_AUTOCAST_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE({{ NAME }}_AUTOCAST_PROMOTE)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(amp::binary_cross_entropy_under_autocast));
}
{%- endif %}

}  // namespace torch_{{ p }}
