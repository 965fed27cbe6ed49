// Conformance, area device: initialisation, the device count, the current device.
#include "conformance.h"

CONFORMANCE_CASE("device", init_and_count) {
  REQUIRE_OK({{ p }}_init());
  int count = 0;
  REQUIRE_OK({{ p }}_device_count(&count));
  REQUIRE(count >= 1);
}

CONFORMANCE_CASE("device", current_device) {
  int count = 0, current = -1;
  REQUIRE_OK({{ p }}_device_count(&count));
  EXPECT_OK({{ p }}_get_device(&current));
  EXPECT(current >= 0 && current < count);
  EXPECT_OK({{ p }}_set_device(count - 1));
  EXPECT_OK({{ p }}_get_device(&current));
  EXPECT(current == count - 1);
  EXPECT_STATUS({{ p }}_set_device(count), {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_STATUS({{ p }}_set_device(-1), {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_OK({{ p }}_set_device(0));
  EXPECT_OK({{ p }}_device_synchronize(0));
}

CONFORMANCE_CASE("device", status_strings) {
  EXPECT(std::string({{ p }}_status_string({{ NAME }}_OK)) == "ok");
  EXPECT(std::string({{ p }}_status_string({{ NAME }}_ERROR_UNSUPPORTED)) == "unsupported");
  EXPECT({{ p }}_error_detail() != nullptr);
}
