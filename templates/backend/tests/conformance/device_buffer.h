// A device copy of host values, for the device library's own tests: ops take ptr(); host()
// copies the device data back with the synchronous copy, which waits for the queued ops.
// The host cannot read ptr() itself: device memory is opaque.
#pragma once

#include <algorithm>
#include <vector>

#include "{{ p }}_device.h"

template <typename T>
class Dev {
 public:
  explicit Dev(const std::vector<T>& values, int device = 0) : n_(values.size()), device_(device) {
    if ({{ p }}_malloc(device_, &p_, std::max<size_t>(n_, 1) * sizeof(T)) != {{ NAME }}_OK) p_ = nullptr;
    {{ p }}_memcpy(p_, values.data(), n_ * sizeof(T), {{ NAME }}_COPY_HOST_TO_DEVICE);
  }
  explicit Dev(size_t n, T fill = T(), int device = 0) : Dev(std::vector<T>(n, fill), device) {}
  ~Dev() { {{ p }}_free(device_, p_); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  T* ptr() const { return static_cast<T*>(p_); }
  // Empty when the copy fails (an error of a queued op, say).
  std::vector<T> host() const {
    std::vector<T> out(n_);
    if ({{ p }}_memcpy(out.data(), p_, n_ * sizeof(T), {{ NAME }}_COPY_DEVICE_TO_HOST) != {{ NAME }}_OK) out.clear();
    return out;
  }

 private:
  size_t n_;
  int device_;
  void* p_ = nullptr;
};
