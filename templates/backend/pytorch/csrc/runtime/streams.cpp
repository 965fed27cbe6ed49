#include "runtime/streams.h"

#include <c10/util/Exception.h>

#include <atomic>

namespace torch_{{ p }} {

Streams& Streams::get() {
  static Streams* s = new Streams();  // leaked: streams outlive static destruction
  return *s;
}

{{ p }}_stream_t Streams::default_handle(c10::DeviceIndex device) {
  static std::atomic<{{ p }}_stream_t> handles[64] = {};  // filled once per device; read on every op
  TORCH_CHECK(device >= 0 && device < 64, "{{ device_type }}:", static_cast<int>(device), " does not exist");
  {{ p }}_stream_t h = handles[device].load(std::memory_order_acquire);
  if (h == nullptr) {
    check({{ p }}_stream_default(device, &h), "stream_default");
    handles[device].store(h, std::memory_order_release);
  }
  return h;
}

c10::Stream Streams::default_stream(c10::DeviceIndex device) {
  return c10::Stream(c10::Stream::UNSAFE, device_of(device), 0);
}

{{ p }}_stream_t Streams::handle(const c10::Stream& stream) {
  if (stream.id() == 0) return default_handle(stream.device_index());
  std::lock_guard<std::mutex> lock(mu_);
  const size_t i = static_cast<size_t>(stream.id() - 1);
  TORCH_CHECK(i < handles_.size(), "unknown {{ device_type }} stream id ", stream.id());
  return handles_[i];
}

c10::Stream Streams::create(c10::DeviceIndex device) {
  {{ p }}_stream_t h = nullptr;
  check({{ p }}_stream_create(device, &h), "stream_create");
  std::lock_guard<std::mutex> lock(mu_);
  handles_.push_back(h);
  return c10::Stream(c10::Stream::UNSAFE, device_of(device), static_cast<c10::StreamId>(handles_.size()));
}

c10::Stream Streams::current(c10::DeviceIndex device) {
  auto& cur = current_ids();
  if (static_cast<size_t>(device) >= cur.size()) cur.resize(device + 1, 0);
  return c10::Stream(c10::Stream::UNSAFE, device_of(device), cur[device]);
}

void Streams::set_current(const c10::Stream& stream) {
  auto& cur = current_ids();
  if (static_cast<size_t>(stream.device_index()) >= cur.size()) cur.resize(stream.device_index() + 1, 0);
  cur[stream.device_index()] = stream.id();
}

std::vector<c10::StreamId>& Streams::current_ids() {
  thread_local std::vector<c10::StreamId> ids;
  return ids;
}

{{ p }}_stream_t current_stream() { return Streams::get().handle(Streams::get().current(current_index())); }

}  // namespace torch_{{ p }}
