// Fused LSTM and GRU cells. For a {{ device_type }} tensor torch's recurrent layers (nn.LSTM,
// nn.GRU, nn.LSTMCell, nn.GRUCell and their autocast forms) call these fused ops, which only CUDA
// implements: without a kernel here every LSTM or GRU fails, since the CPU fallback finds no CPU
// kernel to run either. Each is composed of aten ops on the device (their own kernels, or the CPU
// fallback where the device has none), so every dtype those take works; the workspace is read by
// the backward below alone, laid out as CUDA's is.
#include "common.h"

namespace torch_{{ p }} {
namespace rnn {

at::Tensor plus(const at::Tensor& gates, const std::optional<at::Tensor>& bias) {
  return given(bias) ? gates + *bias : gates;
}

// workspace: the activated gates i, f, g, o side by side ([batch, 4 * hidden]).
std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell(const at::Tensor& input_gates,
                                                               const at::Tensor& hidden_gates, const at::Tensor& cx,
                                                               const std::optional<at::Tensor>& input_bias,
                                                               const std::optional<at::Tensor>& hidden_bias) {
  KernelName k("aten::_thnn_fused_lstm_cell");
  const c10::DeviceGuard guard(input_gates.device());
  const auto gates = plus(plus(input_gates + hidden_gates, input_bias), hidden_bias).chunk(4, 1);
  at::Tensor i = gates[0].sigmoid(), f = gates[1].sigmoid(), g = gates[2].tanh(), o = gates[3].sigmoid();
  at::Tensor cy = f * cx + i * g;
  at::Tensor hy = o * cy.tanh();
  return {hy, cy, at::cat({i, f, g, o}, 1)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> fused_lstm_cell_backward_impl(
    const std::optional<at::Tensor>& grad_hy, const std::optional<at::Tensor>& grad_cy, const at::Tensor& cx,
    const at::Tensor& cy, const at::Tensor& workspace, bool has_bias) {
  KernelName k("aten::_thnn_fused_lstm_cell_backward_impl");
  if (!given(grad_hy) && !given(grad_cy)) return {};  // (as CUDA's: nothing flows back)
  const c10::DeviceGuard guard(cx.device());
  const auto w = workspace.chunk(4, 1);
  const at::Tensor &i = w[0], &f = w[1], &g = w[2], &o = w[3];
  const at::Tensor tanh_cy = cy.tanh();
  const at::Tensor ghy = given(grad_hy) ? *grad_hy : at::zeros_like(cy);
  const at::Tensor gcy = given(grad_cy) ? *grad_cy : at::zeros_like(cy);
  // d loss / d cy, through both outputs
  const at::Tensor gc = gcy + ghy * o * at::rsub(tanh_cy * tanh_cy, 1);
  at::Tensor grad_gates = at::cat({gc * g * i * at::rsub(i, 1), gc * cx * f * at::rsub(f, 1),
                                   gc * i * at::rsub(g * g, 1), ghy * tanh_cy * o * at::rsub(o, 1)},
                                  1);
  at::Tensor grad_bias = has_bias ? grad_gates.sum(0) : at::Tensor();
  return {grad_gates, gc * f, grad_bias};
}

// workspace: r, z, n, hx and the hidden part of n (its bias added) side by side ([batch, 5 * hidden]).
std::tuple<at::Tensor, at::Tensor> fused_gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                  const at::Tensor& hx, const std::optional<at::Tensor>& input_bias,
                                                  const std::optional<at::Tensor>& hidden_bias) {
  KernelName k("aten::_thnn_fused_gru_cell");
  const c10::DeviceGuard guard(input_gates.device());
  const auto in = plus(input_gates, input_bias).chunk(3, 1), hid = plus(hidden_gates, hidden_bias).chunk(3, 1);
  at::Tensor r = (in[0] + hid[0]).sigmoid(), z = (in[1] + hid[1]).sigmoid();
  at::Tensor n = (in[2] + r * hid[2]).tanh();
  at::Tensor hy = n + z * (hx - n);
  return {hy, at::cat({r, z, n, hx, hid[2]}, 1)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_gru_cell_backward(
    const at::Tensor& grad_hy, const at::Tensor& workspace, bool has_bias) {
  KernelName k("aten::_thnn_fused_gru_cell_backward");
  const c10::DeviceGuard guard(grad_hy.device());
  const auto w = workspace.chunk(5, 1);
  const at::Tensor &r = w[0], &z = w[1], &n = w[2], &hx = w[3], &hn = w[4];
  const at::Tensor gn = grad_hy * at::rsub(z, 1) * at::rsub(n * n, 1);  // through tanh
  const at::Tensor gz = grad_hy * (hx - n) * z * at::rsub(z, 1);
  const at::Tensor gr = gn * hn * r * at::rsub(r, 1);
  at::Tensor grad_input_gates = at::cat({gr, gz, gn}, 1);
  at::Tensor grad_hidden_gates = at::cat({gr, gz, gn * r}, 1);
  at::Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : at::Tensor();
  at::Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : at::Tensor();
  return {grad_input_gates, grad_hidden_gates, grad_hy * z, grad_input_bias, grad_hidden_bias};
}

}  // namespace rnn

// Any dtype: the ops they are made of each take the dtype to the device or to the CPU.

}  // namespace torch_{{ p }}
