// {{ NAME }} device library: the tracer ({{ p }}_trace_* in the C API). The stream workers (and
// the inline path under {{ NAME }}_SYNC=1) write a record per traced item into a bounded ring;
// the adapters drain it. One mutex guards the ring: it is taken once per traced item, after the
// item ran, never while tracing is off.
#include "tracer.h"

#include <chrono>
#include <mutex>
#include <new>
#include <vector>

#include "internal.h"

namespace {{ p }} {
namespace tracer {

std::atomic<bool> g_on{false};

namespace {

constexpr size_t kDefaultCapacity = 65536;

std::atomic<uint64_t> g_next_correlation{1};

// Records oldest first from `head`, `size` of them; the ring's length is its capacity.
struct Ring {
  std::mutex mu;
  std::vector<{{ p }}_trace_record_t> slots;
  size_t head = 0;
  size_t size = 0;
  uint64_t dropped = 0;
};

Ring& ring() {
  static Ring* r = new Ring();  // never destroyed: a worker may record during exit
  return *r;
}

}  // namespace

uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

Submitted submitted(uint64_t nested) {
  Submitted s;
  s.correlation = g_next_correlation.fetch_add(1 + nested, std::memory_order_relaxed);
  s.enqueue_ns = now_ns();
  return s;
}

namespace {
thread_local Submitted t_running;
}  // namespace

Submitted running() { return t_running; }
RunningItem::RunningItem(const Submitted& item) : previous_(t_running) { t_running = item; }
RunningItem::~RunningItem() { t_running = previous_; }

// (std::mutex::lock throws only for a deadlock or a bad mutex, neither possible here: noexcept.)
void record(const char* name, int device, uint64_t stream_id, const Submitted& item, uint64_t start_ns,
            {{ p }}_status_t status) noexcept {
  const uint64_t end_ns = now_ns();
  Ring& r = ring();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.size == r.slots.size()) {
    ++r.dropped;
    return;
  }
  r.slots[(r.head + r.size) % r.slots.size()] = {name,  device, static_cast<int32_t>(status), stream_id, item.correlation,
                                                 item.enqueue_ns, start_ns, end_ns};
  ++r.size;
}

}  // namespace tracer
}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_trace_enable(int on, size_t capacity) {
  if (!on) {
    tracer::g_on.store(false, std::memory_order_relaxed);
    return {{ NAME }}_OK;
  }
  return guard_call("trace_enable", [&] {
    // Allocated before the lock: a worker recording meanwhile waits for a swap, not an allocation.
    std::vector<{{ p }}_trace_record_t> slots(capacity == 0 ? tracer::kDefaultCapacity : capacity);
    tracer::Ring& r = tracer::ring();
    {
      std::lock_guard<std::mutex> lock(r.mu);
      r.slots.swap(slots);
      r.head = r.size = 0;
      r.dropped = 0;
    }
    tracer::g_on.store(true, std::memory_order_relaxed);
    return {{ NAME }}_OK;
  });
}

{{ p }}_status_t {{ p }}_trace_drain({{ p }}_trace_record_t* records, size_t capacity, size_t* count) {
  if (!count || (!records && capacity > 0)) return {{ NAME }}_ERROR_INVALID_VALUE;
  tracer::Ring& r = tracer::ring();
  std::lock_guard<std::mutex> lock(r.mu);
  const size_t n = capacity < r.size ? capacity : r.size;
  for (size_t i = 0; i < n; ++i) records[i] = r.slots[(r.head + i) % r.slots.size()];
  if (n > 0) r.head = (r.head + n) % r.slots.size();
  r.size -= n;
  *count = n;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_trace_dropped(uint64_t* count) {
  if (!count) return {{ NAME }}_ERROR_INVALID_VALUE;
  tracer::Ring& r = tracer::ring();
  std::lock_guard<std::mutex> lock(r.mu);
  *count = r.dropped;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_trace_clock_ns(uint64_t* ns) {
  if (!ns) return {{ NAME }}_ERROR_INVALID_VALUE;
  *ns = tracer::now_ns();
  return {{ NAME }}_OK;
}

}  // extern "C"
