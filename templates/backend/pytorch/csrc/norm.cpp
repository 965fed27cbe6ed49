// Normalization: group norm, as the device library's layer norm over each group.
#include <tuple>

#include "common.h"

namespace torch_{{ p }} {
namespace norm {

// native_group_norm of input [N, C, *] in `group` groups: the C/group * HxW values of each (n, g)
// are one layer-norm row, then y * weight[c] + bias[c]. 16-bit inputs are computed in float32 and
// rounded once, as torch's CPU kernel does; without this kernel PrivateUse1 took torch's composite
// (batch norm, then addcmul) that rounds every step to the 16-bit type: 0.016 off in bfloat16.
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm(const at::Tensor& input,
                                                                 const std::optional<at::Tensor>& weight,
                                                                 const std::optional<at::Tensor>& bias, int64_t N,
                                                                 int64_t C, int64_t HxW, int64_t group, double eps) {
  KernelName k("aten::native_group_norm");
  const at::ScalarType type = input.scalar_type();
  const bool same_type = (!given(weight) || weight->scalar_type() == type) && (!given(bias) || bias->scalar_type() == type);
  if (!real_dtype(input) || !same_type || group <= 0 || C % group != 0 || input.numel() != N * C * HxW)
    return run_on_cpu<ATEN_OP(native_group_norm)>(input, weight, bias, N, C, HxW, group, eps);  // torch's checks
  const at::ScalarType compute = type == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor x = contiguous_as(input, compute);
  at::Tensor y = empty_device(input.sizes(), x.options());
  at::Tensor mean = empty_device({N, group}, x.options());
  at::Tensor var = empty_device({N, group}, x.options());
  if (mean.numel() > 0)
    check({{ p }}_layer_norm_forward(current_stream(), device_dtype(compute), x.const_data_ptr(), nullptr, nullptr, eps,
                                  N * group, C / group * HxW, y.data_ptr(), mean.data_ptr(), var.data_ptr()),
          "layer_norm_forward");
  at::Tensor out = y.view({N, C, HxW});
  if (given(weight)) out = out.mul(contiguous_as(*weight, compute).view({1, C, 1}));
  if (given(bias)) out = out.add(contiguous_as(*bias, compute).view({1, C, 1}));
  const at::Tensor rstd = var.add(eps).sqrt().reciprocal();
  return {contiguous_as(out, type).view(input.sizes()), contiguous_as(mean, type), contiguous_as(rstd, type)};
}

}  // namespace norm

}  // namespace torch_{{ p }}
