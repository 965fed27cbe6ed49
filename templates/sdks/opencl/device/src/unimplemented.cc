// {{ NAME }} device library on OpenCL: the ops of the C API it does not implement.
//
// Each returns UNSUPPORTED, naming itself in {{ p }}_error_detail(); nothing is computed on
// the host behind the device's back. The adapters do not register the framework kernels
// that need them (the unregistered lists in [tool.devkit.device] of pyproject.toml, compiled
// into kernels/fallback_ops.cc and pytorch/csrc/fallback.cpp), so the frameworks run those
// ops on the CPU. Implement one here, then take its kernels off those lists.
#include <string>

#include "opencl_device.h"

namespace {

{{ p }}_status_t unimplemented(const char* op) {
  {{ p }}::set_error_detail(std::string(op) + " is not implemented by the OpenCL device library");
  return {{ NAME }}_ERROR_UNSUPPORTED;
}

}  // namespace

extern "C" {

{{ p }}_status_t {{ p }}_pad({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, const {{ p }}_shape_t* x_shape, const int64_t* pads_before, double value, void* out, const {{ p }}_shape_t* out_shape) {
  return unimplemented("pad");
}

{{ p }}_status_t {{ p }}_batch_norm_inference({{ p }}_stream_t s, const float* x, const float* mean, const float* variance, const float* scale, const float* bias, float epsilon, int64_t batch, int64_t channels, int64_t spatial, float* y) {
  return unimplemented("batch_norm_inference");
}

{{ p }}_status_t {{ p }}_batch_norm_training({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, const void* scale, const void* bias, double epsilon, double momentum, int64_t outer, int64_t channels, int64_t inner, void* y, void* saved_mean, void* saved_inv_std, const void* running_mean, const void* running_var, void* running_mean_out, void* running_var_out) {
  return unimplemented("batch_norm_training");
}

{{ p }}_status_t {{ p }}_batch_norm_normalize({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, const void* mean, const void* variance, const void* scale, const void* bias, double epsilon, int64_t outer, int64_t channels, int64_t inner, void* y) {
  return unimplemented("batch_norm_normalize");
}

{{ p }}_status_t {{ p }}_batch_norm_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, const void* dy, const void* mean, const void* stat, int global_stats, double epsilon, const void* scale, int64_t outer, int64_t channels, int64_t inner, void* dx, void* dscale, void* dbias) {
  return unimplemented("batch_norm_backward");
}

{{ p }}_status_t {{ p }}_layer_norm_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, const void* scale, const void* bias, double epsilon, int64_t rows, int64_t cols, void* y, void* mean, void* variance) {
  return unimplemented("layer_norm_forward");
}

{{ p }}_status_t {{ p }}_layer_norm_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, const void* dy, const void* mean, const void* variance, const void* scale, double epsilon, int64_t rows, int64_t cols, void* dx, void* dscale, void* dbias) {
  return unimplemented("layer_norm_backward");
}

{{ p }}_status_t {{ p }}_gelu_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, void* out, int64_t numel, int approximate) {
  return unimplemented("gelu_forward");
}

{{ p }}_status_t {{ p }}_gelu_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, const void* dout, void* dx, int64_t numel, int approximate) {
  return unimplemented("gelu_backward");
}

{{ p }}_status_t {{ p }}_dropout_mask({{ p }}_stream_t s, uint8_t* mask, int64_t numel, float p, uint64_t seed, {{ p }}_rng_t rng) {
  return unimplemented("dropout_mask");
}

{{ p }}_status_t {{ p }}_masked_scale({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, const uint8_t* mask, int64_t numel, double scale, void* out) {
  return unimplemented("masked_scale");
}

{{ p }}_status_t {{ p }}_gather({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, int64_t outer, int64_t axis_size, int64_t inner, {{ p }}_dtype_t index_dtype, const void* index, int64_t num_index, int64_t skip_index, void* out) {
  return unimplemented("gather");
}

{{ p }}_status_t {{ p }}_gather_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* dout, int64_t outer, int64_t axis_size, int64_t inner, {{ p }}_dtype_t index_dtype, const void* index, int64_t num_index, int64_t skip_index, void* dx) {
  return unimplemented("gather_backward");
}

{{ p }}_status_t {{ p }}_conv2d_forward({{ p }}_stream_t s, const {{ p }}_conv2d_params_t* p, const float* x, const float* w, float* y) {
  return unimplemented("conv2d_forward");
}

{{ p }}_status_t {{ p }}_conv2d_backward({{ p }}_stream_t s, const {{ p }}_conv2d_params_t* p, const float* x, const float* w, const float* dy, float* dx, float* dw) {
  return unimplemented("conv2d_backward");
}

{{ p }}_status_t {{ p }}_pool2d_forward({{ p }}_stream_t s, const {{ p }}_pool2d_params_t* p, const float* x, float* y) {
  return unimplemented("pool2d_forward");
}

{{ p }}_status_t {{ p }}_pool2d_backward({{ p }}_stream_t s, const {{ p }}_pool2d_params_t* p, const float* x, const float* y, const float* dy, float* dx) {
  return unimplemented("pool2d_backward");
}

{{ p }}_status_t {{ p }}_max_pool2d_with_indices_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const {{ p }}_pool2d_params_t* p, int64_t dilation_h, int64_t dilation_w, const void* x, void* y, int64_t* indices) {
  return unimplemented("max_pool2d_with_indices_forward");
}

{{ p }}_status_t {{ p }}_max_pool2d_with_indices_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const {{ p }}_pool2d_params_t* p, const void* dy, const int64_t* indices, void* dx) {
  return unimplemented("max_pool2d_with_indices_backward");
}

{{ p }}_status_t {{ p }}_softmax_forward({{ p }}_stream_t s, const float* x, float* y, int64_t outer, int64_t axis, int64_t inner) {
  return unimplemented("softmax_forward");
}

{{ p }}_status_t {{ p }}_softmax_backward({{ p }}_stream_t s, const float* y, const float* dy, float* dx, int64_t outer, int64_t axis, int64_t inner) {
  return unimplemented("softmax_backward");
}

{{ p }}_status_t {{ p }}_log_softmax_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, void* y, int64_t outer, int64_t axis, int64_t inner) {
  return unimplemented("log_softmax_forward");
}

{{ p }}_status_t {{ p }}_log_softmax_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* y, const void* dy, void* dx, int64_t outer, int64_t axis, int64_t inner) {
  return unimplemented("log_softmax_backward");
}

{{ p }}_status_t {{ p }}_nll_loss_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, const int64_t* target, const void* weight, {{ p }}_reduction_t reduction, int64_t ignore_index, int64_t outer, int64_t classes, int64_t inner, void* loss, void* total_weight) {
  return unimplemented("nll_loss_forward");
}

{{ p }}_status_t {{ p }}_nll_loss_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* dloss, const int64_t* target, const void* weight, {{ p }}_reduction_t reduction, int64_t ignore_index, const void* total_weight, int64_t outer, int64_t classes, int64_t inner, void* dx) {
  return unimplemented("nll_loss_backward");
}

{{ p }}_status_t {{ p }}_softmax_cross_entropy_forward({{ p }}_stream_t s, const float* logits, const void* labels, int soft_label, int64_t ignore_index, float* softmax, float* loss, int64_t outer, int64_t classes, int64_t inner) {
  return unimplemented("softmax_cross_entropy_forward");
}

{{ p }}_status_t {{ p }}_softmax_cross_entropy_backward({{ p }}_stream_t s, const float* softmax, const void* labels, int soft_label, int64_t ignore_index, const float* dloss, float* dlogits, int64_t outer, int64_t classes, int64_t inner) {
  return unimplemented("softmax_cross_entropy_backward");
}

{{ p }}_status_t {{ p }}_argmax({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, int64_t outer, int64_t axis, int64_t inner, int64_t* out) {
  return unimplemented("argmax");
}

{{ p }}_status_t {{ p }}_topk({{ p }}_stream_t s, const float* x, int64_t outer, int64_t axis, int64_t inner, int64_t k, int largest, float* values, int64_t* indices) {
  return unimplemented("topk");
}

{{ p }}_status_t {{ p }}_accuracy({{ p }}_stream_t s, const int64_t* indices, const int64_t* labels, int64_t rows, int64_t k, float* accuracy, int32_t* correct, int32_t* total) {
  return unimplemented("accuracy");
}

{{ p }}_status_t {{ p }}_adam_update({{ p }}_stream_t s, const float* param, const float* grad, const float* lr, const float* moment1, const float* moment2, const float* beta1_pow, const float* beta2_pow, float beta1, float beta2, float epsilon, float* param_out, float* moment1_out, float* moment2_out, float* beta1_pow_out, float* beta2_pow_out, int64_t numel) {
  return unimplemented("adam_update");
}

{{ p }}_status_t {{ p }}_random_uniform({{ p }}_stream_t s, float* out, int64_t numel, float low, float high, uint64_t seed) {
  return unimplemented("random_uniform");
}

{{ p }}_status_t {{ p }}_random_normal({{ p }}_stream_t s, float* out, int64_t numel, float mean, float stddev, uint64_t seed) {
  return unimplemented("random_normal");
}

{{ p }}_status_t {{ p }}_ccl_get_unique_id({{ p }}_ccl_id_t* id) {
  return unimplemented("ccl_get_unique_id");
}

{{ p }}_status_t {{ p }}_ccl_comm_init(const {{ p }}_ccl_id_t* id, int nranks, int rank, {{ p }}_comm_t* comm) {
  return unimplemented("ccl_comm_init");
}

{{ p }}_status_t {{ p }}_ccl_comm_destroy({{ p }}_comm_t comm) {
  return unimplemented("ccl_comm_destroy");
}

{{ p }}_status_t {{ p }}_ccl_comm_rank({{ p }}_comm_t comm, int* rank, int* nranks) {
  return unimplemented("ccl_comm_rank");
}

{{ p }}_status_t {{ p }}_ccl_all_reduce({{ p }}_stream_t s, const void* send, void* recv, size_t count, {{ p }}_dtype_t dtype, {{ p }}_ccl_op_t op, {{ p }}_comm_t comm) {
  return unimplemented("ccl_all_reduce");
}

{{ p }}_status_t {{ p }}_ccl_reduce({{ p }}_stream_t s, const void* send, void* recv, size_t count, {{ p }}_dtype_t dtype, {{ p }}_ccl_op_t op, int root, {{ p }}_comm_t comm) {
  return unimplemented("ccl_reduce");
}

{{ p }}_status_t {{ p }}_ccl_broadcast({{ p }}_stream_t s, void* buf, size_t count, {{ p }}_dtype_t dtype, int root, {{ p }}_comm_t comm) {
  return unimplemented("ccl_broadcast");
}

{{ p }}_status_t {{ p }}_ccl_all_gather({{ p }}_stream_t s, const void* send, void* recv, size_t count, {{ p }}_dtype_t dtype, {{ p }}_comm_t comm) {
  return unimplemented("ccl_all_gather");
}

{{ p }}_status_t {{ p }}_ccl_reduce_scatter({{ p }}_stream_t s, const void* send, void* recv, size_t count, {{ p }}_dtype_t dtype, {{ p }}_ccl_op_t op, {{ p }}_comm_t comm) {
  return unimplemented("ccl_reduce_scatter");
}

{{ p }}_status_t {{ p }}_ccl_send({{ p }}_stream_t s, const void* buf, size_t count, {{ p }}_dtype_t dtype, int peer, {{ p }}_comm_t comm) {
  return unimplemented("ccl_send");
}

{{ p }}_status_t {{ p }}_ccl_recv({{ p }}_stream_t s, void* buf, size_t count, {{ p }}_dtype_t dtype, int peer, {{ p }}_comm_t comm) {
  return unimplemented("ccl_recv");
}

{{ p }}_status_t {{ p }}_ccl_barrier({{ p }}_stream_t s, {{ p }}_comm_t comm) {
  return unimplemented("ccl_barrier");
}

}  // extern "C"
