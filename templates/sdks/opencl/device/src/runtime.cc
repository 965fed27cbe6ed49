// {{ NAME }} device library on OpenCL: devices, memory, copies, streams and events
// (the device side of paddle/runtime/ and of the PyTorch adapter's runtime). See opencl_device.h
// for how the C API maps onto OpenCL.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "opencl_device.h"

struct {{ p }}_stream_st {
  int device;
  cl_command_queue queue;
  bool is_default;
  std::mutex query_mu;
  cl_event pending = nullptr;  // a query's marker not yet reached: the work before it still runs
};

struct {{ p }}_event_st {
  int device;
  cl_event marker;  // NULL until recorded: an event never recorded is complete
  std::mutex mu;    // guards `marker`: a record swaps it while other threads wait on the event
};

namespace {{ p }} {
namespace {

constexpr size_t kAlignment = 64;  // accounting granularity, as the host-backed device's

struct Device {
  DeviceInfo info;
  size_t capacity = 0;  // global memory, or {{ NAME }}_MEMORY_MB when smaller
  size_t allocated = 0, peak = 0;
  {{ p }}_stream_st* default_stream = nullptr;
  std::vector<{{ p }}_stream_st*> streams;  // every live stream, the default one first
};

struct Allocation {
  uintptr_t base;  // the address handed out
  int device;
  cl_mem buffer;
  size_t size;      // rounded to kAlignment: what the accounting counts
  size_t reserved;  // the address range reserved for it (whole pages)
};

std::mutex g_mu;  // devices' stream lists and accounting, the allocation table
std::map<uintptr_t, Allocation> g_allocations;  // by start address
thread_local int g_current = 0;

std::string platform_name(cl_platform_id platform) {
  char name[256] = {0};
  clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof(name) - 1, name, nullptr);
  return name;
}

size_t memory_limit_mb() {
  const char* env = std::getenv("{{ NAME }}_MEMORY_MB");
  return env && *env ? static_cast<size_t>(std::strtoull(env, nullptr, 10)) : 0;
}

std::vector<Device>* discover() {
  auto* devices = new std::vector<Device>();
  cl_uint num_platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &num_platforms) != CL_SUCCESS || num_platforms == 0) {
    std::fprintf(stderr,
                 "[{{ NAME }}] no OpenCL platform: the ICD loader found no driver "
                 "(install one, e.g. pocl-opencl-icd, or check /etc/OpenCL/vendors)\n");
    return devices;
  }
  std::vector<cl_platform_id> platforms(num_platforms);
  clGetPlatformIDs(num_platforms, platforms.data(), nullptr);
  const char* only = std::getenv("{{ NAME }}_OPENCL_PLATFORM");
  const size_t limit_mb = memory_limit_mb();
  for (cl_platform_id platform : platforms) {
    if (only && *only && platform_name(platform).find(only) == std::string::npos) continue;
    cl_uint n = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0) continue;
    std::vector<cl_device_id> ids(n);
    clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr);
    const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(platform), 0};
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(props, n, ids.data(), nullptr, nullptr, &err);
    if (err != CL_SUCCESS) {
      std::fprintf(stderr, "[{{ NAME }}] OpenCL platform '%s': no context (error %d); skipping it\n",
                   platform_name(platform).c_str(), err);
      continue;
    }
    for (cl_device_id id : ids) {
      Device d;
      cl_device_fp_config fp64 = 0;
      clGetDeviceInfo(id, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof(fp64), &fp64, nullptr);
      size_t size = 0;
      clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, 0, nullptr, &size);
      std::string extensions(size, '\0');
      clGetDeviceInfo(id, CL_DEVICE_EXTENSIONS, size, &extensions[0], nullptr);
      d.info = DeviceInfo{context, id, fp64 != 0, extensions.find("cl_khr_fp16") != std::string::npos};
      cl_ulong global = 0;
      clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(global), &global, nullptr);
      d.capacity = static_cast<size_t>(global);
      if (limit_mb > 0) d.capacity = std::min(d.capacity, limit_mb << 20);
      devices->push_back(d);
    }
  }
  if (devices->empty())
    std::fprintf(stderr, "[{{ NAME }}] no OpenCL device%s%s%s\n", only && *only ? " on a platform named like '" : "",
                 only && *only ? only : "", only && *only ? "' ({{ NAME }}_OPENCL_PLATFORM)" : "");
  return devices;
}

// (A function-local static, not std::call_once: GCC 12's call_once would need pthread_once
// of glibc 2.34 and raise the wheel's manylinux tag.)
std::vector<Device>& devices() {
  static std::vector<Device>* const found = discover();
  return *found;
}

const char* cl_error_name(cl_int err) {
  switch (err) {
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST: return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    default: return "an OpenCL error";
  }
}

{{ p }}_stream_st* new_stream(int device, bool is_default) {
  const DeviceInfo& info = device_info(device);
  cl_int err = CL_SUCCESS;
  cl_command_queue queue = clCreateCommandQueue(info.context, info.id, 0, &err);  // in order
  if (err != CL_SUCCESS) return nullptr;
  return new {{ p }}_stream_st{device, queue, is_default};
}

// The default stream of `device`, created on first use (under g_mu).
{{ p }}_stream_st* default_stream_locked(int device) {
  Device& d = devices()[device];
  if (d.default_stream == nullptr) {
    d.default_stream = new_stream(device, true);
    if (d.default_stream) d.streams.insert(d.streams.begin(), d.default_stream);
  }
  return d.default_stream;
}

{{ p }}_stream_st* stream_or_default({{ p }}_stream_t stream) {
  if (stream) return stream;
  std::lock_guard<std::mutex> lock(g_mu);
  return default_stream_locked(g_current);
}

// The live allocation holding `ptr` (under g_mu); NULL for any other address.
const Allocation* find_allocation(const void* ptr) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  auto it = g_allocations.upper_bound(p);
  if (it == g_allocations.begin()) return nullptr;
  --it;
  return p < it->first + it->second.size ? &it->second : nullptr;
}

{{ p }}_status_t finish_streams(int device) {
  std::vector<cl_command_queue> queues;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto* s : devices()[device].streams) queues.push_back(s->queue);
  }
  for (cl_command_queue q : queues) {
    const cl_int err = clFinish(q);
    if (err != CL_SUCCESS) return from_cl(err, "device_synchronize");
  }
  return {{ NAME }}_OK;
}

}  // namespace

int device_count() { return static_cast<int>(devices().size()); }
bool valid_device(int device) { return device >= 0 && device < device_count(); }
const DeviceInfo& device_info(int device) { return devices()[device].info; }
int current_device() { return g_current; }

cl_command_queue queue_of({{ p }}_stream_t stream) {
  {{ p }}_stream_st* s = stream_or_default(stream);
  return s ? s->queue : nullptr;
}

int stream_device({{ p }}_stream_t stream) { return stream ? stream->device : g_current; }

bool resolve(const void* ptr, int device, BufferRef* ref) {
  std::lock_guard<std::mutex> lock(g_mu);
  const Allocation* a = find_allocation(ptr);
  if (a == nullptr || a->device != device) return false;
  ref->buffer = a->buffer;
  ref->offset = reinterpret_cast<uintptr_t>(ptr) - a->base;
  ref->available = a->size - ref->offset;
  return true;
}

{{ p }}_status_t from_cl(cl_int err, const char* op) {
  if (err == CL_SUCCESS) return {{ NAME }}_OK;
  core::set_error_detail(std::string(op) + " failed: " + cl_error_name(err) + " (" + std::to_string(err) + ")");
  if (err == CL_OUT_OF_RESOURCES || err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_HOST_MEMORY)
    return {{ NAME }}_ERROR_OUT_OF_MEMORY;
  return {{ NAME }}_ERROR_INVALID_VALUE;
}

}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

// ---- devices ----------------------------------------------------------------

{{ p }}_status_t {{ p }}_init(void) {
  devices();
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_finalize(void) {
  for (int d = 0; d < device_count(); ++d) finish_streams(d);
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_device_count(int* count) {
  if (!count) return {{ NAME }}_ERROR_INVALID_VALUE;
  *count = device_count();
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_set_device(int device) {
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  g_current = device;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_get_device(int* device) {
  if (!device) return {{ NAME }}_ERROR_INVALID_VALUE;
  *device = g_current;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_device_synchronize(int device) {
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  return finish_streams(device);
}

// ---- memory -------------------------------------------------------------------

{{ p }}_status_t {{ p }}_malloc(int device, void** ptr, size_t size) {
  if (!valid_device(device) || !ptr) return {{ NAME }}_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    const size_t capacity = devices()[device].capacity;
    if (size > capacity) {  // (before rounding up, which would wrap a size near SIZE_MAX to a small one)
      core::set_error_detail("malloc failed: " + std::to_string(size) + " bytes asked of device " +
                             std::to_string(device) + ", which has " + std::to_string(capacity));
      return {{ NAME }}_ERROR_OUT_OF_MEMORY;
    }
  }
  const size_t rounded = std::max(kAlignment, (size + kAlignment - 1) / kAlignment * kAlignment);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t reserved = (rounded + page - 1) / page * page;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    Device& d = devices()[device];
    if (d.allocated + rounded > d.capacity) return {{ NAME }}_ERROR_OUT_OF_MEMORY;
    d.allocated += rounded;  // taken now, given back below if the buffer fails
  }
  cl_int err = CL_SUCCESS;
  cl_mem buffer = clCreateBuffer(device_info(device).context, CL_MEM_READ_WRITE, rounded, nullptr, &err);
  // An address of its own that faults on host access: device memory is opaque.
  void* address = buffer ? mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                         : MAP_FAILED;
  std::lock_guard<std::mutex> lock(g_mu);
  Device& d = devices()[device];
  if (err != CL_SUCCESS || address == MAP_FAILED) {
    d.allocated -= rounded;
    if (buffer) clReleaseMemObject(buffer);
    return {{ NAME }}_ERROR_OUT_OF_MEMORY;
  }
  d.peak = std::max(d.peak, d.allocated);
  g_allocations[reinterpret_cast<uintptr_t>(address)] = Allocation{reinterpret_cast<uintptr_t>(address), device, buffer, rounded, reserved};
  *ptr = address;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_free(int device, void* ptr) {
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (ptr == nullptr) return {{ NAME }}_OK;
  Allocation a;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_allocations.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == g_allocations.end() || it->second.device != device) return {{ NAME }}_ERROR_INVALID_VALUE;
    a = it->second;
    g_allocations.erase(it);
    devices()[device].allocated -= a.size;
  }
  // OpenCL keeps the buffer until the queued commands that use it have run; the address
  // may be handed out again at once (with another buffer).
  clReleaseMemObject(a.buffer);
  munmap(ptr, a.reserved);
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_mem_info(int device, size_t* total, size_t* free_bytes) {
  if (!valid_device(device) || !total || !free_bytes) return {{ NAME }}_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mu);
  const Device& d = devices()[device];
  *total = d.capacity;
  *free_bytes = d.capacity - d.allocated;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_memory_stats(int device, size_t* allocated, size_t* peak) {
  if (!valid_device(device) || !allocated || !peak) return {{ NAME }}_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mu);
  *allocated = devices()[device].allocated;
  *peak = devices()[device].peak;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_memory_reset_peak(int device) {
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mu);
  devices()[device].peak = devices()[device].allocated;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_pointer_device(const void* ptr, int* device) {
  if (!device) return {{ NAME }}_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mu);
  const Allocation* a = find_allocation(ptr);
  if (a == nullptr) return {{ NAME }}_ERROR_INVALID_VALUE;
  *device = a->device;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_memset(int device, void* ptr, int value, size_t size) {
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (size == 0) return {{ NAME }}_OK;
  BufferRef ref;
  if (!resolve(ptr, device, &ref) || size > ref.available) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_status_t st = finish_streams(device);  // after the work submitted before it
  if (st != {{ NAME }}_OK) return st;
  std::lock_guard<std::mutex> lock(g_mu);
  cl_command_queue q = default_stream_locked(device)->queue;
  const cl_uchar pattern = static_cast<cl_uchar>(value);
  cl_int err = clEnqueueFillBuffer(q, ref.buffer, &pattern, 1, ref.offset, size, 0, nullptr, nullptr);
  if (err == CL_SUCCESS) err = clFinish(q);
  return from_cl(err, "memset");
}

namespace {

// One copy on `q`; `blocking` waits for it. Device pointers must lie in `device`'s memory.
{{ p }}_status_t enqueue_copy(cl_command_queue q, int device, void* dst, const void* src, size_t size,
                             {{ p }}_copy_kind_t kind, bool blocking) {
  if (size == 0) return {{ NAME }}_OK;
  BufferRef s, d;
  cl_int err = CL_SUCCESS;
  switch (kind) {
    case {{ NAME }}_COPY_HOST_TO_DEVICE:
      if (!src || !resolve(dst, device, &d) || size > d.available) return {{ NAME }}_ERROR_INVALID_VALUE;
      // Always blocking: the host source may be reused once the call returns (pageable memory).
      err = clEnqueueWriteBuffer(q, d.buffer, CL_TRUE, d.offset, size, src, 0, nullptr, nullptr);
      break;
    case {{ NAME }}_COPY_DEVICE_TO_HOST:
      if (!dst || !resolve(src, device, &s) || size > s.available) return {{ NAME }}_ERROR_INVALID_VALUE;
      err = clEnqueueReadBuffer(q, s.buffer, blocking ? CL_TRUE : CL_FALSE, s.offset, size, dst, 0, nullptr, nullptr);
      break;
    case {{ NAME }}_COPY_DEVICE_TO_DEVICE:
      if (!resolve(src, device, &s) || !resolve(dst, device, &d) || size > s.available || size > d.available)
        return {{ NAME }}_ERROR_INVALID_VALUE;
      err = clEnqueueCopyBuffer(q, s.buffer, d.buffer, s.offset, d.offset, size, 0, nullptr, nullptr);
      if (err == CL_SUCCESS && blocking) err = clFinish(q);
      break;
    default:
      return {{ NAME }}_ERROR_INVALID_VALUE;
  }
  if (err == CL_SUCCESS && !blocking) err = clFlush(q);
  return from_cl(err, "memcpy");
}

}  // namespace

{{ p }}_status_t {{ p }}_memcpy(void* dst, const void* src, size_t size, {{ p }}_copy_kind_t kind) {
  if (size == 0) return {{ NAME }}_OK;
  // the device whose memory it copies (not the current one: Paddle copies from either card)
  int device = -1;
  if ({{ p }}_pointer_device(kind == {{ NAME }}_COPY_DEVICE_TO_HOST ? src : dst, &device) != {{ NAME }}_OK)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_status_t st = finish_streams(device);  // synchronous: after all work submitted before it
  if (st != {{ NAME }}_OK) return st;
  cl_command_queue q;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    q = default_stream_locked(device)->queue;
  }
  return enqueue_copy(q, device, dst, src, size, kind, true);
}

{{ p }}_status_t {{ p }}_memcpy_async({{ p }}_stream_t stream, void* dst, const void* src, size_t size,
                               {{ p }}_copy_kind_t kind) {
  const int device = stream_device(stream);
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  return enqueue_copy(queue_of(stream), device, dst, src, size, kind, false);
}

{{ p }}_status_t {{ p }}_memcpy_peer_async({{ p }}_stream_t stream, void* dst, int dst_device, const void* src,
                                    int src_device, size_t size) {
  if (!valid_device(dst_device) || !valid_device(src_device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (size == 0) return {{ NAME }}_OK;
  BufferRef s, d;
  if (!resolve(src, src_device, &s) || !resolve(dst, dst_device, &d) || size > s.available || size > d.available)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_stream_st* st = stream;
  if (st == nullptr) {
    std::lock_guard<std::mutex> lock(g_mu);
    st = default_stream_locked(dst_device);
  }
  if (st->device != dst_device && st->device != src_device) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (device_info(src_device).context == device_info(dst_device).context) {
    cl_int err = clEnqueueCopyBuffer(st->queue, s.buffer, d.buffer, s.offset, d.offset, size, 0, nullptr, nullptr);
    if (err == CL_SUCCESS) err = clFlush(st->queue);
    return from_cl(err, "memcpy_peer");
  }
  // Devices of two platforms share no context: through host memory, synchronously.
  std::vector<char> staging(size);
  {{ p }}_status_t status = finish_streams(src_device);
  if (status != {{ NAME }}_OK) return status;
  cl_command_queue src_queue, dst_queue;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    src_queue = default_stream_locked(src_device)->queue;
    dst_queue = default_stream_locked(dst_device)->queue;
  }
  cl_int err = clEnqueueReadBuffer(src_queue, s.buffer, CL_TRUE, s.offset, size, staging.data(), 0, nullptr, nullptr);
  if (err == CL_SUCCESS) err = clFinish(st->queue);  // the stream's earlier work before the write
  if (err == CL_SUCCESS)
    err = clEnqueueWriteBuffer(dst_queue, d.buffer, CL_TRUE, d.offset, size, staging.data(), 0, nullptr, nullptr);
  return from_cl(err, "memcpy_peer");
}

{{ p }}_status_t {{ p }}_memcpy_peer(void* dst, int dst_device, const void* src, int src_device, size_t size) {
  if (!valid_device(dst_device) || !valid_device(src_device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_status_t st = finish_streams(src_device);
  if (st == {{ NAME }}_OK && dst_device != src_device) st = finish_streams(dst_device);
  if (st == {{ NAME }}_OK) st = {{ p }}_memcpy_peer_async(nullptr, dst, dst_device, src, src_device, size);
  if (st == {{ NAME }}_OK) st = finish_streams(dst_device);
  return st;
}

// ---- streams and events ----------------------------------------------------------

{{ p }}_status_t {{ p }}_stream_create(int device, {{ p }}_stream_t* stream) {
  if (!valid_device(device) || !stream) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_stream_st* s = new_stream(device, false);
  if (s == nullptr) return {{ NAME }}_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(g_mu);
  devices()[device].streams.push_back(s);
  *stream = s;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_stream_default(int device, {{ p }}_stream_t* stream) {
  if (!valid_device(device) || !stream) return {{ NAME }}_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mu);
  *stream = default_stream_locked(device);
  return *stream ? {{ NAME }}_OK : {{ NAME }}_ERROR_OUT_OF_MEMORY;
}

{{ p }}_status_t {{ p }}_stream_destroy({{ p }}_stream_t stream) {
  if (!stream || stream->is_default) return {{ NAME }}_ERROR_INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto& list = devices()[stream->device].streams;
    auto it = std::find(list.begin(), list.end(), stream);
    if (it == list.end()) return {{ NAME }}_ERROR_INVALID_VALUE;
    list.erase(it);
  }
  clFinish(stream->queue);  // its queued work still runs
  if (stream->pending) clReleaseEvent(stream->pending);
  clReleaseCommandQueue(stream->queue);
  delete stream;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_stream_synchronize({{ p }}_stream_t stream) {
  cl_command_queue q = queue_of(stream);
  if (q == nullptr) return {{ NAME }}_ERROR_INVALID_VALUE;
  return from_cl(clFinish(q), "stream_synchronize");
}

{{ p }}_status_t {{ p }}_stream_query({{ p }}_stream_t stream) {
  {{ p }}_stream_st* s = stream_or_default(stream);
  if (!s) return {{ NAME }}_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(s->query_mu);
  cl_int state = CL_QUEUED;
  cl_int err = CL_SUCCESS;
  // An earlier query's marker still not reached answers at once: polling a busy stream costs
  // one status read per query, not a marker each (nor the wait below).
  if (s->pending) {
    err = clGetEventInfo(s->pending, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(state), &state, nullptr);
    if (err == CL_SUCCESS && state > CL_COMPLETE) return {{ NAME }}_ERROR_NOT_READY;
    clReleaseEvent(s->pending);
    s->pending = nullptr;
    if (err != CL_SUCCESS) return from_cl(err, "stream_query");
    if (state < 0) return from_cl(state, "queued work");
  }
  cl_event marker = nullptr;
  err = clEnqueueMarkerWithWaitList(s->queue, 0, nullptr, &marker);
  if (err != CL_SUCCESS) return from_cl(err, "stream_query");
  clFlush(s->queue);
  // The marker is work too: done within microseconds when everything before it is, but not
  // at once. Asked until a millisecond has passed by the clock, spinning (a sleep or a yield
  // under load takes a scheduler tick each, 4 ms and more), so a query never blocks on real work.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
  for (;;) {
    err = clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(state), &state, nullptr);
    if (err != CL_SUCCESS || state <= CL_COMPLETE || std::chrono::steady_clock::now() >= until) break;
  }
  if (err == CL_SUCCESS && state > CL_COMPLETE) {
    s->pending = marker;  // the next query reads it
    return {{ NAME }}_ERROR_NOT_READY;
  }
  clReleaseEvent(marker);
  if (err != CL_SUCCESS) return from_cl(err, "stream_query");
  if (state < 0) return from_cl(state, "queued work");
  return {{ NAME }}_OK;
}

namespace {

// The event's marker with a reference of the caller's (NULL: never recorded), so that a record
// on another thread, which releases the marker it replaces, cannot free it under the caller.
cl_event retained_marker({{ p }}_event_t event) {
  std::lock_guard<std::mutex> lock(event->mu);
  if (event->marker) clRetainEvent(event->marker);
  return event->marker;
}

}  // namespace

{{ p }}_status_t {{ p }}_stream_wait_event({{ p }}_stream_t stream, {{ p }}_event_t event) {
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_stream_st* s = stream_or_default(stream);
  if (!s) return {{ NAME }}_ERROR_INVALID_VALUE;
  cl_event marker = retained_marker(event);
  if (marker == nullptr) return {{ NAME }}_OK;
  const cl_int err = device_info(event->device).context != device_info(s->device).context
                         ? clWaitForEvents(1, &marker)  // no shared context: the host waits
                         : clEnqueueBarrierWithWaitList(s->queue, 1, &marker, nullptr);
  clReleaseEvent(marker);
  return from_cl(err, "stream_wait_event");
}

namespace {

struct HostCall {
  {{ p }}_host_fn_t fn;
  void* user_data;
  cl_event done;  // a user event the stream's later work waits for
};

void complete_host_call(HostCall* call) {
  call->fn(call->user_data);
  clSetUserEventStatus(call->done, CL_COMPLETE);
  clReleaseEvent(call->done);
  delete call;
}

// OpenCL runs an event's callback at once, in the thread that sets it, when the event is already
// complete (pocl does when the stream was idle): fn would then run inside launch_host_func, which
// must return at once (a host function that waits for what its caller does next would never
// return). So each call runs on a thread of its own; one stream's calls still run in order (the
// next call's marker waits for the barrier on this one's `done`).
void CL_CALLBACK run_host_call(cl_event, cl_int, void* data) {
  auto* call = static_cast<HostCall*>(data);
  try {
    std::thread(complete_host_call, call).detach();
  } catch (const std::system_error&) {
    complete_host_call(call);  // no thread to be had: here, late rather than never
  }
}

}  // namespace

{{ p }}_status_t {{ p }}_launch_host_func({{ p }}_stream_t stream, {{ p }}_host_fn_t fn, void* user_data) {
  if (!fn) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_stream_st* s = stream_or_default(stream);
  if (!s) return {{ NAME }}_ERROR_INVALID_VALUE;
  // fn runs when the work before it has run (a marker's callback); the work after it waits
  // for fn (a barrier on a user event fn's callback completes).
  cl_int err = CL_SUCCESS;
  cl_event done = clCreateUserEvent(device_info(s->device).context, &err);
  if (err != CL_SUCCESS) return from_cl(err, "launch_host_func");
  cl_event reached = nullptr;
  err = clEnqueueMarkerWithWaitList(s->queue, 0, nullptr, &reached);
  if (err == CL_SUCCESS) err = clEnqueueBarrierWithWaitList(s->queue, 1, &done, nullptr);
  if (err == CL_SUCCESS) {
    clRetainEvent(done);
    auto* call = new HostCall{fn, user_data, done};
    err = clSetEventCallback(reached, CL_COMPLETE, run_host_call, call);
    if (err != CL_SUCCESS) {
      // The barrier is queued: without the callback nothing would complete `done` and the
      // stream would wait for ever. Release it (fn does not run; the call returns the error).
      clSetUserEventStatus(done, CL_COMPLETE);
      clReleaseEvent(done);
      delete call;
    }
  }
  if (reached) clReleaseEvent(reached);
  clReleaseEvent(done);
  if (err == CL_SUCCESS) err = clFlush(s->queue);
  return from_cl(err, "launch_host_func");
}

{{ p }}_status_t {{ p }}_event_create(int device, {{ p }}_event_t* event) {
  if (!valid_device(device) || !event) return {{ NAME }}_ERROR_INVALID_VALUE;
  *event = new {{ p }}_event_st{device, nullptr, {}};
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_event_destroy({{ p }}_event_t event) {
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (event->marker) clReleaseEvent(event->marker);
  delete event;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_event_record({{ p }}_event_t event, {{ p }}_stream_t stream) {
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_stream_st* s = stream_or_default(stream);
  if (!s || s->device != event->device) return {{ NAME }}_ERROR_INVALID_VALUE;
  cl_event marker = nullptr;
  cl_int err = clEnqueueMarkerWithWaitList(s->queue, 0, nullptr, &marker);
  if (err != CL_SUCCESS) return from_cl(err, "event_record");
  clFlush(s->queue);
  {
    std::lock_guard<std::mutex> lock(event->mu);
    std::swap(event->marker, marker);
  }
  if (marker) clReleaseEvent(marker);  // the one recorded before (a waiter holds its own reference)
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_event_query({{ p }}_event_t event) {
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  cl_event marker = retained_marker(event);
  if (marker == nullptr) return {{ NAME }}_OK;
  cl_int state = CL_QUEUED;
  cl_int err = clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(state), &state, nullptr);
  clReleaseEvent(marker);
  if (err != CL_SUCCESS) return from_cl(err, "event_query");
  if (state < 0) return from_cl(state, "queued work");
  return state == CL_COMPLETE ? {{ NAME }}_OK : {{ NAME }}_ERROR_NOT_READY;
}

{{ p }}_status_t {{ p }}_event_synchronize({{ p }}_event_t event) {
  if (!event) return {{ NAME }}_ERROR_INVALID_VALUE;
  cl_event marker = retained_marker(event);
  if (marker == nullptr) return {{ NAME }}_OK;
  const cl_int err = clWaitForEvents(1, &marker);
  clReleaseEvent(marker);
  return from_cl(err, "event_synchronize");
}

}  // extern "C"
