// Every ATen kernel of the family files (kernels.h) registered for the device's dispatch key,
// in one place: the list of what runs on the device, and the one unit that compiles the
// dispatcher's templates for their signatures. Kernels(m).impl() puts a kernel behind the dtype
// check and {{ NAME }}_FALLBACK_OPS (common.h); impl_any_dtype() is for kernels that only move or
// describe memory. The CPU fallback's own registrations are in fallback.cpp, autocast's in amp.cpp.
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>

#include "common.h"
#include "kernels.h"

namespace torch_{{ p }} {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  Kernels(m)  // activation.cpp
      .impl("relu", TORCH_FN(activation::relu)).impl("relu_", TORCH_FN(activation::relu_))
      .impl("sqrt", TORCH_FN(activation::sqrt)).impl("sqrt.out", TORCH_FN(activation::sqrt_out))
      .impl("sigmoid.out", TORCH_FN(activation::sigmoid_out)).impl("tanh.out", TORCH_FN(activation::tanh_out))
      .impl("sigmoid_backward.grad_input", TORCH_FN(activation::sigmoid_backward_out))
      .impl("tanh_backward.grad_input", TORCH_FN(activation::tanh_backward_out))
      .impl("threshold_backward", TORCH_FN(activation::threshold_backward));

  Kernels(m)  // amp.cpp
      .impl("_amp_foreach_non_finite_check_and_unscale_", TORCH_FN(amp::non_finite_check_and_unscale))
      .impl("_amp_update_scale_", TORCH_FN(amp::update_scale));

  Kernels(m)  // conv_pool.cpp
      .impl("max_pool2d_with_indices", TORCH_FN(conv_pool::max_pool2d_with_indices))
      .impl("max_pool2d_with_indices_backward", TORCH_FN(conv_pool::max_pool2d_with_indices_backward));
  // Registered whatever {{ NAME }}_FALLBACK_OPS says (see conv_pool.cpp's conv_on_cpu).
  m.impl("convolution_overrideable", TORCH_FN(conv_pool::convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(conv_pool::convolution_backward));

  Kernels(m)  // creation.cpp
      .impl("normal_", TORCH_FN(creation::normal_)).impl("uniform_", TORCH_FN(creation::uniform_))
      .impl("fill_.Scalar", TORCH_FN(creation::fill_scalar))
      .impl("fill_.Tensor", TORCH_FN(creation::fill_tensor))
      .impl("zero_", TORCH_FN(creation::zero_));

  Kernels(m)  // elementwise.cpp
      .impl("add.Tensor", TORCH_FN(elementwise::add)).impl("add_.Tensor", TORCH_FN(elementwise::add_))
      .impl("add.out", TORCH_FN(elementwise::add_out))
      .impl("sub.Tensor", TORCH_FN(elementwise::sub)).impl("sub_.Tensor", TORCH_FN(elementwise::sub_))
      .impl("sub.out", TORCH_FN(elementwise::sub_out))
      .impl("mul.Tensor", TORCH_FN(elementwise::mul)).impl("mul_.Tensor", TORCH_FN(elementwise::mul_))
      .impl("mul.out", TORCH_FN(elementwise::mul_out))
      .impl("div.Tensor", TORCH_FN(elementwise::div)).impl("div_.Tensor", TORCH_FN(elementwise::div_))
      .impl("div.out", TORCH_FN(elementwise::div_out))
      .impl("eq.Tensor", TORCH_FN(elementwise::eq_tensor)).impl("eq.Scalar", TORCH_FN(elementwise::eq_scalar))
      .impl("eq.Tensor_out", TORCH_FN(elementwise::eq_tensor_out))
      .impl("neg", TORCH_FN(elementwise::neg)).impl("neg.out", TORCH_FN(elementwise::neg_out))
      .impl("reciprocal", TORCH_FN(elementwise::reciprocal))
      .impl("reciprocal.out", TORCH_FN(elementwise::reciprocal_out))
      .impl("addcmul_", TORCH_FN(elementwise::addcmul_)).impl("addcdiv_", TORCH_FN(elementwise::addcdiv_))
      .impl("lerp_.Scalar", TORCH_FN(elementwise::lerp_scalar_));

  Kernels(m)  // loss.cpp
      .impl("_log_softmax", TORCH_FN(loss::log_softmax))
      .impl("_log_softmax_backward_data", TORCH_FN(loss::log_softmax_backward))
      .impl("nll_loss_forward", TORCH_FN(loss::nll_loss_forward))
      .impl("nll_loss_backward", TORCH_FN(loss::nll_loss_backward));

  Kernels(m)  // matmul.cpp
      .impl("addr", TORCH_FN(matmul::addr))
      .impl("mm", TORCH_FN(matmul::mm)).impl("mm.out", TORCH_FN(matmul::mm_out))
      .impl("addmm", TORCH_FN(matmul::addmm)).impl("addmm.out", TORCH_FN(matmul::addmm_out))
      .impl("bmm", TORCH_FN(matmul::bmm)).impl("bmm.out", TORCH_FN(matmul::bmm_out));

  Kernels(m)  // memory.cpp
      .impl_any_dtype("cat.out", TORCH_FN(memory::cat_out))
      .impl_any_dtype("empty.memory_format", TORCH_FN(memory::empty_memory_format))
      .impl_any_dtype("empty_strided", TORCH_FN(memory::empty_strided))
      .impl_any_dtype("as_strided", TORCH_FN(memory::as_strided))
      .impl_any_dtype("view", TORCH_FN(memory::view))
      .impl_any_dtype("view_as_real", TORCH_FN(at::native::view_as_real))
      .impl_any_dtype("view_as_complex", TORCH_FN(at::native::view_as_complex))
      .impl_any_dtype("_reshape_alias", TORCH_FN(memory::reshape_alias))
      // (a view: without a kernel the CPU fallback returned a copy, and writes through it were lost)
      .impl_any_dtype("unfold", TORCH_FN(at::native::unfold))
      .impl_any_dtype("resize_", TORCH_FN(memory::resize_))
      .impl_any_dtype("set_.source_Storage", TORCH_FN(memory::set_storage))
      .impl_any_dtype("set_.source_Storage_storage_offset", TORCH_FN(memory::set_storage_offset))
      .impl_any_dtype("_copy_from", TORCH_FN(memory::copy_from))
      .impl_any_dtype("_copy_from_and_resize", TORCH_FN(memory::copy_from_and_resize))
      .impl_any_dtype("_local_scalar_dense", TORCH_FN(memory::local_scalar_dense))
      .impl_any_dtype("record_stream", TORCH_FN(memory::record_stream));

  Kernels(m).impl("argmax", TORCH_FN(metric::argmax));  // metric.cpp
  Kernels(m).impl("native_group_norm", TORCH_FN(norm::native_group_norm));  // norm.cpp

  Kernels(m)  // reduce.cpp
      .impl("sum.dim_IntList", TORCH_FN(reduce::sum_dim))
      .impl("sum.IntList_out", TORCH_FN(reduce::sum_out))
      .impl("mean.dim", TORCH_FN(reduce::mean_dim));

  Kernels(m)  // rnn.cpp
      .impl_any_dtype("_thnn_fused_lstm_cell", TORCH_FN(rnn::fused_lstm_cell))
      .impl_any_dtype("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(rnn::fused_lstm_cell_backward_impl))
      .impl_any_dtype("_thnn_fused_gru_cell", TORCH_FN(rnn::fused_gru_cell))
      .impl_any_dtype("_thnn_fused_gru_cell_backward", TORCH_FN(rnn::fused_gru_cell_backward));
}

}  // namespace torch_{{ p }}
