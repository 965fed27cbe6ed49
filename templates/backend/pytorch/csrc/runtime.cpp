// The {{ NAME }} device in PyTorch: PrivateUse1 devices, streams and events (the device
// guard), memory (the allocator), the hooks ATen asks about the backend (generators,
// device of a pointer, storage resize), and the ops torch_{{ p }} calls from Python.
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Allocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>
#include <torch/version.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "common.h"

namespace torch_{{ p }} {

// What devkit check-abi reads from the binary (strings / pyelftools): the torch
// release and C++ ABI this library is compiled for. `used` keeps it through linking.
extern "C" __attribute__((used, visibility("default"))) const char {{ p }}_torch_build_info[] =
    "{{ p }}-torch-build: torch=" {{ NAME }}_TORCH_VERSION " cxx11_abi=" C10_STRINGIZE({{ NAME }}_TORCH_CXX11_ABI)
    " plugin=" {{ NAME }}_PLUGIN_VERSION;

void check({{ p }}_status_t status, const char* op) {
  // (an error of earlier queued work, returned by a synchronising call, names its op)
  TORCH_CHECK(status == {{ NAME }}_OK, "{{ device_type }} device op ", op, " failed: ", {{ p }}_status_string(status), " ",
              {{ p }}_error_detail());
}

namespace {

int device_count() {
  int n = 0;
  check({{ p }}_device_count(&n), "device_count");
  return n;
}

void check_index(c10::DeviceIndex index) {
  TORCH_CHECK(index >= 0 && index < device_count(), "{{ device_type }}:", static_cast<int>(index),
              " does not exist (", device_count(), " {{ device_type }} device(s))");
}

c10::DeviceIndex current_index() {
  int d = 0;
  check({{ p }}_get_device(&d), "get_device");
  return static_cast<c10::DeviceIndex>(d);
}

// ---- streams --------------------------------------------------------------------
// torch names a stream by (device, id). Id 0 is the device library's default stream of
// that device (its handle, not NULL: NULL would mean the current device's, another card's
// queue while a stream of device 1 is synchronized from device 0); streams made by
// getNewStream get ids 1, 2, ... and live until exit (torch never destroys streams). The
// current stream is per thread and device.
class Streams {
 public:
  static {{ p }}_stream_t default_handle(c10::DeviceIndex device) {
    static std::atomic<{{ p }}_stream_t> handles[64] = {};  // filled once per device; read on every op
    TORCH_CHECK(device >= 0 && device < 64, "{{ device_type }}:", static_cast<int>(device), " does not exist");
    {{ p }}_stream_t h = handles[device].load(std::memory_order_acquire);
    if (h == nullptr) {
      check({{ p }}_stream_default(device, &h), "stream_default");
      handles[device].store(h, std::memory_order_release);
    }
    return h;
  }
  static Streams& get() {
    static Streams* s = new Streams();  // leaked: streams outlive static destruction
    return *s;
  }
  {{ p }}_stream_t handle(const c10::Stream& stream) {
    if (stream.id() == 0) return default_handle(stream.device_index());
    std::lock_guard<std::mutex> lock(mu_);
    const size_t i = static_cast<size_t>(stream.id() - 1);
    TORCH_CHECK(i < handles_.size(), "unknown {{ device_type }} stream id ", stream.id());
    return handles_[i];
  }
  c10::Stream create(c10::DeviceIndex device) {
    {{ p }}_stream_t h = nullptr;
    check({{ p }}_stream_create(device, &h), "stream_create");
    std::lock_guard<std::mutex> lock(mu_);
    handles_.push_back(h);
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device),
                       static_cast<c10::StreamId>(handles_.size()));
  }
  static c10::Stream default_stream(c10::DeviceIndex device) {
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), 0);
  }
  c10::Stream current(c10::DeviceIndex device) {
    auto& cur = current_ids();
    if (static_cast<size_t>(device) >= cur.size()) cur.resize(device + 1, 0);
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::DeviceType::PrivateUse1, device), cur[device]);
  }
  void set_current(const c10::Stream& stream) {
    auto& cur = current_ids();
    if (static_cast<size_t>(stream.device_index()) >= cur.size()) cur.resize(stream.device_index() + 1, 0);
    cur[stream.device_index()] = stream.id();
  }

 private:
  static std::vector<c10::StreamId>& current_ids() {
    thread_local std::vector<c10::StreamId> ids;
    return ids;
  }
  std::mutex mu_;
  std::deque<{{ p }}_stream_t> handles_;
};

// ---- device guard ---------------------------------------------------------------
struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;

  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    if (old.index() != d.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return c10::Device(kType, current_index()); }
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

  c10::Stream getStream(c10::Device d) const override { return Streams::get().current(d.index()); }
  c10::Stream getDefaultStream(c10::Device d) const override { return Streams::default_stream(d.index()); }
  c10::Stream getNewStream(c10::Device d, int priority) const override { return Streams::get().create(d.index()); }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool high_priority) const override {
    return Streams::default_stream(d.index());
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

  // Events are created on first record, as in CUDA.
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
  void destroyEvent(void* event, const c10::DeviceIndex index) const noexcept override {
    if (event) {{ p }}_event_destroy(static_cast<{{ p }}_event_t>(event));
  }
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

// ---- allocator ------------------------------------------------------------------
struct Allocation {
  void* ptr;
  c10::DeviceIndex device;
};

void free_allocation(void* ctx) {
  auto* a = static_cast<Allocation*>(ctx);
  {{ p }}_free(a->device, a->ptr);  // a destructor must not throw
  delete a;
}

struct DeviceAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    const c10::DeviceIndex device = current_index();
    if (nbytes == 0) return c10::DataPtr(nullptr, c10::Device(c10::DeviceType::PrivateUse1, device));
    void* ptr = nullptr;
    const {{ p }}_status_t st = {{ p }}_malloc(device, &ptr, nbytes);
    if (st == {{ NAME }}_ERROR_OUT_OF_MEMORY) {
      size_t total = 0, free_bytes = 0;
      {{ p }}_mem_info(device, &total, &free_bytes);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "{{ device_type }}:", static_cast<int>(device), " out of memory: tried to allocate ",
                       nbytes, " bytes with ", free_bytes, " of ", total, " bytes free ({{ NAME }}_MEMORY_MB sets the capacity)");
    }
    check(st, "malloc");
    return c10::DataPtr(ptr, new Allocation{ptr, device}, &free_allocation,
                        c10::Device(c10::DeviceType::PrivateUse1, device));
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    check({{ p }}_memcpy(dest, src, count, {{ NAME }}_COPY_DEVICE_TO_DEVICE), "memcpy");
  }
};

DeviceAllocator g_allocator;
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

// ---- generators -------------------------------------------------------------------
// A Philox-free CPU generator (mt19937) labelled as a {{ device_type }} device: kernels draw
// a 64-bit seed from it per call and the device library's counter-based RNG expands it.
struct Generator final : at::CPUGeneratorImpl {
  explicit Generator(c10::DeviceIndex index) {
    device_ = c10::Device(c10::DeviceType::PrivateUse1, index);
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }
};

const at::Generator& default_generator(c10::DeviceIndex index) {
  static std::vector<at::Generator> generators = [] {
    std::vector<at::Generator> g;
    for (int d = 0; d < device_count(); ++d) {
      g.push_back(at::make_generator<Generator>(static_cast<c10::DeviceIndex>(d)));
      g.back().set_current_seed(c10::detail::getNonDeterministicRandom());
    }
    return g;
  }();
  if (index == -1) index = current_index();
  check_index(index);
  return generators[index];
}

// ---- hooks ------------------------------------------------------------------------
struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex index) const override { return true; }
  void init() const override { check({{ p }}_init(), "init"); }
  c10::DeviceIndex deviceCount() const override { return static_cast<c10::DeviceIndex>(device_count()); }
  void setCurrentDevice(c10::DeviceIndex d) const override {
    check_index(d);
    check({{ p }}_set_device(d), "set_device");
  }
  c10::DeviceIndex getCurrentDevice() const override { return current_index(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    const c10::DeviceIndex old = current_index();
    setCurrentDevice(d);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override { return exchangeDevice(d); }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override { return default_generator(index); }
  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    return at::make_generator<Generator>(index == -1 ? current_index() : index);
  }
  // Each device's memory is its own range: the library says whose a pointer is.
  at::Device getDeviceFromPtr(void* data) const override {
    int device = 0;
    check({{ p }}_pointer_device(data, &device), "pointer_device");
    return at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
  }
  bool isPinnedPtr(const void* data) const override { return false; }
  at::Allocator* getPinnedMemoryAllocator() const override { return at::getCPUAllocator(); }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    resize_storage(storage, newsize);
  }

  static void resize_storage(const c10::Storage& storage, size_t newsize) {
    TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
    c10::DataPtr fresh = g_allocator.allocate(newsize);
    const size_t keep = std::min(newsize, storage.nbytes());
    if (keep > 0) g_allocator.copy_data(fresh.get(), storage.data(), keep);
    storage.set_data_ptr_noswap(std::move(fresh));
    storage.set_nbytes(newsize);
  }
};

// Registered when the library is loaded (before any tensor exists).
const bool g_hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new Hooks());
  return true;
}();

}  // namespace

{{ p }}_stream_t current_stream() { return Streams::get().handle(Streams::get().current(current_index())); }

void resize_device_storage(const c10::Storage& storage, size_t nbytes) { Hooks::resize_storage(storage, nbytes); }

// ---- ops for Python (torch.ops.{{ p }}.*) -------------------------------------------
namespace {

int64_t py_device_count() { return device_count(); }

std::vector<int64_t> memory_stats(int64_t device) {
  check_index(static_cast<c10::DeviceIndex>(device));
  size_t allocated = 0, peak = 0;
  check({{ p }}_memory_stats(static_cast<int>(device), &allocated, &peak), "memory_stats");
  return {static_cast<int64_t>(allocated), static_cast<int64_t>(peak)};
}

void reset_peak_memory_stats(int64_t device) {
  check_index(static_cast<c10::DeviceIndex>(device));
  check({{ p }}_memory_reset_peak(static_cast<int>(device)), "memory_reset_peak");
}

void manual_seed(int64_t seed, int64_t device) {
  auto gen = default_generator(static_cast<c10::DeviceIndex>(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(static_cast<uint64_t>(seed));
}

int64_t initial_seed(int64_t device) {
  return static_cast<int64_t>(default_generator(static_cast<c10::DeviceIndex>(device)).current_seed());
}

int64_t current_stream_id(int64_t device) {
  return Streams::get().current(static_cast<c10::DeviceIndex>(device)).id();
}

// What torch.<device>.synchronize() means, as in CUDA: all work of the device, every stream.
void synchronize_device(int64_t device) {
  check({{ p }}_device_synchronize(static_cast<int>(device)), "device_synchronize");
}

std::string build_info() { return {{ p }}_torch_build_info; }

}  // namespace

TORCH_LIBRARY({{ p }}, m) {
  m.def("device_count() -> int", &py_device_count);
  m.def("memory_stats(int device) -> int[]", &memory_stats);  // [allocated, peak] bytes
  m.def("reset_peak_memory_stats(int device) -> ()", &reset_peak_memory_stats);
  m.def("manual_seed(int seed, int device) -> ()", &manual_seed);
  m.def("initial_seed(int device) -> int", &initial_seed);
  m.def("current_stream_id(int device) -> int", &current_stream_id);
  m.def("synchronize(int device) -> ()", &synchronize_device);
  m.def("build_info() -> str", &build_info);
  // fallback_counts, reset_fallback_counts, skipped_kernels: fallback.cpp
}

}  // namespace torch_{{ p }}
