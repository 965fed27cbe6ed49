// {{ device_type }} random-number generators, one default per device.
#pragma once

#include <ATen/core/Generator.h>

namespace torch_{{ p }} {

// The default generator of `index` (-1: the current device).
const at::Generator& default_generator(c10::DeviceIndex index);
at::Generator new_generator(c10::DeviceIndex index);

}  // namespace torch_{{ p }}
