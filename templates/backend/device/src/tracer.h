// {{ NAME }} device library: the tracer's side the stream workers use ({{ p }}_trace_* in the
// C API). An item is traced or not when it is queued: while tracing is off the queue pays one
// relaxed atomic load for it and nothing else.
#pragma once

#include <atomic>
#include <cstdint>

#include "{{ p }}_device.h"

namespace {{ p }} {
namespace tracer {

extern std::atomic<bool> g_on;

// Whether items queued now are traced (relaxed: an item queued just as tracing turns on may go
// either way; nothing else is ordered by it).
inline bool on() { return g_on.load(std::memory_order_relaxed); }

// The device clock, in nanoseconds (monotonic).
uint64_t now_ns();

// What an item carries from its submission to its record; correlation 0: not traced.
struct Submitted {
  uint64_t correlation = 0;
  uint64_t enqueue_ns = 0;
  explicit operator bool() const { return correlation != 0; }
};

// Called when an item is queued (only while on()): its correlation id and enqueue time; the
// `nested` ids after it are reserved for the records of its parts (a graph launch's nodes).
Submitted submitted(uint64_t nested = 0);

// What an item queued now carries: a correlation id and enqueue time while tracing is on, else
// nothing (one relaxed load).
inline Submitted submission(uint64_t nested = 0) { return on() ? submitted(nested) : Submitted(); }

// What the item the calling thread runs carries (a graph launch records its nodes under it),
// for the scope of one item.
Submitted running();
class RunningItem {
 public:
  explicit RunningItem(const Submitted& item);
  ~RunningItem();
  RunningItem(const RunningItem&) = delete;
  RunningItem& operator=(const RunningItem&) = delete;

 private:
  Submitted previous_;
};

// Called after a traced item ran, before it counts as completed (a synchronisation then sees its
// record): keeps it, or counts it dropped when the buffer is full.
void record(const char* name, int device, uint64_t stream_id, const Submitted& item, uint64_t start_ns,
            {{ p }}_status_t status) noexcept;

}  // namespace tracer
}  // namespace {{ p }}
