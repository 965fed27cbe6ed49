// Device storages that change size (resize_, set_ onto a larger view).
#pragma once

#include <c10/core/Storage.h>

namespace torch_{{ p }} {

// Grows (or shrinks) a device storage to nbytes, keeping its contents.
void resize_device_storage(const c10::Storage& storage, size_t nbytes);

}  // namespace torch_{{ p }}
