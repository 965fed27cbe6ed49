#include "runtime/generator.h"

#include <ATen/CPUGeneratorImpl.h>

#include <vector>

#include "runtime/device.h"

namespace torch_{{ p }} {
namespace {

// A CPU generator (mt19937) labelled as a {{ device_type }} device: kernels draw a 64-bit seed
// from it per call and the device library's counter-based RNG expands it.
struct Generator final : at::CPUGeneratorImpl {
  explicit Generator(c10::DeviceIndex index) {
    device_ = device_of(index);
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }
};

}  // namespace

const at::Generator& default_generator(c10::DeviceIndex index) {
  static std::vector<at::Generator> generators = [] {
    std::vector<at::Generator> g;
    for (int d = 0; d < device_count(); ++d) {
      g.push_back(at::make_generator<Generator>(static_cast<c10::DeviceIndex>(d)));
      g.back().set_current_seed(c10::detail::getNonDeterministicRandom());
    }
    return g;
  }();
  if (index == -1) index = current_index();
  check_index(index);
  return generators[index];
}

at::Generator new_generator(c10::DeviceIndex index) {
  return at::make_generator<Generator>(index == -1 ? current_index() : index);
}

}  // namespace torch_{{ p }}
