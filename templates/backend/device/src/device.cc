// {{ NAME }} device library: devices, memory, copies, streams and events.
//
// Host-backed implementation. Replace the bodies marked "SDK:" with calls into
// the vendor runtime; keep the status codes and the accounting.
#include "{{ p }}_device.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <map>
#include <vector>

#include <pthread.h>
#include <unistd.h>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {

namespace {

constexpr int kMaxDevices = 16;
constexpr int kDefaultDevices = 2;
constexpr size_t kAlignment = 64;

// {{ NAME }}_DEVICE_COUNT devices (default 2: code that assumes device 0 shows up at once),
// read once. A value that is not 1..16 is refused in one line and the default is used.
int device_count_setting() {
  static const int count = [] {
    const char* env = std::getenv("{{ NAME }}_DEVICE_COUNT");
    if (!env || !*env) return kDefaultDevices;
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (*end != '\0' || n < 1 || n > kMaxDevices) {
      std::fprintf(stderr, "[{{ NAME }}] {{ NAME }}_DEVICE_COUNT=%s is not a number from 1 to %d; using %d devices\n", env,
                   kMaxDevices, kDefaultDevices);
      return kDefaultDevices;
    }
    return static_cast<int>(n);
  }();
  return count;
}

struct DeviceState {
  std::mutex mu;
  size_t capacity = 0;
  size_t used = 0;
  size_t peak = 0;  // max of `used` since start or {{ p }}_memory_reset_peak
  std::map<uintptr_t, size_t> allocations;  // live allocation start -> size (ordered: range lookups)
};

DeviceState& device_state(int device) {
  static DeviceState states[kMaxDevices];
  return states[device];
}

size_t configured_capacity() {
  const char* env = std::getenv("{{ NAME }}_MEMORY_MB");
  long long mb = env ? std::atoll(env) : 8192;
  if (mb <= 0) mb = 8192;
  // On 32-bit targets 8 GiB does not fit in size_t: cap at half the address space.
  const uint64_t bytes = static_cast<uint64_t>(mb) << 20;
  const uint64_t limit = std::numeric_limits<size_t>::max() / 2;
  return static_cast<size_t>(bytes < limit ? bytes : limit);
}

thread_local int current_device = 0;

bool valid_device(int device) { return device >= 0 && device < device_count_setting(); }

// The device whose live allocation holds [ptr, ptr + size), or -1. Copies check their device
// pointers with it: on real hardware a pointer of another card (or of no card) is an error
// or garbage, so the host-backed device refuses it too.
int owner_of(const void* ptr, size_t size) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  for (int d = 0; d < device_count_setting(); ++d) {
    DeviceState& st = device_state(d);
    std::lock_guard<std::mutex> lock(st.mu);
    auto it = st.allocations.upper_bound(p);
    if (it == st.allocations.begin()) continue;
    --it;
    if (p >= it->first && p + size <= it->first + it->second) return d;
  }
  return -1;
}

}  // namespace

}  // namespace {{ p }}

// A stream is an in-order queue. `submitted` counts work handed to it,
// `completed` work finished; the host-backed device runs work at submission so
// both advance together.
struct {{ p }}_stream_st {
  int device;
  std::atomic<uint64_t> submitted{0};
  std::atomic<uint64_t> completed{0};
};

// An event remembers the stream position it was recorded at; it is complete
// once that stream has completed up to the position.
struct {{ p }}_event_st {
  int device;
  {{ p }}_stream_t stream = nullptr;
  uint64_t target = 0;
};

namespace {{ p }} {

// Each device's default stream (what a NULL stream handle means: the current device's).
{{ p }}_stream_t default_stream(int device) {
  static {{ p }}_stream_st streams[kMaxDevices];
  static std::once_flag once;
  std::call_once(once, [] {
    for (int d = 0; d < kMaxDevices; ++d) streams[d].device = d;
  });
  return &streams[device];
}

{{ p }}_stream_t default_stream() { return default_stream(current_device); }

void run_on_stream({{ p }}_stream_t stream, const std::function<void()>& work) {
  if (stream == nullptr) stream = default_stream();
  stream->submitted.fetch_add(1);
  work();  // SDK: enqueue instead of running inline.
  stream->completed.fetch_add(1);
}

int64_t worker_threads() {
  static const int64_t threads = [] {
    const char* env = std::getenv("{{ NAME }}_NUM_THREADS");
    const int64_t asked = env ? std::atoll(env) : 0;
    const int64_t cores = static_cast<int64_t>(std::thread::hardware_concurrency());
    return std::max<int64_t>(1, std::min<int64_t>(64, asked > 0 ? asked : cores));
  }();
  return threads;
}

int64_t threads_for(int64_t n, int64_t cost_per_item) {
  // Waking a pool worker costs a few microseconds: each thread must get about 64k flops of work.
  constexpr int64_t kMinWorkPerThread = int64_t{1} << 16;
  const int64_t by_work = std::max<int64_t>(1, n * cost_per_item / kMinWorkPerThread);
  return std::max<int64_t>(1, std::min({worker_threads(), n, by_work}));
}

namespace {

// pthread's condition variable under std::mutex: GCC 12's std::condition_variable::wait has
// symbol version GLIBCXX_3.4.30, which would raise the manylinux tag of every plugin built
// with it (bookworm, the host) above what the rest of the library needs.
class Condition {
 public:
  Condition() { pthread_cond_init(&cond_, nullptr); }
  ~Condition() { pthread_cond_destroy(&cond_); }
  Condition(const Condition&) = delete;
  Condition& operator=(const Condition&) = delete;
  template <typename Ready>
  void wait(std::unique_lock<std::mutex>& lock, Ready ready) {
    while (!ready()) pthread_cond_wait(&cond_, lock.mutex()->native_handle());
  }
  void notify_all() { pthread_cond_broadcast(&cond_); }

 private:
  pthread_cond_t cond_;
};

// The device's worker threads, started once (per process: a fork gets a new pool) and
// woken for each parallel region; the calling thread takes a share of the chunks too.
// One region runs at a time; a region that finds the pool busy (another framework thread,
// or a region nested in a worker) runs its chunks inline.
class WorkerPool {
 public:
  explicit WorkerPool(int64_t workers) : pid_(getpid()) {
    for (int64_t i = 0; i < workers; ++i) std::thread([this] { work(); }).detach();  // live until exit
  }
  pid_t pid() const { return pid_; }

  bool try_run(int64_t n, int64_t chunks, const std::function<void(int64_t, int64_t)>& f) {
    if (in_region_) return false;  // nested: this thread already runs a chunk
    std::unique_lock<std::mutex> region(region_, std::try_to_lock);
    if (!region.owns_lock()) return false;
    in_region_ = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      f_ = &f, n_ = n, chunks_ = chunks, next_ = 0, pending_ = chunks;
      ++generation_;
    }
    wake_.notify_all();
    run_chunks_until_done();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_ == 0; });
    f_ = nullptr;
    in_region_ = false;
    return true;
  }

 private:
  void work() {
    in_region_ = true;
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
      }
      run_chunks_until_done();
    }
  }

  void run_chunks_until_done() {
    for (;;) {
      int64_t c;
      const std::function<void(int64_t, int64_t)>* f;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (f_ == nullptr || next_ >= chunks_) return;
        c = next_++;
        f = f_;
      }
      const int64_t size = (n_ + chunks_ - 1) / chunks_, begin = c * size, end = std::min(n_, begin + size);
      if (begin < end) (*f)(begin, end);
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_.notify_all();
    }
  }

  const pid_t pid_;
  std::mutex region_, mu_;
  Condition wake_, done_;
  const std::function<void(int64_t, int64_t)>* f_ = nullptr;
  int64_t n_ = 0, chunks_ = 0, next_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  static thread_local bool in_region_;  // a worker, or a caller running a region's chunks
};
thread_local bool WorkerPool::in_region_ = false;

WorkerPool& worker_pool() {
  static std::mutex mu;
  static WorkerPool* pool = nullptr;  // never destroyed: its threads run until the process exits
  std::lock_guard<std::mutex> lock(mu);
  if (pool == nullptr || pool->pid() != getpid()) pool = new WorkerPool(worker_threads() - 1);
  return *pool;
}

}  // namespace

float* scratch(Scratch slot, size_t floats) {
  struct Buffer {
    std::unique_ptr<float[]> data;
    size_t size = 0;
  };
  thread_local Buffer buffers[static_cast<int>(Scratch::kCount)];
  Buffer& b = buffers[static_cast<int>(slot)];
  if (b.size < floats) {
    b.data.reset(new float[floats]);  // not value-initialized: callers write before reading
    b.size = floats;
  }
  return b.data.get();
}

void run_chunks(int64_t n, int64_t threads, const std::function<void(int64_t, int64_t)>& f) {
  const int64_t chunks = std::min(n, threads);
  if (chunks > 1 && worker_pool().try_run(n, chunks, f)) return;
  f(0, n);
}

}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

const char* {{ p }}_status_string({{ p }}_status_t status) {
  switch (status) {
    case {{ NAME }}_OK: return "ok";
    case {{ NAME }}_ERROR_INVALID_VALUE: return "invalid value";
    case {{ NAME }}_ERROR_OUT_OF_MEMORY: return "out of device memory";
    case {{ NAME }}_ERROR_NOT_READY: return "not ready";
    case {{ NAME }}_ERROR_UNSUPPORTED: return "unsupported";
  }
  return "unknown status";
}

size_t {{ p }}_dtype_size({{ p }}_dtype_t dtype) {
  switch (dtype) {
    case {{ NAME }}_BOOL: case {{ NAME }}_UINT8: case {{ NAME }}_INT8: return 1;
    case {{ NAME }}_INT16: return 2;
    case {{ NAME }}_INT32: case {{ NAME }}_FLOAT32: return 4;
    case {{ NAME }}_INT64: case {{ NAME }}_FLOAT64: return 8;
  }
  return 0;
}

{{ p }}_status_t {{ p }}_init(void) {
  for (int d = 0; d < device_count_setting(); ++d) {
    DeviceState& st = device_state(d);
    std::lock_guard<std::mutex> lock(st.mu);
    if (st.capacity == 0) st.capacity = configured_capacity();
  }
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_finalize(void) { return {{ NAME }}_OK; }

{{ p }}_status_t {{ p }}_device_count(int* count) {
  if (!count) return {{ NAME }}_ERROR_INVALID_VALUE;
  *count = device_count_setting();
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_set_device(int device) {
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  current_device = device;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_get_device(int* device) {
  if (!device) return {{ NAME }}_ERROR_INVALID_VALUE;
  *device = current_device;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_device_synchronize(int device) {
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  return {{ p }}_stream_synchronize(default_stream(device));
}

{{ p }}_status_t {{ p }}_malloc(int device, void** ptr, size_t size) {
  if (!valid_device(device) || !ptr) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_init();
  DeviceState& st = device_state(device);
  std::lock_guard<std::mutex> lock(st.mu);
  size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  if (st.used + rounded > st.capacity) return {{ NAME }}_ERROR_OUT_OF_MEMORY;
  void* p = std::aligned_alloc(kAlignment, rounded);  // SDK: device allocation.
  if (!p) return {{ NAME }}_ERROR_OUT_OF_MEMORY;
  st.allocations[reinterpret_cast<uintptr_t>(p)] = rounded;
  st.used += rounded;
  st.peak = std::max(st.peak, st.used);
  *ptr = p;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_free(int device, void* ptr) {
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (!ptr) return {{ NAME }}_OK;
  DeviceState& st = device_state(device);
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = st.allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == st.allocations.end()) return {{ NAME }}_ERROR_INVALID_VALUE;  // double, foreign or other-device free
  st.used -= it->second;
  st.allocations.erase(it);
  std::free(ptr);  // SDK: device free.
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_memset(int device, void* ptr, int value, size_t size) {
  if (!valid_device(device) || (!ptr && size)) return {{ NAME }}_ERROR_INVALID_VALUE;
  std::memset(ptr, value, size);
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_mem_info(int device, size_t* total, size_t* free_bytes) {
  if (!valid_device(device) || !total || !free_bytes) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_init();
  DeviceState& st = device_state(device);
  std::lock_guard<std::mutex> lock(st.mu);
  *total = st.capacity;
  *free_bytes = st.capacity - st.used;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_memory_stats(int device, size_t* allocated, size_t* peak) {
  if (!valid_device(device) || !allocated || !peak) return {{ NAME }}_ERROR_INVALID_VALUE;
  DeviceState& st = device_state(device);
  std::lock_guard<std::mutex> lock(st.mu);
  *allocated = st.used;
  *peak = st.peak;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_memory_reset_peak(int device) {
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  DeviceState& st = device_state(device);
  std::lock_guard<std::mutex> lock(st.mu);
  st.peak = st.used;
  return {{ NAME }}_OK;
}

// The device a copy runs on must own its device pointers (-1: whichever device owns the first
// one): a pointer of another card (use the peer copy) or of no card is refused, as real
// hardware would fault or read garbage.
static {{ p }}_status_t check_copy(int device, void* dst, const void* src, size_t size, {{ p }}_copy_kind_t kind) {
  if (!dst || !src || kind < {{ NAME }}_COPY_HOST_TO_DEVICE || kind > {{ NAME }}_COPY_DEVICE_TO_DEVICE)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  const bool dst_on_device = kind != {{ NAME }}_COPY_DEVICE_TO_HOST, src_on_device = kind != {{ NAME }}_COPY_HOST_TO_DEVICE;
  if (device < 0) device = owner_of(dst_on_device ? dst : src, size);
  if (device < 0 || (dst_on_device && owner_of(dst, size) != device) || (src_on_device && owner_of(src, size) != device))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_memcpy(void* dst, const void* src, size_t size, {{ p }}_copy_kind_t kind) {
  if (size == 0) return {{ NAME }}_OK;
  const {{ p }}_status_t st = check_copy(-1, dst, src, size, kind);
  if (st != {{ NAME }}_OK) return st;
  std::memmove(dst, src, size);  // SDK: DMA in the direction `kind`.
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_memcpy_async({{ p }}_stream_t stream, void* dst, const void* src,
                               size_t size, {{ p }}_copy_kind_t kind) {
  if (size == 0) return {{ NAME }}_OK;
  const {{ p }}_status_t st = check_copy(stream ? stream->device : current_device, dst, src, size, kind);
  if (st != {{ NAME }}_OK) return st;
  run_on_stream(stream, [&] { std::memmove(dst, src, size); });  // SDK: DMA on the stream.
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_memcpy_peer(void* dst, int dst_device, const void* src, int src_device, size_t size) {
  return {{ p }}_memcpy_peer_async(nullptr, dst, dst_device, src, src_device, size) == {{ NAME }}_OK
             ? {{ p }}_device_synchronize(dst_device)
             : {{ NAME }}_ERROR_INVALID_VALUE;
}

{{ p }}_status_t {{ p }}_memcpy_peer_async({{ p }}_stream_t stream, void* dst, int dst_device, const void* src,
                                    int src_device, size_t size) {
  debug::Trace trace_("memcpy_peer");
  trace_.attr("from", src_device).attr("to", dst_device).attr("bytes", size);
  if (size == 0) return {{ NAME }}_OK;
  if (!dst || !src || !valid_device(dst_device) || !valid_device(src_device) ||
      owner_of(dst, size) != dst_device || owner_of(src, size) != src_device)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  if (stream && stream->device != dst_device && stream->device != src_device) return {{ NAME }}_ERROR_INVALID_VALUE;
  // SDK: a peer DMA (or a copy through the host where cards cannot reach each other).
  run_on_stream(stream ? stream : default_stream(dst_device), [&] { std::memmove(dst, src, size); });
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_stream_create(int device, {{ p }}_stream_t* stream) {
  if (!valid_device(device) || !stream) return {{ NAME }}_ERROR_INVALID_VALUE;
  *stream = new (std::nothrow) {{ p }}_stream_st();
  if (!*stream) return {{ NAME }}_ERROR_OUT_OF_MEMORY;
  (*stream)->device = device;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_stream_default(int device, {{ p }}_stream_t* stream) {
  if (!valid_device(device) || !stream) return {{ NAME }}_ERROR_INVALID_VALUE;
  *stream = default_stream(device);
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_stream_destroy({{ p }}_stream_t stream) {
  if (!stream || stream == default_stream(stream->device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_stream_synchronize(stream);
  delete stream;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_stream_synchronize({{ p }}_stream_t stream) {
  if (!stream) stream = default_stream();
  while (stream->completed.load() < stream->submitted.load()) {
    // SDK: block on the hardware queue.
  }
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_stream_query({{ p }}_stream_t stream) {
  if (!stream) stream = default_stream();
  return stream->completed.load() >= stream->submitted.load() ? {{ NAME }}_OK
                                                                : {{ NAME }}_ERROR_NOT_READY;
}

{{ p }}_status_t {{ p }}_stream_wait_event({{ p }}_stream_t stream, {{ p }}_event_t event) {
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  // Later work on `stream` must not start before `event` completes. Work runs
  // at submission here, so waiting for the event now keeps the order.
  run_on_stream(stream, [&] { {{ p }}_event_synchronize(event); });
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_launch_host_func({{ p }}_stream_t stream, {{ p }}_host_fn_t fn,
                                    void* user_data) {
  if (!fn) return {{ NAME }}_ERROR_INVALID_VALUE;
  run_on_stream(stream, [&] { fn(user_data); });
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_event_create(int device, {{ p }}_event_t* event) {
  if (!valid_device(device) || !event) return {{ NAME }}_ERROR_INVALID_VALUE;
  *event = new (std::nothrow) {{ p }}_event_st();
  if (!*event) return {{ NAME }}_ERROR_OUT_OF_MEMORY;
  (*event)->device = device;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_event_destroy({{ p }}_event_t event) {
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  delete event;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_event_record({{ p }}_event_t event, {{ p }}_stream_t stream) {
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (!stream) stream = default_stream();
  event->stream = stream;
  event->target = stream->submitted.load();
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_event_query({{ p }}_event_t event) {
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (!event->stream) return {{ NAME }}_OK;  // never recorded: complete, as in CUDA
  return event->stream->completed.load() >= event->target ? {{ NAME }}_OK
                                                          : {{ NAME }}_ERROR_NOT_READY;
}

{{ p }}_status_t {{ p }}_event_synchronize({{ p }}_event_t event) {
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  while ({{ p }}_event_query(event) == {{ NAME }}_ERROR_NOT_READY) {
    // SDK: block on the hardware event.
  }
  return {{ NAME }}_OK;
}

}  // extern "C"
