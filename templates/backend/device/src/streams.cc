// {{ NAME }} device library: streams and events.
//
// A stream is an in-order queue run by its own worker thread, as on hardware: *_async
// copies and every op return before their work runs, events complete when the queue
// reaches them, and an error raised by queued work surfaces at the next synchronising
// call with the op's name. {{ NAME }}_SYNC=1 runs work inline at submission instead (for
// debugging, like DIPU's sync switch); {{ NAME }}_STREAM_DELAY_US=N delays each queued item
// so that a missing synchronisation shows up every time, not now and then.
//
// Lifetimes: a stream is reference counted. Its handle, each event recorded on it and each
// other stream's queued wait for it hold a reference, so destroying a stream frees it only
// when nothing refers to it any more (an event of a destroyed stream stays complete).
// Errors: queued work's failures are kept with their position in the queue (see settle).
// Fork: a child forked after the device was initialised is refused (see forked_child).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
#include <typeinfo>
#include <utility>
#include <vector>

#include <unistd.h>

#include "debug.h"
#include "internal.h"
#include "tracer.h"

namespace {{ p }} {
namespace {

long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0) {
    std::fprintf(stderr, "[{{ NAME }}] ignoring %s=%s: not a whole number >= 0\n", name, v);
    return fallback;
  }
  return n;
}

thread_local std::string g_failure_reason;  // set by failing work, taken where its status is
std::atomic<const char*> g_last_op{"none yet"};
thread_local const char* t_running_op = nullptr;  // the op this thread runs (a worker's item, inline work)

// Marks the op this thread runs for the fault handler, for the scope of one item.
class RunningOp {
 public:
  explicit RunningOp(const char* op) : previous_(t_running_op) { t_running_op = op; }
  ~RunningOp() { t_running_op = previous_; }
  RunningOp(const RunningOp&) = delete;
  RunningOp& operator=(const RunningOp&) = delete;

 private:
  const char* previous_;
};

}  // namespace

struct QueuedWork {
  std::function<{{ p }}_status_t()> work;
  KeptArguments kept;  // the host arguments `work` reads
  const char* op = nullptr;
  const char* kernel = nullptr;  // the framework kernel that submitted it (autocompare lines name it)
  tracer::Submitted traced;       // (not traced: tracing was off when it was queued)
};

struct QueueError {
  {{ p }}_status_t status = {{ NAME }}_OK;
  const char* op = nullptr;
  std::string reason;     // set_failure_reason's words, if the work gave any
  uint64_t position = 0;  // the failing item's place in the stream (1: the first item submitted)
};

class StreamQueue;

// Objects both the submitting thread and a worker write start on a cache line of their own,
// not beside whatever the allocator put next to them. (posix_memalign and placement new:
// `new` of an over-aligned type needs the C++ runtime's CXXABI_1.3.11.)
template <typename T, typename... Args>
T* new_line_aligned(Args&&... args) {
  void* memory = nullptr;
  if (posix_memalign(&memory, 64, sizeof(T)) != 0) return nullptr;
  try {
    return new (memory) T(std::forward<Args>(args)...);
  } catch (...) {  // (a constructor that throws: its memory is ours to free)
    std::free(memory);
    throw;
  }
}

}  // namespace {{ p }}

// `submitted` counts items handed to the stream, `completed` items finished; an event
// is a position in that sequence.
// (The submitting thread writes `submitted`, the worker `completed`: separate cache lines,
// or each op would bounce one line between the two cores.)
struct {{ p }}_stream_st {
  int device = 0;
  uint64_t id = 0;
  std::atomic<{{ p }}::StreamQueue*> queue{nullptr};
  std::atomic<int> refs{1};  // the handle's, events', queued waits' and the worker's
  alignas(64) std::atomic<uint64_t> submitted{0};
  alignas(64) std::atomic<uint64_t> completed{0};
  // Events recorded here that wait for their position to complete, to take its time then
  // (event_elapsed_time). The worker looks only while `timed` is not zero: one load per item.
  std::atomic<int> timed{0};
  std::mutex timed_mu;
  std::vector<std::pair<uint64_t, std::shared_ptr<std::atomic<uint64_t>>>> timed_events;
};

namespace {{ p }} {

// The waiting events whose positions are `position` or before take the time now.
void settle_timed_events({{ p }}_stream_t s, uint64_t position) {
  const uint64_t now = tracer::now_ns();
  std::lock_guard<std::mutex> lock(s->timed_mu);
  auto& waiting = s->timed_events;
  for (auto& [target, done] : waiting)
    if (target <= position) done->store(now, std::memory_order_release);
  waiting.erase(std::remove_if(waiting.begin(), waiting.end(), [&](const auto& w) { return w.first <= position; }),
                waiting.end());
  s->timed.store(static_cast<int>(waiting.size()), std::memory_order_release);
}

// The item at position `completed + 1` is about to count as completed: the events waiting for
// it take the time now (before `completed` moves, so an event seen complete has its time).
void complete_timed_events({{ p }}_stream_t s) {
  if (s->timed.load(std::memory_order_acquire) != 0)
    settle_timed_events(s, s->completed.load(std::memory_order_relaxed) + 1);
}

const ExecutionSettings& execution() {
  static const ExecutionSettings s = [] {
    ExecutionSettings r;
    // Dumping values (level 3) reads an op's outputs when it returns: that needs inline work.
    r.synchronous = env_long("{{ NAME }}_SYNC", 0) != 0 || debug::settings().dump >= 3;
    r.delay_us = env_long("{{ NAME }}_STREAM_DELAY_US", 0);
    return r;
  }();
  return s;
}

const char* last_op() { return g_last_op.load(std::memory_order_relaxed); }
const char* running_op() { return t_running_op; }

void set_failure_reason(std::string reason) { g_failure_reason = std::move(reason); }
std::string take_failure_reason() { return std::exchange(g_failure_reason, std::string()); }

{{ p }}_status_t fail_call(const char* call, {{ p }}_status_t status, const std::string& reason) {
  return core::fail(call, status, reason);
}

{{ p }}_status_t exception_status(std::string* why) noexcept {
  try {
    throw;
  } catch (const std::bad_alloc& e) {
    *why = std::string("threw ") + e.what();
    return {{ NAME }}_ERROR_OUT_OF_MEMORY;
  } catch (const std::system_error& e) {  // a thread, a lock the system would not give
    *why = std::string("threw std::system_error (the system refused a thread or a lock): ") + e.what();
    const int err = e.code().value();  // (EAGAIN: no thread to be had; the resource that ran out)
    return err == EAGAIN || err == ENOMEM ? {{ NAME }}_ERROR_OUT_OF_MEMORY : {{ NAME }}_ERROR_INVALID_VALUE;
  } catch (const std::exception& e) {
    *why = std::string("threw an exception: ") + e.what();
    return {{ NAME }}_ERROR_INVALID_VALUE;
  } catch (...) {
    *why = "threw an exception that is not a std::exception";
    return {{ NAME }}_ERROR_INVALID_VALUE;
  }
}

{{ p }}_status_t call_threw(const char* call) noexcept {
  std::string why;
  const {{ p }}_status_t status = exception_status(&why);
  return core::fail(call, status, why);
}

namespace {
std::atomic<bool> g_forked{false};
}  // namespace

void mark_initialised() {
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, [] { g_forked.store(true); });
    return true;
  }();
  (void)registered;
}

bool forked_child() { return g_forked.load(std::memory_order_relaxed); }

{{ p }}_status_t refuse_in_forked_child(const char* call) {
  core::set_error_detail(std::string(call) +
                         ": the {{ NAME }} device cannot be used in a process forked after it was initialised (its memory "
                         "and queues belong to the parent); start such workers with the 'spawn' or 'forkserver' "
                         "method (multiprocessing_context='spawn' for a DataLoader), or use the device in the parent "
                         "only");
  return {{ NAME }}_ERROR_UNSUPPORTED;
}

namespace {

// Runs queued (or inline) work: an exception it throws (bad_alloc in scratch space, a vector
// that cannot grow) is the op's error, with its words in the error detail, not std::terminate.
{{ p }}_status_t run_guarded(const std::function<{{ p }}_status_t()>& work) {
  try {
    return work();
  } catch (...) {
    return exception_status(&g_failure_reason);
  }
}

void retain_stream({{ p }}_stream_t s) { s->refs.fetch_add(1, std::memory_order_relaxed); }

// Frees a stream that nothing refers to any more, and its queue, whose worker has exited (it
// held a reference); the default streams keep their first reference.
void release_stream({{ p }}_stream_t s);

// A reference to a stream, for what outlives the call that made it (a queued wait).
class StreamRef {
 public:
  explicit StreamRef({{ p }}_stream_t s) : s_(s) { retain_stream(s_); }
  StreamRef(const StreamRef& other) : s_(other.s_) { retain_stream(s_); }
  StreamRef& operator=(const StreamRef&) = delete;
  ~StreamRef() { release_stream(s_); }
  {{ p }}_stream_t get() const { return s_; }

 private:
  {{ p }}_stream_t s_;
};

}  // namespace

namespace {
std::atomic<unsigned> g_process_generation{0};
}  // namespace

// Which process this is, without a system call: bumped in every forked child.
unsigned process_generation() {
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, [] { g_process_generation.fetch_add(1); });
    return true;
  }();
  (void)registered;
  return g_process_generation.load(std::memory_order_relaxed);
}

const void* KeptArguments::store(const void* src, size_t bytes, size_t align) {
  const size_t at = (used_ + align - 1) / align * align;
  char* dst = nullptr;
  if (at + bytes <= kBlock) {
    if (!block_) block_.reset(new char[kBlock]);
    dst = block_.get() + at;
    used_ = at + bytes;
  } else {
    overflow_.emplace_back(new char[bytes]);
    dst = overflow_.back().get();
  }
  std::memcpy(dst, src, bytes);
  return dst;
}

KeptArguments& kept_arguments() {
  thread_local KeptArguments kept;
  return kept;
}

// One stream's queue and the worker thread that runs it. Made on the stream's first
// queued item (per process: a forked child gets a new one, its parent's queue has no
// worker there); deleted with its stream, after the worker has exited.
class StreamQueue {
 public:
  explicit StreamQueue({{ p }}_stream_t stream) : stream_(stream), process_(process_generation()) {
    retain_stream(stream);  // the worker's reference, released when it exits
    try {
      std::thread([this] { run(); }).detach();
    } catch (...) {  // no thread to be had (std::system_error): the submitting call fails, saying so
      release_stream(stream);
      throw;
    }
  }
  // False in a forked child: the worker thread is the parent's.
  bool ours() const { return process_ == process_generation(); }

  void push(QueuedWork task) {
    std::vector<QueuedWork> finished;  // destroyed here, on the submitting thread, after the lock
    {
      SpinLock lock(items_lock_);
      tasks_.push_back(std::move(task));
      finished.swap(done_);
    }
    pending_.fetch_add(1);
    if (worker_sleeping_.load()) {  // else it runs or spins, and sees the item
      std::lock_guard<std::mutex> lock(mu_);
      ready_.notify_all();
    }
  }

  // Waits up to `seconds` for the stream to complete `target` items (at exit: polls).
  bool wait_for(uint64_t target, long seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (stream_->completed.load() < target) {
      if (std::chrono::steady_clock::now() > until) return false;
      const timespec ms{0, 1000000};
      nanosleep(&ms, nullptr);
    }
    return true;
  }

  // The op the worker is running (or last ran).
  const char* running() const { return running_.load(); }

  // Blocks until the stream has completed `target` items (a short spin first: most waits
  // at a synchronisation are for the last op or two).
  void wait_until(uint64_t target) {
    auto reached = [&] { return stream_->completed.load() >= target; };
    if (!spin_until(reached)) {
      std::unique_lock<std::mutex> lock(mu_);
      waiters_.fetch_add(1);
      drained_.wait(lock, reached);
      waiters_.fetch_sub(1);
    }
    std::vector<QueuedWork> finished;  // what ran is freed at a synchronisation too
    SpinLock lock(items_lock_);
    finished.swap(done_);
  }

  // The first error of an item at or before `target`; `whole`: the synchronisation covers the
  // whole stream, which consumes every error up to `target` (a later one waits for its own).
  QueueError error_up_to(uint64_t target, bool whole) {
    SpinLock lock(items_lock_);
    QueueError first;
    for (const QueueError& e : errors_)
      if (e.position <= target) {
        first = e;
        break;
      }
    if (whole)
      errors_.erase(std::remove_if(errors_.begin(), errors_.end(), [&](const QueueError& e) { return e.position <= target; }),
                    errors_.end());
    return first;
  }

  // After the queue has drained: the worker exits.
  void stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    ready_.notify_all();
  }

 private:
  // Guards the item list: held for a push or a pop only, so waiting spins (a mutex would
  // put the framework's thread and the worker to sleep on each other many times per op).
  class SpinLock {
   public:
    explicit SpinLock(std::atomic_flag& flag) : flag_(flag) {
      while (flag_.test_and_set(std::memory_order_acquire)) cpu_relax();
    }
    ~SpinLock() { flag_.clear(std::memory_order_release); }
    SpinLock(const SpinLock&) = delete;
    SpinLock& operator=(const SpinLock&) = delete;

   private:
    std::atomic_flag& flag_;
  };

  // Spins up to kSpinMicroseconds for `ready`: waking a sleeping thread costs a system call
  // on one side and tens of microseconds on the other, more than a small op takes.
  template <typename Ready>
  static bool spin_until(Ready ready) {
    constexpr auto kSpinMicroseconds = std::chrono::microseconds(50);
    const auto until = std::chrono::steady_clock::now() + kSpinMicroseconds;
    for (unsigned i = 1;; ++i) {
      if (ready()) return true;
      cpu_relax();
      if (i % 64 == 0 && std::chrono::steady_clock::now() > until) return false;
    }
  }

  static void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || (defined(__arm__) && defined(__ARM_ARCH) && __ARM_ARCH >= 7)
    asm volatile("yield");
#endif
  }

  // The items queued so far, in order, spinning and then sleeping until there is one; false
  // when stopped. (The flag and the count are sequentially consistent on both sides: a push
  // either sees the worker asleep and wakes it, or the worker sees the count before it sleeps.)
  // All of them at once: one hand-over per batch, not per item, of the lines both sides touch.
  bool next(std::vector<QueuedWork>* batch) {
    if (!spin_until([&] { return pending_.load() > 0; })) {
      std::unique_lock<std::mutex> lock(mu_);
      worker_sleeping_.store(true);
      ready_.wait(lock, [&] { return pending_.load() > 0 || stop_.load(); });
      worker_sleeping_.store(false);
      if (pending_.load() == 0) return false;
    }
    SpinLock lock(items_lock_);
    batch->swap(tasks_);
    pending_.fetch_sub(batch->size());
    return true;
  }

  void run() {
    ensure_signal_stack();
    const long delay_us = execution().delay_us;
    std::vector<QueuedWork> batch;
    while (next(&batch)) {
      for (QueuedWork& task : batch) {
        if (delay_us > 0) {
          const timespec ts{delay_us / 1000000, (delay_us % 1000000) * 1000};
          nanosleep(&ts, nullptr);
        }
        {{ p }}_debug_kernel(task.kernel);
        running_.store(task.op);
        const uint64_t start_ns = task.traced ? tracer::now_ns() : 0;
        {{ p }}_status_t status;
        {
          RunningOp running(task.op);
          const tracer::RunningItem item(task.traced);
          status = run_guarded(task.work);
        }
        if (task.traced) tracer::record(task.op, stream_->device, stream_->id, task.traced, start_ns, status);
        if (status != {{ NAME }}_OK) {
          std::string reason = std::exchange(g_failure_reason, std::string());
          const uint64_t position = stream_->completed.load() + 1;
          SpinLock lock(items_lock_);
          // (kept until a synchronisation of the whole stream: a few are enough to keep the first)
          if (errors_.size() < kMaxErrors) errors_.push_back({status, task.op, std::move(reason), position});
        }
        complete_timed_events(stream_);
        stream_->completed.fetch_add(1);
        if (waiters_.load() > 0) {
          std::lock_guard<std::mutex> lock(mu_);
          drained_.notify_all();
        }
      }
      // Finished items go back to be destroyed by the next push: memory is freed by the
      // thread that allocated it (a free from here contends for the allocator's lock).
      SpinLock lock(items_lock_);
      for (QueuedWork& task : batch) done_.push_back(std::move(task));
      batch.clear();
    }
    release_stream(stream_);  // stopped: the stream was destroyed and drained
  }

  static constexpr size_t kMaxErrors = 16;

  {{ p }}_stream_t const stream_;
  const unsigned process_;
  std::atomic_flag items_lock_ = ATOMIC_FLAG_INIT;
  std::vector<QueuedWork> tasks_;
  std::vector<QueuedWork> done_;  // run, to be destroyed by the submitting side
  std::vector<QueueError> errors_;  // in queue order
  std::atomic<const char*> running_{"nothing"};
  std::atomic<size_t> pending_{0};  // tasks_.size()
  // Read on every item, written only around sleeping: a line of their own.
  alignas(64) std::atomic<int> waiters_{0};
  std::atomic<bool> worker_sleeping_{false};
  std::atomic<bool> stop_{false};
  std::mutex mu_;  // for sleeping only: the worker on ready_, waiters on drained_
  Condition ready_, drained_;
};

namespace {

void release_stream({{ p }}_stream_t s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  if (StreamQueue* q = s->queue.load(std::memory_order_acquire)) {
    q->~StreamQueue();
    std::free(q);
  }
  s->~{{ p }}_stream_st();
  std::free(s);
}

}  // namespace
}  // namespace {{ p }}

struct {{ p }}_event_st {
  int device = 0;
  std::mutex mu;  // guards stream, target and done_ns: a record replaces them while other threads wait
  {{ p }}_stream_t stream = nullptr;  // where it was last recorded (NULL: never: complete)
  uint64_t target = 0;
  // The device clock when its position completed (0: not yet), shared with the stream's list
  // until then: the event may be destroyed or recorded again first.
  std::shared_ptr<std::atomic<uint64_t>> done_ns;
};

namespace {{ p }} {
namespace {

// Where an event was last recorded, read under its lock, holding a reference to that stream
// (a record on another thread releases the one it replaces). stream NULL: never recorded.
class Recorded {
 public:
  explicit Recorded({{ p }}_event_t event) {
    std::lock_guard<std::mutex> lock(event->mu);
    stream = event->stream;
    target = event->target;
    if (stream) retain_stream(stream);
  }
  ~Recorded() {
    if (stream) release_stream(stream);
  }
  Recorded(const Recorded&) = delete;
  Recorded& operator=(const Recorded&) = delete;

  {{ p }}_stream_t stream;
  uint64_t target;
};

// Every live stream by id: device_synchronize waits for all of a device's streams, and
// a deferred free waits for positions on them (a destroyed stream has drained).
struct Registry {
  std::mutex mu;
  std::map<uint64_t, {{ p }}_stream_t> streams;
  uint64_t next_id = 1;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: workers may use it during exit
  return *r;
}

void register_stream({{ p }}_stream_t s, int device) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  s->device = device;
  s->id = r.next_id++;
  r.streams[s->id] = s;
}

// The streams of `device` (-1: of every device).
std::vector<{{ p }}_stream_t> streams_of(int device) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<{{ p }}_stream_t> out;
  for (const auto& kv : r.streams)
    if (device < 0 || kv.second->device == device) out.push_back(kv.second);
  return out;
}

std::mutex g_queue_creation;

StreamQueue& queue_of({{ p }}_stream_t s) {
  StreamQueue* q = s->queue.load(std::memory_order_acquire);
  if (q != nullptr && q->ours()) return *q;
  std::lock_guard<std::mutex> lock(g_queue_creation);
  q = s->queue.load(std::memory_order_acquire);
  if (q == nullptr || !q->ours()) {
    // In a forked child the parent's queued items will never run here.
    if (q != nullptr) s->completed.store(s->submitted.load());
    mark_initialised();
    q = new_line_aligned<StreamQueue>(s);
    s->queue.store(q, std::memory_order_release);
  }
  return *q;
}

// Waits until `s` has completed `target` items; returns the first error its queued work
// raised at or before `target`, with the op's name in {{ p }}_error_detail. An error is
// reported by every synchronisation that covers it (an event recorded after the failing op,
// the stream, the device), until one of the whole stream (`whole`) has reported it; an event
// recorded before the failing op is OK.
{{ p }}_status_t settle({{ p }}_stream_t s, uint64_t target, bool whole) {
  if (s->queue.load(std::memory_order_acquire) == nullptr) return {{ NAME }}_OK;  // nothing ever queued
  StreamQueue& q = queue_of(s);
  q.wait_until(target);
  const QueueError e = q.error_up_to(target, whole);
  if (e.status == {{ NAME }}_OK) return {{ NAME }}_OK;
  core::set_error_detail(std::string(e.op) + " (queued on device " + std::to_string(s->device) +
                         ") failed: " + {{ p }}_status_string(e.status) + (e.reason.empty() ? "" : ": " + e.reason));
  return e.status;
}

{{ p }}_status_t drain({{ p }}_stream_t s) { return settle(s, s->submitted.load(std::memory_order_acquire), true); }

}  // namespace

void wait_at_exit();

{{ p }}_stream_t default_stream(int device) {
  static {{ p }}_stream_st streams[kMaxDevices];
  static std::once_flag once;
  std::call_once(once, [] {
    for (int d = 0; d < kMaxDevices; ++d) register_stream(&streams[d], d);
    // Work still queued at exit is waited for, so no worker runs an op while static
    // objects are destroyed.
    std::atexit(wait_at_exit);
  });
  return &streams[device];
}

{{ p }}_stream_t default_stream() { return default_stream(current_device()); }

int stream_device({{ p }}_stream_t stream) { return stream ? stream->device : current_device(); }

{{ p }}_status_t run_inline({{ p }}_stream_t s, const char* op, {{ p }}_status_t (*fn)(void*), void* work,
                         uint64_t nested) {
  if (forked_child()) return refuse_in_forked_child(op);
  if (s == nullptr) s = default_stream();
  g_last_op.store(op, std::memory_order_relaxed);
  // (kept only while a capture is underway, for an op of another stream: alive while it runs)
  const KeptArguments kept = std::exchange(kept_arguments(), KeptArguments());
  const tracer::Submitted traced = tracer::submission(nested);
  s->submitted.fetch_add(1, std::memory_order_relaxed);
  {{ p }}_status_t status;
  {
    RunningOp running(op);
    const tracer::RunningItem item(traced);
    status = run_guarded([fn, work] { return fn(work); });
  }
  if (traced) tracer::record(op, s->device, s->id, traced, traced.enqueue_ns, status);  // (inline: started when queued)
  complete_timed_events(s);
  s->completed.fetch_add(1, std::memory_order_release);
  if (status != {{ NAME }}_OK && !g_failure_reason.empty())  // inline: the detail is the call's own
    core::fail(op, status, std::exchange(g_failure_reason, std::string()));
  return status;
}

{{ p }}_status_t enqueue({{ p }}_stream_t s, const char* op, std::function<{{ p }}_status_t()> work, uint64_t nested) {
  if (forked_child()) return refuse_in_forked_child(op);
  if (s == nullptr) s = default_stream();
  if (capture_underway() && capture_item(s, op, &work)) return {{ NAME }}_OK;
  if (execution().synchronous)  // (here only while another stream captures)
    return run_inline(s, op, [](void* w) { return (*static_cast<std::function<{{ p }}_status_t()>*>(w))(); }, &work,
                      nested);
  g_last_op.store(op, std::memory_order_relaxed);
  KeptArguments kept = std::move(kept_arguments());
  kept_arguments() = KeptArguments();
  StreamQueue& q = queue_of(s);
  const tracer::Submitted traced = tracer::submission(nested);
  s->submitted.fetch_add(1, std::memory_order_release);
  q.push({std::move(work), std::move(kept), op, debug::current_kernel(), traced});
  return {{ NAME }}_OK;
}

{{ p }}_status_t synchronize_device_streams(int device) {
  core::clear_error_detail();  // (as the stream and event synchronisations do: no detail of an earlier call)
  {{ p }}_status_t first = {{ NAME }}_OK;
  for ({{ p }}_stream_t s : streams_of(device)) {
    const {{ p }}_status_t st = drain(s);
    if (first == {{ NAME }}_OK) first = st;
  }
  return first;
}

void wait_for_all_streams() {
  if (forked_child()) return;  // the parent's queues
  for ({{ p }}_stream_t s : streams_of(-1))
    if (s->queue.load(std::memory_order_acquire) != nullptr) queue_of(s).wait_until(s->submitted.load());
}

// At exit: work still queued is waited for, at most {{ NAME }}_EXIT_TIMEOUT_S (default 60; 0: no
// bound). An op still running then (a host function that blocks, a collective whose peer is
// gone) is named and the process ends with status 1: returning would destroy static objects
// under a worker that still runs.
void wait_at_exit() {
  if (forked_child()) return;
  const long timeout = env_long("{{ NAME }}_EXIT_TIMEOUT_S", 60);
  for ({{ p }}_stream_t s : streams_of(-1)) {
    StreamQueue* q = s->queue.load(std::memory_order_acquire);
    if (q == nullptr || !q->ours()) continue;
    const uint64_t target = s->submitted.load();
    if (timeout == 0) {
      q->wait_until(target);
    } else if (!q->wait_for(target, timeout)) {
      std::fprintf(stderr,
                   "[{{ NAME }}] at exit: %s (queued on device %d) still running after %ld s "
                   "({{ NAME }}_EXIT_TIMEOUT_S=%ld); exiting without waiting for it\n",
                   q->running(), s->device, timeout, timeout);
      std::fflush(nullptr);
      std::_Exit(1);
    }
  }
}

StreamMarks stream_marks() {
  StreamMarks marks;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& kv : r.streams) {
    const {{ p }}_stream_t s = kv.second;
    const uint64_t submitted = s->submitted.load(std::memory_order_acquire);
    if (s->completed.load(std::memory_order_acquire) < submitted) marks.push_back({s->id, submitted});
  }
  return marks;
}

bool marks_reached(const StreamMarks& marks) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& m : marks) {
    auto it = r.streams.find(m.first);
    if (it != r.streams.end() && it->second->completed.load(std::memory_order_acquire) < m.second) return false;
  }
  return true;
}

}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {


{{ p }}_status_t {{ p }}_stream_create(int device, {{ p }}_stream_t* stream) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("stream_create");
  if (!valid_device(device) || !stream) return {{ NAME }}_ERROR_INVALID_VALUE;
  default_stream(0);  // the registry's exit hook before any stream of ours
  *stream = new_line_aligned<{{ p }}_stream_st>();
  if (!*stream) return {{ NAME }}_ERROR_OUT_OF_MEMORY;
  register_stream(*stream, device);
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_stream_default(int device, {{ p }}_stream_t* stream) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("stream_default");
  if (!valid_device(device) || !stream) return {{ NAME }}_ERROR_INVALID_VALUE;
  *stream = default_stream(device);
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_stream_get_id({{ p }}_stream_t stream, uint64_t* id) {
  if (!id) return {{ NAME }}_ERROR_INVALID_VALUE;
  *id = (stream ? stream : default_stream())->id;
  return {{ NAME }}_OK;
}

// The stream is freed once nothing refers to it: events recorded on it and other streams'
// queued waits for it keep it (drained, complete) until they are done with it.
{{ p }}_status_t {{ p }}_stream_destroy({{ p }}_stream_t stream) {
  if (!stream || stream == default_stream(stream->device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (forked_child()) return {{ NAME }}_OK;
  const {{ p }}_status_t capturing = refuse_if_capturing("stream_destroy", stream);
  if (capturing != {{ NAME }}_OK) return capturing;
  const {{ p }}_status_t status = drain(stream);
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.streams.erase(stream->id);
  }
  if (StreamQueue* q = stream->queue.load()) q->stop();  // its worker exits; the queue stays
  release_stream(stream);
  return status;
}

{{ p }}_status_t {{ p }}_stream_synchronize({{ p }}_stream_t stream) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("stream_synchronize");
  core::clear_error_detail();
  const {{ p }}_status_t capturing = refuse_if_capturing("stream_synchronize", stream);
  if (capturing != {{ NAME }}_OK) return capturing;
  return drain(stream ? stream : default_stream());
}

{{ p }}_status_t {{ p }}_stream_query({{ p }}_stream_t stream) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("stream_query");
  if (!stream) stream = default_stream();
  const {{ p }}_status_t capturing = refuse_if_capturing("stream_query", stream);
  if (capturing != {{ NAME }}_OK) return capturing;
  return stream->completed.load(std::memory_order_acquire) >= stream->submitted.load(std::memory_order_acquire)
             ? {{ NAME }}_OK
             : {{ NAME }}_ERROR_NOT_READY;
}

{{ p }}_status_t {{ p }}_stream_wait_event({{ p }}_stream_t stream, {{ p }}_event_t event) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("stream_wait_event");
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (!stream) stream = default_stream();
  const Recorded recorded(event);
  {{ p }}_stream_t source = recorded.stream;
  const uint64_t target = recorded.target;
  if (source == stream) return {{ NAME }}_OK;  // recorded on this very queue (in a capture of it too)
  // A graph records no wait across streams: an event of a capture is waited for on its own
  // stream only, and a capture waits for nothing outside it.
  if (source != nullptr && capture_underway()) {
    if (stream_captures(source)) return refuse_if_capturing("stream_wait_event (on another stream's capture)", source);
    if (source->completed.load(std::memory_order_acquire) < target) {
      const {{ p }}_status_t capturing = refuse_if_capturing("stream_wait_event (on work outside the capture)", stream);
      if (capturing != {{ NAME }}_OK) return capturing;
    }
  }
  // Nothing to wait for: never recorded, or already reached.
  if (source == nullptr || source->completed.load(std::memory_order_acquire) >= target) return {{ NAME }}_OK;
  // Later items of `stream` must not start before `source` reaches `target`: the queue
  // itself waits (the host does not), holding `source` (it may be destroyed meanwhile).
  auto wait = [source = StreamRef(source), target]() -> {{ p }}_status_t {
    queue_of(source.get()).wait_until(target);
    return {{ NAME }}_OK;
  };
  if (execution().synchronous && !capture_underway()) return wait();
  return guard_call("stream_wait_event", [&] { return enqueue(stream, "stream_wait_event", wait); });
}

{{ p }}_status_t {{ p }}_launch_host_func({{ p }}_stream_t stream, {{ p }}_host_fn_t fn, void* user_data) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("launch_host_func");
  if (!fn) return {{ NAME }}_ERROR_INVALID_VALUE;
  return submit(stream, "host_func", [fn, user_data]() -> {{ p }}_status_t {
    fn(user_data);
    return {{ NAME }}_OK;
  });
}

{{ p }}_status_t {{ p }}_event_create(int device, {{ p }}_event_t* event) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("event_create");
  if (!valid_device(device) || !event) return {{ NAME }}_ERROR_INVALID_VALUE;
  *event = new (std::nothrow) {{ p }}_event_st();
  if (!*event) return {{ NAME }}_ERROR_OUT_OF_MEMORY;
  (*event)->device = device;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_event_destroy({{ p }}_event_t event) {
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (forked_child()) return {{ NAME }}_OK;
  if (event->stream) release_stream(event->stream);
  delete event;  // a queue waiting on it holds the position and the stream, not the event
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_event_record({{ p }}_event_t event, {{ p }}_stream_t stream) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("event_record");
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (!stream) stream = default_stream();
  if (stream->device != event->device) return {{ NAME }}_ERROR_INVALID_VALUE;  // an event of another card
  retain_stream(stream);
  {{ p }}_stream_t replaced = stream;
  auto done = std::make_shared<std::atomic<uint64_t>>(0);
  uint64_t target = 0;
  {
    std::lock_guard<std::mutex> lock(event->mu);
    std::swap(event->stream, replaced);
    event->target = target = stream->submitted.load(std::memory_order_acquire);
    event->done_ns = done;
    std::lock_guard<std::mutex> timed(stream->timed_mu);  // (the worker completes positions under it)
    if (stream->completed.load(std::memory_order_acquire) >= event->target) {
      done->store(tracer::now_ns(), std::memory_order_release);  // nothing ahead of it: complete now
    } else {
      stream->timed_events.emplace_back(event->target, done);
      stream->timed.store(static_cast<int>(stream->timed_events.size()), std::memory_order_release);
    }
  }
  // (the worker may have passed its check of `timed` before the event joined the list)
  const uint64_t completed = stream->completed.load(std::memory_order_acquire);
  if (completed >= target) settle_timed_events(stream, completed);
  if (replaced) release_stream(replaced);
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_event_elapsed_time({{ p }}_event_t start, {{ p }}_event_t end, float* ms) {
  if (!start || !end || !ms) return {{ NAME }}_ERROR_INVALID_VALUE;
  uint64_t at[2] = {0, 0};
  const {{ p }}_event_t events[2] = {start, end};
  for (int i = 0; i < 2; ++i) {
    std::lock_guard<std::mutex> lock(events[i]->mu);
    if (!events[i]->done_ns) {
      core::set_error_detail(std::string("event_elapsed_time: the ") + (i ? "end" : "start") + " event was never recorded");
      return {{ NAME }}_ERROR_INVALID_VALUE;
    }
    at[i] = events[i]->done_ns->load(std::memory_order_acquire);
    if (at[i] == 0) return {{ NAME }}_ERROR_NOT_READY;
  }
  *ms = static_cast<float>((static_cast<double>(at[1]) - static_cast<double>(at[0])) / 1e6);
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_event_query({{ p }}_event_t event) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("event_query");
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  const Recorded recorded(event);
  if (!recorded.stream) return {{ NAME }}_OK;  // never recorded: complete, as in CUDA
  const {{ p }}_status_t capturing = refuse_if_capturing("event_query", recorded.stream);
  if (capturing != {{ NAME }}_OK) return capturing;
  return recorded.stream->completed.load(std::memory_order_acquire) >= recorded.target ? {{ NAME }}_OK
                                                                                       : {{ NAME }}_ERROR_NOT_READY;
}

{{ p }}_status_t {{ p }}_event_synchronize({{ p }}_event_t event) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("event_synchronize");
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  core::clear_error_detail();
  const Recorded recorded(event);
  if (!recorded.stream) return {{ NAME }}_OK;
  const {{ p }}_status_t capturing = refuse_if_capturing("event_synchronize", recorded.stream);
  if (capturing != {{ NAME }}_OK) return capturing;
  return settle(recorded.stream, recorded.target, false);
}

}  // extern "C"
