// The {{ device_type }} devices as torch sees them: status checks, the device count and the
// current device (per thread, kept by the device library).
#pragma once

#include <c10/core/Device.h>

#include "{{ p }}_device.h"

namespace torch_{{ p }} {

// Throws a c10::Error naming the device op when a call fails.
void check({{ p }}_status_t status, const char* op);

int device_count();
// Throws when `index` names no {{ device_type }} device.
void check_index(c10::DeviceIndex index);
c10::DeviceIndex current_index();

inline c10::Device device_of(c10::DeviceIndex index) { return c10::Device(c10::DeviceType::PrivateUse1, index); }

}  // namespace torch_{{ p }}
