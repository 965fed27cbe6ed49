// Internal helpers shared by the {{ NAME }} device library sources: stream
// submission, dtype dispatch, shapes and broadcasting, the GEMM the matmul and
// convolution ops share, and the device's random number generator. Not part of
// the C API ({{ p }}_device.h); every device/src/*_ops.cc includes this one header.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <pthread.h>

#include "core.h"
#include "half_types.h"
#include "{{ p }}_device.h"

namespace {{ p }} {

// ---- devices (device.cc) ------------------------------------------------------

constexpr int kMaxDevices = 16;

// {{ NAME }}_DEVICE_COUNT, read once; the calling thread's current device.
int device_count_setting();
int current_device();
bool valid_device(int device);

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

// ---- fork (streams.cc) ----------------------------------------------------------

// A child forked after the device was initialised (memory mapped, or a queue started) shares
// the parent's device memory (MAP_SHARED) with a copy of its allocator, and has none of its
// queue workers: every call that would touch the device there is refused in one line.
// device_count, get/set_device, status strings and the error detail still answer; free,
// stream_destroy, event_destroy and finalize succeed without touching anything (a child's
// copies of the parent's tensors are released at its exit).
void mark_initialised();
bool forked_child();
{{ p }}_status_t refuse_in_forked_child(const char* call);  // UNSUPPORTED, naming `call` in the detail
#define {{ NAME }}_NOT_IN_FORKED_CHILD(call) \
  if (::{{ p }}::forked_child()) return ::{{ p }}::refuse_in_forked_child(call)

// ---- signals (memory.cc) -------------------------------------------------------

// Gives the calling thread an alternate signal stack if it has none, so the fault handler
// (and whatever handler it passes a signal on to, e.g. Python's faulthandler) still runs
// after a stack overflow. Called by the threads the library starts and the one installing it.
void ensure_signal_stack();

// ---- streams (streams.cc) -----------------------------------------------------

struct ExecutionSettings {
  bool synchronous = false;  // {{ NAME }}_SYNC=1 (or value dumps): work runs at submission
  long delay_us = 0;         // {{ NAME }}_STREAM_DELAY_US: each queued item waits this long first
};
const ExecutionSettings& execution();

// The stream a NULL handle means: the current device's default stream.
{{ p }}_stream_t default_stream();
{{ p }}_stream_t default_stream(int device);
int stream_device({{ p }}_stream_t stream);  // NULL: the current device

// The op most recently submitted by any thread, and the op the calling thread runs (a
// stream worker's item, inline work; NULL: none): the fault handler names them.
const char* last_op();
const char* running_op();

// Why the work running on this thread fails, in words (a collective's peer that exited, say),
// set just before it returns an error status: {{ p }}_error_detail() gives it after the op.
void set_failure_reason(std::string reason);
// The reason set so far on this thread (emptied): a graph's launch prefixes it with the node.
std::string take_failure_reason();

// Fails a call that is not queued work (a communicator's init, say) with `status`, and
// "<call> failed: <status>: <reason>" as the calling thread's error detail.
{{ p }}_status_t fail_call(const char* call, {{ p }}_status_t status, const std::string& reason);

// In a catch block: the status of the exception being handled, its words in `why`.
{{ p }}_status_t exception_status(std::string* why) noexcept;
// In a catch block: fails the C API call `call` with that status, its words the error detail.
{{ p }}_status_t call_threw(const char* call) noexcept;

// Runs a C API call's `body` so that no exception leaves the library: one it throws (a thread
// the system will not start, memory it will not give) is the call's error status.
template <typename Body>
{{ p }}_status_t guard_call(const char* call, Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return call_threw(call);
  }
}

// ---- graph capture (graph.cc) ----------------------------------------------------

// How many streams capture now. While none does (the usual case) each capture check of the
// queue costs one relaxed load.
extern std::atomic<int> g_captures;
inline bool capture_underway() { return g_captures.load(std::memory_order_relaxed) != 0; }
// Whether `stream` (NULL: the default stream) captures now.
bool stream_captures({{ p }}_stream_t stream);
// Work queued onto a capturing `stream`: recorded as the next node of its graph (with the host
// arguments kept for it and the allocations noted for it), true; false when `stream` does not
// capture (the notes are dropped: they were another op's).
bool capture_item({{ p }}_stream_t stream, const char* op, std::function<{{ p }}_status_t()>* work);
// While a capture is underway: the allocation holding device pointer `ptr` is one the op the
// calling thread queues next uses (its graph node refuses to replay once it is freed).
void note_device_pointer(const void* ptr, int device);
// OK, or UNSUPPORTED with "<call> ... is capturing a graph" as the detail: `stream` captures
// (refuse_if_capturing), a stream of `device` does (refuse_if_device_captures).
{{ p }}_status_t refuse_if_capturing(const char* call, {{ p }}_stream_t stream);
{{ p }}_status_t refuse_if_device_captures(const char* call, int device);
// OK, or UNSUPPORTED naming the node of a capture underway that uses the allocation at `ptr`.
{{ p }}_status_t refuse_free_of_captured(const void* ptr, int device);

// Queues `work` on `stream` (NULL: the default stream); it runs later, on the stream's
// worker, and a status other than OK it returns surfaces at the next synchronising call.
// Under {{ NAME }}_SYNC=1 it runs inline. Onto a capturing stream: recorded, not run.
// `nested`: correlation ids the item reserves after its own for the records of its parts (a
// graph launch's nodes).
{{ p }}_status_t enqueue({{ p }}_stream_t stream, const char* op, std::function<{{ p }}_status_t()> work,
                      uint64_t nested = 0);
{{ p }}_status_t run_inline({{ p }}_stream_t stream, const char* op, {{ p }}_status_t (*fn)(void*), void* work,
                         uint64_t nested = 0);

// Runs `work` (returning a status) on `stream`: queued, or inline under {{ NAME }}_SYNC=1,
// where its status is returned at once; recorded into a graph where `stream` captures.
// Everything `work` reads must be captured by value (or kept, below): the caller's stack is
// gone when it runs.
template <typename F>
{{ p }}_status_t submit({{ p }}_stream_t stream, const char* op, F&& work) {
  using Work = std::remove_reference_t<F>;
  if (execution().synchronous && !capture_underway())
    return run_inline(stream, op, [](void* w) { return (*static_cast<Work*>(w))(); }, &work);
  return guard_call(op, [&] { return enqueue(stream, op, std::function<{{ p }}_status_t()>(std::forward<F>(work))); });
}

// Host memory an op reads after it returns (shapes, parameter structs, stride and
// permutation arrays) is copied into storage the next queued item owns, and the argument
// re-pointed at the copy. (Device pointers are never kept: they are not host memory.)
// One block per op, filled in place: a few kept arguments cost one allocation.
class KeptArguments {
 public:
  // A copy of `bytes` at `src`, alive until the item that takes this storage has run.
  const void* store(const void* src, size_t bytes, size_t align);

 private:
  static constexpr size_t kBlock = 1024;
  std::unique_ptr<char[]> block_;
  size_t used_ = 0;
  std::vector<std::unique_ptr<char[]>> overflow_;  // an argument that does not fit the block
};
KeptArguments& kept_arguments();  // this thread's, taken by its next queued item

// (Under {{ NAME }}_SYNC=1 too while a capture is underway: a graph's node runs long after.)
template <typename T>
void keep_n(const T*& arg, size_t n) {
  static_assert(std::is_trivially_copyable<T>::value, "kept arguments are copied as bytes");
  if (arg == nullptr || (execution().synchronous && !capture_underway())) return;
  arg = static_cast<const T*>(kept_arguments().store(arg, sizeof(T) * (n ? n : 1), alignof(T)));
}
template <typename... T>
void keep(const T*&... args) {
  (keep_n(args, 1), ...);
}

// Waits for every stream of `device`; the first error queued work raised.
{{ p }}_status_t synchronize_device_streams(int device);

// Waits for every stream of every device, leaving errors for the next synchronising call.
void wait_for_all_streams();

// The exit wait: queued work waited for, at most {{ NAME }}_EXIT_TIMEOUT_S (then the process ends).
void wait_at_exit();

// Positions (stream id, items submitted) the streams have yet to reach: memory freed now is
// released once they are reached, since queued work may still use it (work of any device:
// a peer copy on another device's queue reads it too).
using StreamMarks = std::vector<std::pair<uint64_t, uint64_t>>;
StreamMarks stream_marks();
bool marks_reached(const StreamMarks& marks);

// ---- device memory (memory.cc) --------------------------------------------------

// A live allocation as a graph node saw it at capture; `serial` tells it from a later
// allocation at the same address.
struct AllocationUse {
  int device = 0;
  uintptr_t base = 0;
  size_t size = 0;
  uint64_t serial = 0;
};
// The live allocation of `device` holding `ptr`; false when none does.
bool allocation_holding(const void* ptr, int device, AllocationUse* use);
// Whether that allocation is still live (not freed since, nor its address given out again).
bool allocation_live(const AllocationUse& use);

// The library's view of device pointer `ptr` of `device` (-1: any device): device memory is
// opaque at the addresses handed out. NULL when `ptr` is not device memory.
void* host_view_of(const void* ptr, int device);

// Re-points each device-pointer argument of an op at the library's view of it; false when
// one is not memory of the stream's device. NULL arguments stay NULL (optional operands).
template <typename... T>
bool device_views({{ p }}_stream_t stream, T*&... ptrs) {
  const int device = stream_device(stream);
  bool ok = true;
  auto view = [&](auto*& ptr) {
    if (ptr == nullptr) return;
    void* v = host_view_of(ptr, device);
    if (v == nullptr) return void(ok = false);
    if (capture_underway()) note_device_pointer(ptr, device);
    ptr = static_cast<std::remove_reference_t<decltype(ptr)>>(v);
  };
  (view(ptrs), ...);
  return ok;
}

// ---- dtype dispatch ---------------------------------------------------------

template <typename T>
struct Tag {
  using type = T;
};

// The 16-bit floating-point types are stored as such and computed in float (compute_t<T>):
// an op reads its operands into float, and rounds once when it stores a result.
using core::bfloat16;
using core::compute_t;
using core::float16;
using core::is_real;

// Calls f(Tag<T>{}) for the C++ type of `dtype`; false when unsupported.
template <typename F>
bool dispatch({{ p }}_dtype_t dtype, F&& f) {
  switch (dtype) {
    case {{ NAME }}_BOOL: f(Tag<bool>{}); return true;
    case {{ NAME }}_UINT8: f(Tag<uint8_t>{}); return true;
    case {{ NAME }}_INT8: f(Tag<int8_t>{}); return true;
    case {{ NAME }}_INT16: f(Tag<int16_t>{}); return true;
    case {{ NAME }}_INT32: f(Tag<int32_t>{}); return true;
    case {{ NAME }}_INT64: f(Tag<int64_t>{}); return true;
    case {{ NAME }}_FLOAT32: f(Tag<float>{}); return true;
    case {{ NAME }}_FLOAT64: f(Tag<double>{}); return true;
    case {{ NAME }}_FLOAT16: f(Tag<float16>{}); return true;
    case {{ NAME }}_BFLOAT16: f(Tag<bfloat16>{}); return true;
  }
  return false;
}

// The same for the floating-point types only (ops defined on reals; the 16-bit ones included).
template <typename F>
bool dispatch_float({{ p }}_dtype_t dtype, F&& f) {
  switch (dtype) {
    case {{ NAME }}_FLOAT32: f(Tag<float>{}); return true;
    case {{ NAME }}_FLOAT64: f(Tag<double>{}); return true;
    case {{ NAME }}_FLOAT16: f(Tag<float16>{}); return true;
    case {{ NAME }}_BFLOAT16: f(Tag<bfloat16>{}); return true;
    default: return false;
  }
}

// Whether dispatch_float takes `dtype`.
inline bool real_dtype({{ p }}_dtype_t dtype) {
  return dispatch_float(dtype, [](auto) {});
}

// Whether an op with a float32 body takes `dtype`: FLOAT32, or a 16-bit type it computes in float32.
inline bool float_body_dtype({{ p }}_dtype_t dtype) {
  return dtype == {{ NAME }}_FLOAT32 || dtype == {{ NAME }}_FLOAT16 || dtype == {{ NAME }}_BFLOAT16;
}

// The operands of an op whose body is written for float32, on arrays of `dtype` (see
// float_body_dtype): FLOAT32 arrays are used in place; a 16-bit input is read into a float32
// copy, and a 16-bit output is computed in a float32 buffer that finish() rounds into it once.
// For use inside {{ NAME }}_SUBMIT, where the arrays are the library's views.
class FloatOperands {
 public:
  explicit FloatOperands({{ p }}_dtype_t dtype) : dtype_(dtype) {}
  // `n` elements of the input at `p` (NULL stays NULL: an optional operand).
  const float* in(const void* p, int64_t n);
  // A float32 buffer for `n` elements of the output at `p`; `read` when the op reads its
  // output too (an accumulation: C of a GEMM with beta != 0).
  float* out(void* p, int64_t n, bool read = false);
  void finish();

 private:
  float* buffer(int64_t n);
  {{ p }}_dtype_t dtype_;
  std::vector<std::unique_ptr<float[]>> buffers_;
  std::vector<std::pair<float*, std::pair<void*, int64_t>>> outputs_;  // buffer -> (array, n)
};

template <typename T>
const T* as(const void* p) {
  return static_cast<const T*>(p);
}
template <typename T>
T* as(void* p) {
  return static_cast<T*>(p);
}

// ---- shapes and broadcasting ------------------------------------------------

inline int64_t numel_of(const {{ p }}_shape_t& s) {
  int64_t n = 1;
  for (int i = 0; i < s.ndim; ++i) n *= s.dims[i];
  return n;
}

inline bool same_shape(const {{ p }}_shape_t& a, const {{ p }}_shape_t& b) {
  if (a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; ++i)
    if (a.dims[i] != b.dims[i]) return false;
  return true;
}

// Strides of `src` viewed in the index space of `dst` (trailing-aligned):
// 0 where src broadcasts. Empty when src cannot broadcast to dst.
inline bool broadcast_strides(const {{ p }}_shape_t& src, const {{ p }}_shape_t& dst,
                              std::vector<int64_t>* strides) {
  if (src.ndim > dst.ndim) return false;
  strides->assign(dst.ndim, 0);
  int64_t stride = 1;
  for (int i = src.ndim - 1, j = dst.ndim - 1; i >= 0; --i, --j) {
    if (src.dims[i] == dst.dims[j]) {
      (*strides)[j] = src.dims[i] == 1 ? 0 : stride;
    } else if (src.dims[i] != 1) {
      return false;
    }
    stride *= src.dims[i];
  }
  return true;
}

// Visits every index of `shape` in row-major order, calling
// f(linear_index, offset_a, offset_b) with offsets advanced by the given strides.
template <typename F>
void for_each_index(const {{ p }}_shape_t& shape, const std::vector<int64_t>& sa,
                    const std::vector<int64_t>& sb, F&& f) {
  const int nd = shape.ndim;
  const int64_t total = numel_of(shape);
  if (total == 0) return;
  if (nd == 0) {
    f(0, 0, 0);
    return;
  }
  std::vector<int64_t> idx(nd, 0);
  int64_t oa = 0, ob = 0;
  const int64_t inner = shape.dims[nd - 1];
  const int64_t ia = sa[nd - 1], ib = sb[nd - 1];
  for (int64_t linear = 0; linear < total; linear += inner) {
    for (int64_t k = 0; k < inner; ++k) f(linear + k, oa + k * ia, ob + k * ib);
    // advance the outer dimensions (odometer)
    for (int d = nd - 2; d >= 0; --d) {
      ++idx[d];
      oa += sa[d];
      ob += sb[d];
      if (idx[d] < shape.dims[d]) break;
      oa -= sa[d] * shape.dims[d];
      ob -= sb[d] * shape.dims[d];
      idx[d] = 0;
    }
  }
}

// ---- scratch memory ------------------------------------------------------------

// Work buffers an op needs while it runs (im2col columns, packed GEMM panels), kept per
// thread and slot and reused: allocating megabytes per call costs page faults and zeroing
// every time. Contents are undefined; the pointer is valid until the same slot is asked again.
enum class Scratch { kConvColumns, kConvRows, kGemmPanel, kInt8Input, kInt8Weight, kInt8Sums, kCount };
float* scratch(Scratch slot, size_t floats);

// ---- threads (device.cc) ----------------------------------------------------

// Worker threads of the host-backed device: {{ NAME }}_NUM_THREADS, else the CPU count.
int64_t worker_threads();

// How many threads n items of cost_per_item (about flops) are worth: 1 when the work is too
// small to pay for starting a thread.
int64_t threads_for(int64_t n, int64_t cost_per_item);

// Runs f(begin, end) over [0, n) in `threads` contiguous chunks, one per thread.
void run_chunks(int64_t n, int64_t threads, const std::function<void(int64_t, int64_t)>& f);

// Runs f(begin, end) over [0, n), split across worker threads when the work pays for it;
// small work runs inline, without wrapping f in a std::function (tiny ops stay cheap).
template <typename F>
void parallel_for(int64_t n, int64_t cost_per_item, F&& f) {
  const int64_t threads = threads_for(n, cost_per_item);
  if (threads > 1) {
    run_chunks(n, threads, f);
  } else if (n > 0) {
    f(int64_t{0}, n);
  }
}

// Whether a convolution's parameters are consistent (conv_pool_ops.cc, int8_ops.cc).
inline bool valid_conv(const {{ p }}_conv2d_params_t* p) {
  return p && p->groups > 0 && p->in_channels % p->groups == 0 && p->out_channels % p->groups == 0 &&
         p->stride_h > 0 && p->stride_w > 0 && p->dilation_h > 0 && p->dilation_w > 0;
}

// An int8 convolution's int32 sums computed exactly by the float32 convolution (conv_pool_ops.cc):
// false, computing nothing, where its sums cannot be split into float32-exact ones (see there).
bool conv2d_int8_through_float(const {{ p }}_conv2d_params_t& p, const int8_t* x, const int8_t* w, int32_t* y);

// ---- GEMM (matmul_ops.cc; convolutions use it too) ---------------------------

// Row-major C[m,n] = alpha*op(A)[m,k]*op(B)[k,n] + beta*C, where op(X) = X^T when
// its flag is set (transposes cost nothing extra: they are folded into packing).
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// ---- random numbers ----------------------------------------------------------

// splitmix64: a counter-based generator, identical on every architecture.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace {{ p }}

// ---- op bodies ----------------------------------------------------------------

// Submits the statements to `stream` as the op traced by trace_, and returns. They run
// later on the stream's worker: they capture by value (host arguments behind pointers are
// kept first, see keep) and may set status_, which surfaces at the next synchronisation.
#define {{ NAME }}_SUBMIT(stream, ...)                                   \
  do {                                                                \
    return {{ p }}::submit(stream, trace_.op(), [=]() -> {{ p }}_status_t { \
      {{ p }}_status_t status_ = {{ NAME }}_OK;                          \
      [&] { __VA_ARGS__; }();                                         \
      return status_;                                                 \
    });                                                               \
  } while (0)

// An op's device pointers, re-pointed at the library's views (device_views); an argument
// that is not memory of the stream's device is INVALID_VALUE.
#define {{ NAME }}_DEVICE_POINTERS(stream, ...) \
  if (!{{ p }}::device_views(stream, __VA_ARGS__)) return {{ NAME }}_ERROR_INVALID_VALUE

// Runs the statements with T the floating-point type of `dtype`; sets status_
// to UNSUPPORTED for other dtypes. For use inside {{ NAME }}_SUBMIT.
#define {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, ...)                \
  if (!{{ p }}::dispatch_float(dtype, [&](auto tag_) {            \
        using T = typename decltype(tag_)::type;                \
        __VA_ARGS__;                                            \
      }))                                                       \
  status_ = {{ NAME }}_ERROR_UNSUPPORTED
