// Activation kernels and their gradients.
#include "kernel_helpers.h"
#include "paddle/phi/kernels/activation_grad_kernel.h"
#include "paddle/phi/kernels/activation_kernel.h"

namespace {{ p }}_kernels {

#define {{ NAME }}_ACTIVATION(Name, OP)                                                       \
  template <typename T, typename Context>                                                 \
  void Name##Kernel(const Context& ctx, const phi::DenseTensor& x, phi::DenseTensor* out) { \
    T* data = ctx.template Alloc<T>(out);                                                 \
    {{ NAME }}_CHECK({{ p }}_unary(stream_of(ctx), OP, dtype_of<T>(), x.data(), data, x.numel()), #Name); \
  }                                                                                       \
  {{ NAME }}_CHECK_SIGNATURE(Name##Kernel, phi::Name##Kernel);                              \
                                                                                          \
  template <typename T, typename Context>                                                 \
  void Name##GradKernel(const Context& ctx, const phi::DenseTensor& out,                  \
                        const phi::DenseTensor& dout, phi::DenseTensor* dx) {             \
    T* data = ctx.template Alloc<T>(dx);                                                  \
    {{ NAME }}_CHECK({{ p }}_unary_grad(stream_of(ctx), OP, dtype_of<T>(), out.data(), dout.data(), data, \
                             dout.numel()),                                               \
          #Name "_grad");                                                                 \
  }                                                                                       \
  {{ NAME }}_CHECK_SIGNATURE(Name##GradKernel, phi::Name##GradKernel)

{{ NAME }}_ACTIVATION(Relu, {{ NAME }}_UNARY_RELU);
{{ NAME }}_ACTIVATION(Sigmoid, {{ NAME }}_UNARY_SIGMOID);
{{ NAME }}_ACTIVATION(Tanh, {{ NAME }}_UNARY_TANH);
{{ NAME }}_ACTIVATION(Exp, {{ NAME }}_UNARY_EXP);
{{ NAME }}_ACTIVATION(Sqrt, {{ NAME }}_UNARY_SQRT);

}  // namespace {{ p }}_kernels

#define {{ NAME }}_REGISTER_ACTIVATION(name, Name)                                                   \
  PD_REGISTER_PLUGIN_KERNEL(name, {{ device_type }}, ALL_LAYOUT, {{ p }}_kernels::Name##Kernel, float, \
                            double {{ NAME }}_AND_HALF_TYPES) {}                                                           \
  PD_REGISTER_PLUGIN_KERNEL(name##_grad, {{ device_type }}, ALL_LAYOUT,                              \
                            {{ p }}_kernels::Name##GradKernel, float, double {{ NAME }}_AND_HALF_TYPES) {}

{{ NAME }}_REGISTER_ACTIVATION(relu, Relu)
{{ NAME }}_REGISTER_ACTIVATION(sigmoid, Sigmoid)
{{ NAME }}_REGISTER_ACTIVATION(tanh, Tanh)
{{ NAME }}_REGISTER_ACTIVATION(exp, Exp)
{{ NAME }}_REGISTER_ACTIVATION(sqrt, Sqrt)
