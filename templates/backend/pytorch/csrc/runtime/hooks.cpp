// What ATen asks about the {{ device_type }} backend: devices, generators, the device of a
// pointer, pinned memory and storage resizes.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include "runtime/caching_allocator.h"
#include "runtime/device.h"
#include "runtime/generator.h"
#include "runtime/pinned_memory.h"
#include "runtime/storage.h"

namespace torch_{{ p }} {
namespace {

struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex index) const override { return true; }
  void init() const override { check({{ p }}_init(), "init"); }
  c10::DeviceIndex deviceCount() const override { return static_cast<c10::DeviceIndex>(device_count()); }
  void setCurrentDevice(c10::DeviceIndex d) const override {
    check_index(d);
    check({{ p }}_set_device(d), "set_device");
  }
  c10::DeviceIndex getCurrentDevice() const override { return current_index(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    const c10::DeviceIndex old = current_index();
    setCurrentDevice(d);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override { return exchangeDevice(d); }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override { return default_generator(index); }
  at::Generator getNewGenerator(c10::DeviceIndex index) const override { return new_generator(index); }
  // Each device's memory is its own range: the library says whose a pointer is.
  at::Device getDeviceFromPtr(void* data) const override {
    int device = 0;
    check({{ p }}_pointer_device(data, &device), "pointer_device");
    return device_of(static_cast<c10::DeviceIndex>(device));
  }
  // tensor.pin_memory() / is_pinned(): host blocks the adapter records (runtime/pinned_memory.h).
  bool isPinnedPtr(const void* data) const override { return is_pinned_ptr(data); }
  at::Allocator* getPinnedMemoryAllocator() const override { return pinned_memory_allocator(); }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    resize_device_storage(storage, newsize);
  }
};

// Registered when the library is loaded (before any tensor exists).
const bool g_hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new Hooks());
  return true;
}();

}  // namespace

void resize_device_storage(const c10::Storage& storage, size_t newsize) {
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  c10::DataPtr fresh = caching_allocator().allocate(newsize);
  const size_t keep = std::min(newsize, storage.nbytes());
  if (keep > 0) caching_allocator().copy_data(fresh.get(), storage.data(), keep);
  storage.set_data_ptr_noswap(std::move(fresh));
  storage.set_nbytes(newsize);
}

}  // namespace torch_{{ p }}
