#include "runtime/device.h"

#include <c10/util/Exception.h>

namespace torch_{{ p }} {

void check({{ p }}_status_t status, const char* op) {
  // (an error of earlier queued work, returned by a synchronising call, names its op)
  TORCH_CHECK(status == {{ NAME }}_OK, "{{ device_type }} device op ", op, " failed: ", {{ p }}_status_string(status), " ",
              {{ p }}_error_detail());
}

int device_count() {
  int n = 0;
  check({{ p }}_device_count(&n), "device_count");
  return n;
}

void check_index(c10::DeviceIndex index) {
  TORCH_CHECK(index >= 0 && index < device_count(), "{{ device_type }}:", static_cast<int>(index),
              " does not exist (", device_count(), " {{ device_type }} device(s))");
}

c10::DeviceIndex current_index() {
  int d = 0;
  check({{ p }}_get_device(&d), "get_device");
  return static_cast<c10::DeviceIndex>(d);
}

}  // namespace torch_{{ p }}
