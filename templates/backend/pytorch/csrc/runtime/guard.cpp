// The {{ device_type }} device guard: what ATen calls to switch devices and streams, and to
// record, wait for and query events (created on first record, as in CUDA).
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "common.h"
#include "runtime/caching_allocator.h"
#include "runtime/streams.h"

namespace torch_{{ p }} {
namespace {

struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    if (old.index() != d.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return device_of(current_index()); }
  void setDevice(c10::Device d) const override {
    TORCH_INTERNAL_ASSERT(d.type() == kType);
    check_index(d.index());
    check({{ p }}_set_device(d.index()), "set_device");
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override { {{ p }}_set_device(d.index()); }
  c10::DeviceIndex deviceCount() const noexcept override {
    int n = 0;
    return {{ p }}_device_count(&n) == {{ NAME }}_OK ? static_cast<c10::DeviceIndex>(n) : 0;
  }
#if __has_include(<c10/core/DeviceCapability.h>)
  // torch.accelerator.get_device_capability(): the dtypes the device library computes in
  // (others are stored, and computed through the CPU fallback).
  c10::DeviceCapability getDeviceCapability(c10::Device d) const override {
    c10::DeviceCapability cap;
    cap.capability_data.capability_bits = 0;
#define {{ NAME }}_DEVICE_DTYPE_BIT(_, name) \
    if (is_device_dtype(c10::ScalarType::name)) cap.capability_data.capability_bits |= 1ULL << c10::kIndex_##name;
    AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS({{ NAME }}_DEVICE_DTYPE_BIT)
#undef {{ NAME }}_DEVICE_DTYPE_BIT
    return cap;
  }
#endif

  // A device without an index (torch.Stream(device="{{ device_type }}")) is the current one, as in torch.cuda.
  static c10::DeviceIndex index_of(c10::Device d) { return d.has_index() ? d.index() : current_index(); }
  c10::Stream getStream(c10::Device d) const override { return Streams::get().current(index_of(d)); }
  c10::Stream getDefaultStream(c10::Device d) const override { return Streams::default_stream(index_of(d)); }
  c10::Stream getNewStream(c10::Device d, int priority) const override { return Streams::get().create(index_of(d)); }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool high_priority) const override {
    return Streams::default_stream(index_of(d));
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    c10::Stream old = Streams::get().current(s.device_index());
    Streams::get().set_current(s);
    return old;
  }
  bool queryStream(const c10::Stream& s) const override {
    return {{ p }}_stream_query(Streams::get().handle(s)) == {{ NAME }}_OK;
  }
  void synchronizeStream(const c10::Stream& s) const override {
    check({{ p }}_stream_synchronize(Streams::get().handle(s)), "stream_synchronize");
  }
  void synchronizeDevice(const c10::DeviceIndex index) const override {
    check({{ p }}_device_synchronize(index), "device_synchronize");
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(index == -1 || index == stream.device_index(), "event device ", static_cast<int>(index),
                " does not match the stream's device ", static_cast<int>(stream.device_index()));
    if (*event == nullptr) {
      {{ p }}_event_t e = nullptr;
      check({{ p }}_event_create(stream.device_index(), &e), "event_create");
      *event = e;
    }
    check({{ p }}_event_record(static_cast<{{ p }}_event_t>(*event), Streams::get().handle(stream)), "event_record");
  }
  void block(void* event, const c10::Stream& stream) const override {
    if (event) check({{ p }}_stream_wait_event(Streams::get().handle(stream), static_cast<{{ p }}_event_t>(event)), "stream_wait_event");
  }
  bool queryEvent(void* event) const override {
    return !event || {{ p }}_event_query(static_cast<{{ p }}_event_t>(event)) == {{ NAME }}_OK;
  }
  void synchronizeEvent(void* event) const override {
    if (event) check({{ p }}_event_synchronize(static_cast<{{ p }}_event_t>(event)), "event_synchronize");
  }
  // Event.elapsed_time: the device library's completion times (any event times: no enable_timing needed).
  double elapsedTime(void* start, void* end, const c10::DeviceIndex index) const override {
    TORCH_CHECK(start && end, "both events must be recorded before elapsed_time");
    float ms = 0;
    check({{ p }}_event_elapsed_time(static_cast<{{ p }}_event_t>(start), static_cast<{{ p }}_event_t>(end), &ms),
          "event_elapsed_time");
    return ms;
  }
  void destroyEvent(void* event, const c10::DeviceIndex index) const noexcept override {
    if (event) {{ p }}_event_destroy(static_cast<{{ p }}_event_t>(event));
  }
  // tensor.record_stream(s) and ATen's own cross-stream uses: the block is not reused before
  // the work `s` has queued when it is freed.
  void recordDataPtrOnStream(const c10::DataPtr& data, const c10::Stream& stream) const override {
    caching_allocator().recordStream(data, stream);
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

}  // namespace
}  // namespace torch_{{ p }}
