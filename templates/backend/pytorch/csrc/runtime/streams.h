// {{ device_type }} streams as torch names them, (device, id), and the device library's handles.
#pragma once

#include <c10/core/Stream.h>

#include <deque>
#include <mutex>
#include <vector>

#include "runtime/device.h"

namespace torch_{{ p }} {

// Id 0 is the device library's default stream of that device (its handle, not NULL: NULL
// would mean the current device's, another card's queue while a stream of device 1 is
// synchronized from device 0); streams made by create() get ids 1, 2, ... and live until
// exit (torch never destroys streams). The current stream is per thread and device.
class Streams {
 public:
  static Streams& get();
  static {{ p }}_stream_t default_handle(c10::DeviceIndex device);
  static c10::Stream default_stream(c10::DeviceIndex device);

  {{ p }}_stream_t handle(const c10::Stream& stream);
  c10::Stream create(c10::DeviceIndex device);
  c10::Stream current(c10::DeviceIndex device);
  void set_current(const c10::Stream& stream);

 private:
  static std::vector<c10::StreamId>& current_ids();
  std::mutex mu_;
  std::deque<{{ p }}_stream_t> handles_;
};

// The current stream of the current device (what kernels submit to).
{{ p }}_stream_t current_stream();

}  // namespace torch_{{ p }}
