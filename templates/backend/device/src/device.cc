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
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <map>
#include <utility>
#include <vector>

#include <pthread.h>
#include <unistd.h>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {

namespace {

constexpr int kDefaultDevices = 2;

thread_local int current_device_ = 0;

}  // namespace

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

int current_device() { return current_device_; }

bool valid_device(int device) { return device >= 0 && device < device_count_setting(); }

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

// The device's worker threads, started once (per process: a fork gets a new pool) and
// woken for each parallel region; the calling thread takes a share of the chunks too.
// One region runs at a time; a region that finds the pool busy (another framework thread,
// or a region nested in a worker) runs its chunks inline. An exception a chunk throws (on
// any thread) is rethrown on the calling thread once every chunk is done: the queue that ran
// the op then reports it as the op's error.
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
    if (std::exception_ptr failed = std::exchange(failed_, nullptr)) std::rethrow_exception(failed);
    return true;
  }

 private:
  void work() {
    ensure_signal_stack();
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
      std::exception_ptr failed;
      try {
        if (begin < end) (*f)(begin, end);
      } catch (...) {
        failed = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (failed && !failed_) failed_ = failed;
      if (--pending_ == 0) done_.notify_all();
    }
  }

  const pid_t pid_;
  std::mutex region_, mu_;
  Condition wake_, done_;
  const std::function<void(int64_t, int64_t)>* f_ = nullptr;
  int64_t n_ = 0, chunks_ = 0, next_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  std::exception_ptr failed_;  // the first exception of the region's chunks
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

{{ p }}_status_t {{ p }}_device_count(int* count) {
  if (!count) return {{ NAME }}_ERROR_INVALID_VALUE;
  *count = device_count_setting();
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_set_device(int device) {
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  current_device_ = device;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_get_device(int* device) {
  if (!device) return {{ NAME }}_ERROR_INVALID_VALUE;
  *device = current_device_;
  return {{ NAME }}_OK;
}

}  // extern "C"
