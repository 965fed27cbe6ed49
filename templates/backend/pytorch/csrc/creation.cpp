// Creation (device/src/creation_ops.cc): fill_, zero_, and the random fills normal_ and
// uniform_. The device library's counter-based generator expands a 64-bit seed drawn from the
// tensor's (or the device's default) generator, so a seeded run repeats on every architecture.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>

#include <mutex>

#include "common.h"

namespace torch_{{ p }} {
namespace creation {

uint64_t next_seed(std::optional<at::Generator> gen, const at::Device& device) {
  at::Generator g = gen.has_value() && gen->defined()
                        ? *gen
                        : at::detail::getPrivateUse1Hooks().getDefaultGenerator(device.index());
  TORCH_CHECK(g.device().type() == c10::DeviceType::PrivateUse1, "expected a {{ device_type }} generator, got one for ", g.device());
  // Our generators are CPU generators labelled {{ device_type }} (runtime/generator.cpp).
  auto* impl = static_cast<at::CPUGeneratorImpl*>(g.unsafeGetGeneratorImpl());
  int capturing = 0;  // (a device library without graphs answers UNSUPPORTED: not capturing)
  TORCH_CHECK({{ p }}_stream_is_capturing(current_stream(), &capturing) != {{ NAME }}_OK || !capturing,
              "random numbers in a {{ device_type }} graph capture would repeat on every replay (their seed is "
              "drawn when captured): draw them outside the capture");
  std::lock_guard<std::mutex> lock(g.mutex());
  return impl->random64();
}

template <typename Fill>
at::Tensor& random_fill(at::Tensor& self, std::optional<at::Generator> gen, Fill fill) {
  if (self.numel() == 0) return self;
  const c10::DeviceGuard guard(self.device());
  at::Tensor dense = self.is_contiguous() ? self : empty_device(self.sizes(), self.options());
  fill(dense.data_ptr<float>(), dense.numel(), next_seed(gen, self.device()));
  copy_into(dense, self);
  return self;
}

at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  KernelName k("aten::normal_");
  if (self.scalar_type() != at::kFloat) return run_on_cpu<ATEN_OP(normal_)>(self, mean, std, gen);
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  return random_fill(self, gen, [&](float* out, int64_t n, uint64_t seed) {
    check({{ p }}_random_normal(current_stream(), out, n, static_cast<float>(mean), static_cast<float>(std), seed), "random_normal");
  });
}

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  KernelName k("aten::uniform_");
  if (self.scalar_type() != at::kFloat) return run_on_cpu<ATEN_OP(uniform_)>(self, from, to, gen);
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  return random_fill(self, gen, [&](float* out, int64_t n, uint64_t seed) {
    check({{ p }}_random_uniform(current_stream(), out, n, static_cast<float>(from), static_cast<float>(to), seed), "random_uniform");
  });
}

// ---- fill ---------------------------------------------------------------------------
at::Tensor& fill_scalar(at::Tensor& self, const at::Scalar& value) {
  KernelName k("aten::fill_.Scalar");
  if (!is_device_dtype(self.scalar_type())) return run_on_cpu<ATEN_OP2(fill_, Scalar)>(self, value);
  if (self.numel() == 0) return self;
  const c10::DeviceGuard guard(self.device());
  at::Tensor dense = self.is_contiguous() ? self : empty_device(self.sizes(), self.options());
  const double v = value.isBoolean() ? static_cast<double>(value.toBool()) : value.toDouble();
  check({{ p }}_fill(current_stream(), device_dtype(self.scalar_type()), dense.data_ptr(), self.numel(), v), "fill");
  copy_into(dense, self);
  return self;
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(), " dimensions.");
  return fill_scalar(self, value.item());
}

at::Tensor& zero_(at::Tensor& self) { return fill_scalar(self, 0); }

}  // namespace creation

}  // namespace torch_{{ p }}
