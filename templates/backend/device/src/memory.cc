// {{ NAME }} device library: device memory, its accounting, and copies.
//
// Device memory is opaque to the host, as on hardware: each device's memory is one
// memory object mapped twice. The address handed out (what the adapters hold) is mapped
// PROT_NONE, so a host load or store through it faults; the library computes on a second,
// writable mapping of the same object at the same offset (host_view). The fault handler
// names the address, its allocation and the last op enqueued, then aborts: no silent
// garbage. {{ NAME }}_HOST_VISIBLE_MEMORY=1 maps the handed-out view read-write (debugging).
// It handles SIGSEGV and SIGBUS (a page of the memory object the host cannot back) in device
// memory only, on an alternate stack; every other signal goes on to the handler before it
// (Python's faulthandler, the framework's) or the default action.
//
// Freed memory is released once every queue has passed the work submitted before the free
// (that work may still use it, a peer copy on another device's queue too), as a
// stream-ordered allocator does.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {
namespace {

constexpr size_t kAlignment = 64;

size_t configured_capacity() {
  const char* env = std::getenv("{{ NAME }}_MEMORY_MB");
  long long mb = env ? std::atoll(env) : 8192;
  if (mb <= 0) mb = 8192;
  // Both views of every device's memory must fit in the address space: on 32-bit targets
  // a device gets at most 256 MiB.
  const uint64_t bytes = static_cast<uint64_t>(mb) << 20;
  const uint64_t limit = sizeof(void*) == 4 ? uint64_t{256} << 20 : std::numeric_limits<size_t>::max() / 8;
  return static_cast<size_t>(bytes < limit ? bytes : limit);
}

bool host_visible() {
  static const bool visible = [] {
    const char* v = std::getenv("{{ NAME }}_HOST_VISIBLE_MEMORY");
    return v && *v && std::strcmp(v, "0") != 0;
  }();
  return visible;
}

// An anonymous memory object: memfd where the kernel has it, else an unlinked file in the
// temporary directory (not /dev/shm: a container's is 64 MiB, and a page beyond that faults).
int memory_object(size_t bytes) {
  int fd = -1;
#ifdef SYS_memfd_create
  fd = static_cast<int>(syscall(SYS_memfd_create, "{{ p }}-device-memory", 1u /* MFD_CLOEXEC */));
#endif
  if (fd < 0) {
    const char* dir = std::getenv("TMPDIR");
    std::string path = std::string(dir && *dir ? dir : "/tmp") + "/{{ p }}-device-XXXXXX";
    fd = mkstemp(&path[0]);
    if (fd >= 0) unlink(path.c_str());
  }
  if (fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

// One device's memory: both views and a best-fit allocator over offsets.
struct Arena {
  char* handed = nullptr;   // the addresses callers get
  char* library = nullptr;  // the same memory, where the library reads and writes
  size_t size = 0;
  std::map<size_t, size_t> free_by_offset;
  std::multimap<size_t, size_t> free_by_size;

  bool map(size_t bytes, std::string* why) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    bytes = (bytes + page - 1) / page * page;
    const int fd = memory_object(bytes);
    if (fd < 0) return *why = std::string("no memory object: ") + std::strerror(errno), false;
    void* lib = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    void* out = mmap(nullptr, bytes, host_visible() ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_SHARED | MAP_NORESERVE,
                     fd, 0);
    const int mapped = errno;
    close(fd);  // the mappings keep the memory object
    if (lib == MAP_FAILED || out == MAP_FAILED) {
      *why = std::string("mmap: ") + std::strerror(mapped);
      if (lib != MAP_FAILED) munmap(lib, bytes);
      if (out != MAP_FAILED) munmap(out, bytes);
      return false;
    }
    library = static_cast<char*>(lib);
    handed = static_cast<char*>(out);
    size = bytes;
    insert_free(0, bytes);
    return true;
  }

  bool allocate(size_t bytes, size_t* offset) {
    auto it = free_by_size.lower_bound(bytes);
    if (it == free_by_size.end()) return false;
    const size_t block = it->first, at = it->second;
    free_by_size.erase(it);
    free_by_offset.erase(at);
    if (block > bytes) insert_free(at + bytes, block - bytes);
    *offset = at;
    return true;
  }

  void release(size_t offset, size_t bytes) {
    auto next = free_by_offset.lower_bound(offset);
    if (next != free_by_offset.end() && offset + bytes == next->first) {
      bytes += next->second;
      erase_free(next);
    }
    auto prev = free_by_offset.lower_bound(offset);
    if (prev != free_by_offset.begin()) {
      --prev;
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        bytes += prev->second;
        erase_free(prev);
      }
    }
    insert_free(offset, bytes);
    // Give the pages of a very large freed range back to the system. (Not of every range:
    // frameworks free and allocate the same sizes every step, and pages given back fault
    // and are zeroed again on their next use.)
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t begin = (offset + page - 1) / page * page, end = (offset + bytes) / page * page;
    if (end > begin && end - begin >= (size_t{64} << 20)) madvise(library + begin, end - begin, MADV_REMOVE);
  }

 private:
  void insert_free(size_t offset, size_t bytes) {
    free_by_offset[offset] = bytes;
    free_by_size.emplace(bytes, offset);
  }
  void erase_free(std::map<size_t, size_t>::iterator it) {
    auto range = free_by_size.equal_range(it->second);
    for (auto s = range.first; s != range.second; ++s)
      if (s->second == it->first) {
        free_by_size.erase(s);
        break;
      }
    free_by_offset.erase(it);
  }
};

struct PendingFree {
  size_t offset, size;
  StreamMarks marks;
};

struct Allocation {
  size_t size;
  uint64_t serial;  // which allocation of the process (a graph tells a freed buffer from a new one at its address)
};

struct DeviceState {
  std::mutex mu;
  size_t capacity = 0;
  size_t used = 0;  // live allocations (what memory_stats reports)
  size_t peak = 0;  // max of `used` since start or {{ p }}_memory_reset_peak
  std::map<uintptr_t, Allocation> allocations;  // live allocation start -> size (ordered: range lookups)
  std::vector<PendingFree> pending;  // freed, not yet released: queued work may still use it
  Arena arena;                       // capacity bytes: what is neither live nor pending is free
  // Read without the lock (translation, the fault handler): set once, before any pointer exists.
  std::atomic<char*> handed{nullptr};
};

DeviceState& device_state(int device) {
  static DeviceState* states = new DeviceState[kMaxDevices];  // never destroyed: queued work may run at exit
  return states[device];
}

// ---- host access to device memory ------------------------------------------------

struct sigaction g_previous_segv, g_previous_bus;

// A signal the device did not cause, to whoever handled it before us; with no handler there,
// its default action (a signal sent by kill is raised again: it does not repeat on return).
void pass_on(int sig, siginfo_t* info, void* context) {
  const struct sigaction& previous = sig == SIGBUS ? g_previous_bus : g_previous_segv;
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) return previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    return previous.sa_handler(sig);
  }
  const bool sent = info->si_code <= 0;  // kill, raise, sigqueue: not an access that faulted
  if (sent && previous.sa_handler == SIG_IGN) return;
  signal(sig, SIG_DFL);
  if (sent) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    raise(sig);
  }
  // a fault: the access repeats on return and takes the default action
}

// Async-signal context: no locks it could wait on, no allocation; snprintf into a buffer.
void on_fault(int sig, siginfo_t* info, void* context) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (int d = 0; d < kMaxDevices && info->si_code > 0; ++d) {
    DeviceState& st = device_state(d);
    const uintptr_t base = reinterpret_cast<uintptr_t>(st.handed.load(std::memory_order_acquire));
    if (base == 0) continue;
    // SIGSEGV: the host touched the handed-out (PROT_NONE) view. SIGBUS: a page of either view
    // that the memory object cannot back; named at its handed-out address.
    const uintptr_t library = reinterpret_cast<uintptr_t>(st.arena.library);
    uintptr_t handed_addr = addr;
    if (sig == SIGBUS && addr >= library && addr < library + st.arena.size) handed_addr = base + (addr - library);
    if (handed_addr < base || handed_addr >= base + st.arena.size) continue;
    char where[160] = "outside any live allocation";
    if (st.mu.try_lock()) {
      auto it = st.allocations.upper_bound(handed_addr);
      if (it != st.allocations.begin() && handed_addr < (--it)->first + it->second.size)
        std::snprintf(where, sizeof(where), "byte %zu of the %zu-byte allocation at %p",
                      static_cast<size_t>(handed_addr - it->first), it->second.size, reinterpret_cast<void*>(it->first));
      st.mu.unlock();
    }
    // The op this thread runs (a worker's item: a host function, say) is the one that faulted;
    // on a thread running none (the framework's), the last op any thread enqueued is a hint.
    char op[96];
    if (const char* running = running_op()) std::snprintf(op, sizeof(op), "in op %s", running);
    else std::snprintf(op, sizeof(op), "last op enqueued: %s", last_op());
    char line[640];
    const int n =
        sig == SIGBUS
            ? std::snprintf(line, sizeof(line),
                            "[{{ NAME }}] SIGBUS: device memory at %p (device %d, %s; %s) has no "
                            "host memory behind it: the memory object it lives in (memfd, or a file in TMPDIR) "
                            "could not get a page; free host memory or set {{ NAME }}_MEMORY_MB lower\n",
                            reinterpret_cast<void*>(handed_addr), d, where, op)
            : std::snprintf(
                  line, sizeof(line),
                  "[{{ NAME }}] host access to device memory at %p (device %d, %s; %s): only the "
                  "device library may touch device memory, copy it to the host with {{ p }}_memcpy (or set "
                  "{{ NAME }}_HOST_VISIBLE_MEMORY=1 to debug)\n",
                  info->si_addr, d, where, op);
    if (n > 0) {
      ssize_t ignored = write(2, line, static_cast<size_t>(std::min<int>(n, sizeof(line) - 1)));
      (void)ignored;
    }
    signal(SIGABRT, SIG_DFL);
    abort();
  }
  pass_on(sig, info, context);  // not ours: a fault elsewhere, a stack overflow, a kill
}

void install_fault_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    ensure_signal_stack();
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fault;
    // SA_ONSTACK: a stack overflow is a SIGSEGV too, and there is no stack left to run on.
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous_segv);
    sigaction(SIGBUS, &sa, &g_previous_bus);
  });
}

// Device memory freed while queued work may still use it waits in `pending` until the
// device's streams pass the positions marked at the free. st.mu held.
void reclaim(DeviceState& st) {
  if (st.pending.empty()) return;
  auto released = std::remove_if(st.pending.begin(), st.pending.end(), [&](const PendingFree& f) {
    if (!marks_reached(f.marks)) return false;
    st.arena.release(f.offset, f.size);
    return true;
  });
  st.pending.erase(released, st.pending.end());
}

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
    const uintptr_t end = it->first + it->second.size;  // (size against what is left: p + size may wrap)
    if (p >= it->first && p <= end && size <= end - p) return d;
  }
  return -1;
}

// The device a copy runs on must own its device pointers (-1: whichever device owns the first
// one): a pointer of another card (use the peer copy) or of no card is refused, as real
// hardware would fault or read garbage. Sets *device to it.
{{ p }}_status_t check_copy(int* device, void* dst, const void* src, size_t size, {{ p }}_copy_kind_t kind) {
  if (!dst || !src || kind < {{ NAME }}_COPY_HOST_TO_DEVICE || kind > {{ NAME }}_COPY_DEVICE_TO_DEVICE)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  const bool dst_on_device = kind != {{ NAME }}_COPY_DEVICE_TO_HOST, src_on_device = kind != {{ NAME }}_COPY_HOST_TO_DEVICE;
  if (*device < 0) *device = owner_of(dst_on_device ? dst : src, size);
  if (*device < 0 || (dst_on_device && owner_of(dst, size) != *device) ||
      (src_on_device && owner_of(src, size) != *device))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  return {{ NAME }}_OK;
}

const char* copy_name({{ p }}_copy_kind_t kind) {
  return kind == {{ NAME }}_COPY_HOST_TO_DEVICE   ? "memcpy_h2d"
         : kind == {{ NAME }}_COPY_DEVICE_TO_HOST ? "memcpy_d2h"
                                                  : "memcpy_d2d";
}

}  // namespace

void ensure_signal_stack() {
  stack_t current;
  if (sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE)) return;  // it has one
  // Freed when the thread exits (after it is switched off: the kernel must not use freed memory).
  struct SignalStack {
    void* memory = nullptr;
    ~SignalStack() {
      if (memory == nullptr) return;
      stack_t off;
      std::memset(&off, 0, sizeof(off));
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
      std::free(memory);
    }
  };
  thread_local SignalStack stack;
  if (stack.memory != nullptr) return;
  const size_t size = std::max<size_t>(SIGSTKSZ, 64 << 10);
  stack.memory = std::malloc(size);
  if (stack.memory == nullptr) return;
  stack_t mine;
  std::memset(&mine, 0, sizeof(mine));
  mine.ss_sp = stack.memory;
  mine.ss_size = size;
  if (sigaltstack(&mine, nullptr) != 0) {
    std::free(stack.memory);
    stack.memory = nullptr;
  }
}

bool allocation_holding(const void* ptr, int device, AllocationUse* use) {
  if (device < 0 || device >= kMaxDevices) return false;
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  DeviceState& st = device_state(device);
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = st.allocations.upper_bound(p);
  if (it == st.allocations.begin() || p >= (--it)->first + it->second.size) return false;
  *use = {device, it->first, it->second.size, it->second.serial};
  return true;
}

bool allocation_live(const AllocationUse& use) {
  DeviceState& st = device_state(use.device);
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = st.allocations.find(use.base);
  return it != st.allocations.end() && it->second.serial == use.serial;
}

void* host_view_of(const void* ptr, int device) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  const int first = device < 0 ? 0 : device, last = device < 0 ? kMaxDevices - 1 : device;
  for (int d = first; d <= last; ++d) {
    DeviceState& st = device_state(d);
    const uintptr_t base = reinterpret_cast<uintptr_t>(st.handed.load(std::memory_order_acquire));
    if (base != 0 && p >= base && p < base + st.arena.size) return st.arena.library + (p - base);
  }
  return nullptr;
}

}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_init(void) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("init");
  for (int d = 0; d < device_count_setting(); ++d) {
    DeviceState& st = device_state(d);
    std::lock_guard<std::mutex> lock(st.mu);
    if (st.capacity == 0) st.capacity = configured_capacity();
  }
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_finalize(void) {
  if (forked_child()) return {{ NAME }}_OK;  // nothing of the child's to wait for
  {{ p }}_status_t first = {{ NAME }}_OK;
  for (int d = 0; d < device_count_setting(); ++d) {
    const {{ p }}_status_t st = synchronize_device_streams(d);
    if (first == {{ NAME }}_OK) first = st;
  }
  return first;
}

{{ p }}_status_t {{ p }}_device_synchronize(int device) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("device_synchronize");
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  const {{ p }}_status_t capturing = refuse_if_device_captures("device_synchronize", device);
  if (capturing != {{ NAME }}_OK) return capturing;
  return synchronize_device_streams(device);
}

{{ p }}_status_t {{ p }}_malloc(int device, void** ptr, size_t size) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("malloc");
  if (!valid_device(device) || !ptr) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_init();
  DeviceState& st = device_state(device);
  std::unique_lock<std::mutex> lock(st.mu);
  if (size > st.capacity)  // (before rounding up, which would wrap a size near SIZE_MAX to a small one)
    return fail_call("malloc", {{ NAME }}_ERROR_OUT_OF_MEMORY,
                     std::to_string(size) + " bytes asked of device " + std::to_string(device) + ", which has " +
                         std::to_string(st.capacity) + " ({{ NAME }}_MEMORY_MB)");
  size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  if (st.arena.handed == nullptr) {  // SDK: the device's memory, claimed on first use
    std::string why;
    if (!st.arena.map(st.capacity, &why)) {
      std::fprintf(stderr, "[{{ NAME }}] cannot map %zu MiB of memory for device %d (%s); set {{ NAME }}_MEMORY_MB lower\n",
                   st.capacity >> 20, device, why.c_str());
      return {{ NAME }}_ERROR_OUT_OF_MEMORY;
    }
    st.handed.store(st.arena.handed, std::memory_order_release);
    install_fault_handler();
    mark_initialised();
  }
  reclaim(st);
  size_t offset = 0;
  bool found = st.arena.allocate(rounded, &offset);
  if (!found && !st.pending.empty()) {  // memory freed behind queued work: wait for the work
    lock.unlock();
    wait_for_all_streams();
    lock.lock();
    reclaim(st);
    found = st.arena.allocate(rounded, &offset);
  }
  if (!found) return {{ NAME }}_ERROR_OUT_OF_MEMORY;
  char* p = st.arena.handed + offset;
  static std::atomic<uint64_t> serials{0};
  st.allocations[reinterpret_cast<uintptr_t>(p)] = {rounded, serials.fetch_add(1, std::memory_order_relaxed) + 1};
  st.used += rounded;
  st.peak = std::max(st.peak, st.used);
  *ptr = p;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_free(int device, void* ptr) {
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (!ptr || forked_child()) return {{ NAME }}_OK;  // (a child's copy of a parent's tensor: the parent's memory)
  if (capture_underway()) {
    const {{ p }}_status_t captured = refuse_free_of_captured(ptr, device);
    if (captured != {{ NAME }}_OK) return captured;
  }
  StreamMarks marks = stream_marks();  // (taken before st.mu: the registry lock is not nested in it)
  DeviceState& st = device_state(device);
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = st.allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == st.allocations.end()) return {{ NAME }}_ERROR_INVALID_VALUE;  // double, foreign or other-device free
  const size_t offset = static_cast<size_t>(static_cast<char*>(ptr) - st.arena.handed), size = it->second.size;
  st.used -= size;
  st.allocations.erase(it);
  if (marks.empty()) {
    st.arena.release(offset, size);  // SDK: device free.
  } else {
    st.pending.push_back({offset, size, std::move(marks)});
  }
  reclaim(st);
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_memset(int device, void* ptr, int value, size_t size) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("memset");
  if (!valid_device(device) || (!ptr && size)) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (size == 0) return {{ NAME }}_OK;
  if (owner_of(ptr, size) != device) return {{ NAME }}_ERROR_INVALID_VALUE;
  const {{ p }}_status_t capturing = refuse_if_device_captures("memset", device);
  if (capturing != {{ NAME }}_OK) return capturing;
  const {{ p }}_status_t queued = synchronize_device_streams(device);  // synchronous: after earlier work
  if (queued != {{ NAME }}_OK) return queued;
  std::memset(host_view_of(ptr, device), value, size);
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_mem_info(int device, size_t* total, size_t* free_bytes) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("mem_info");
  if (!valid_device(device) || !total || !free_bytes) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_init();
  DeviceState& st = device_state(device);
  std::lock_guard<std::mutex> lock(st.mu);
  *total = st.capacity;
  *free_bytes = st.capacity - st.used;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_memory_stats(int device, size_t* allocated, size_t* peak) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("memory_stats");
  if (!valid_device(device) || !allocated || !peak) return {{ NAME }}_ERROR_INVALID_VALUE;
  DeviceState& st = device_state(device);
  std::lock_guard<std::mutex> lock(st.mu);
  *allocated = st.used;
  *peak = st.peak;
  return {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_pointer_device(const void* ptr, int* device) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("pointer_device");
  if (!device) return {{ NAME }}_ERROR_INVALID_VALUE;
  *device = owner_of(ptr, 1);
  return *device < 0 ? {{ NAME }}_ERROR_INVALID_VALUE : {{ NAME }}_OK;
}

{{ p }}_status_t {{ p }}_memory_reset_peak(int device) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("memory_reset_peak");
  if (!valid_device(device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  DeviceState& st = device_state(device);
  std::lock_guard<std::mutex> lock(st.mu);
  st.peak = st.used;
  return {{ NAME }}_OK;
}

// Synchronous copies wait for all earlier work on the device (as cudaMemcpy does) and then
// copy; an error that work raised is returned instead.
{{ p }}_status_t {{ p }}_memcpy(void* dst, const void* src, size_t size, {{ p }}_copy_kind_t kind) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("memcpy");
  if (size == 0) return {{ NAME }}_OK;
  int device = -1;
  const {{ p }}_status_t st = check_copy(&device, dst, src, size, kind);
  if (st != {{ NAME }}_OK) return st;
  const {{ p }}_status_t capturing = refuse_if_device_captures("memcpy", device);
  if (capturing != {{ NAME }}_OK) return capturing;
  const {{ p }}_status_t queued = synchronize_device_streams(device);
  if (queued != {{ NAME }}_OK) return queued;
  void* to = kind == {{ NAME }}_COPY_DEVICE_TO_HOST ? dst : host_view_of(dst, device);
  const void* from = kind == {{ NAME }}_COPY_HOST_TO_DEVICE ? src : host_view_of(src, device);
  std::memmove(to, from, size);  // SDK: DMA in the direction `kind`.
  return {{ NAME }}_OK;
}

// Asynchronous: returns before the copy. A host source is staged at the call (the caller may
// reuse it at once, as with pageable memory on hardware); a host destination is written when
// the stream gets there: read it after synchronising.
{{ p }}_status_t {{ p }}_memcpy_async({{ p }}_stream_t stream, void* dst, const void* src, size_t size,
                               {{ p }}_copy_kind_t kind) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("memcpy_async");
  if (size == 0) return {{ NAME }}_OK;
  int device = stream_device(stream);
  const {{ p }}_status_t st = check_copy(&device, dst, src, size, kind);
  if (st != {{ NAME }}_OK) return st;
  if (capture_underway()) {  // a graph replays copies between device buffers only
    if (kind != {{ NAME }}_COPY_DEVICE_TO_DEVICE) {
      const {{ p }}_status_t capturing = refuse_if_capturing(copy_name(kind), stream);
      if (capturing != {{ NAME }}_OK) return capturing;
    }
    note_device_pointer(dst, device);
    note_device_pointer(src, device);
  }
  const char* host_src = static_cast<const char*>(src);
  if (kind == {{ NAME }}_COPY_HOST_TO_DEVICE) keep_n(host_src, size);  // staged, as other host arguments are
  void* to = kind == {{ NAME }}_COPY_DEVICE_TO_HOST ? dst : host_view_of(dst, device);
  const void* from = kind == {{ NAME }}_COPY_HOST_TO_DEVICE ? host_src : host_view_of(src, device);
  return submit(stream, copy_name(kind), [to, from, size]() -> {{ p }}_status_t {
    std::memmove(to, from, size);  // SDK: DMA on the stream.
    return {{ NAME }}_OK;
  });
}

{{ p }}_status_t {{ p }}_memcpy_peer(void* dst, int dst_device, const void* src, int src_device, size_t size) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("memcpy_peer");
  if (!valid_device(dst_device) || !valid_device(src_device)) return {{ NAME }}_ERROR_INVALID_VALUE;
  {{ p }}_status_t st = refuse_if_device_captures("memcpy_peer", src_device);
  if (st == {{ NAME }}_OK) st = refuse_if_device_captures("memcpy_peer", dst_device);
  if (st == {{ NAME }}_OK) st = synchronize_device_streams(src_device);
  if (st == {{ NAME }}_OK) st = {{ p }}_memcpy_peer_async(default_stream(dst_device), dst, dst_device, src, src_device, size);
  return st == {{ NAME }}_OK ? synchronize_device_streams(dst_device) : st;
}

// On `stream` (either device's; NULL: dst_device's default stream). Like any queued work it is
// ordered only after earlier work on that stream: work on the other device that produces `src`
// must be waited for first (an event, or a synchronisation).
{{ p }}_status_t {{ p }}_memcpy_peer_async({{ p }}_stream_t stream, void* dst, int dst_device, const void* src,
                                    int src_device, size_t size) {
  {{ NAME }}_NOT_IN_FORKED_CHILD("memcpy_peer_async");
  debug::Trace trace_("memcpy_peer");
  trace_.attr("from", src_device).attr("to", dst_device).attr("bytes", size);
  if (size == 0) return {{ NAME }}_OK;
  if (!dst || !src || !valid_device(dst_device) || !valid_device(src_device) ||
      owner_of(dst, size) != dst_device || owner_of(src, size) != src_device)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  if (stream && stream_device(stream) != dst_device && stream_device(stream) != src_device)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  if (capture_underway()) {
    note_device_pointer(dst, dst_device);
    note_device_pointer(src, src_device);
  }
  void* to = host_view_of(dst, dst_device);
  const void* from = host_view_of(src, src_device);
  // SDK: a peer DMA (or a copy through the host where cards cannot reach each other).
  return submit(stream ? stream : default_stream(dst_device), "memcpy_peer", [to, from, size]() -> {{ p }}_status_t {
    std::memmove(to, from, size);
    return {{ NAME }}_OK;
  });
}

}  // extern "C"
