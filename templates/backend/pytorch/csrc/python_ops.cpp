// The ops torch_{{ p }} calls from Python (torch.ops.{{ p }}.*): devices, memory, seeds, streams
// and the build this library is; fallback_counts, reset_fallback_counts and skipped_kernels
// are in fallback.cpp.
#include <torch/library.h>
#include <torch/version.h>

#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/caching_allocator.h"
#include "runtime/device.h"
#include "runtime/generator.h"
#include "runtime/streams.h"

namespace torch_{{ p }} {

// What devkit check-abi reads from the binary (strings / pyelftools): the torch
// release and C++ ABI this library is compiled for. `used` keeps it through linking.
extern "C" __attribute__((used, visibility("default"))) const char {{ p }}_torch_build_info[] =
    "{{ p }}-torch-build: torch=" {{ NAME }}_TORCH_VERSION " cxx11_abi=" C10_STRINGIZE({{ NAME }}_TORCH_CXX11_ABI)
    " plugin=" {{ NAME }}_PLUGIN_VERSION;

namespace {

int64_t py_device_count() { return device_count(); }

// The caching allocator's counters (torch.cuda.memory_stats() keys), as names and values.
std::tuple<std::vector<std::string>, std::vector<int64_t>> memory_stats(int64_t device) {
  std::vector<std::string> names;
  std::vector<int64_t> values;
  for (auto& [name, value] : caching_allocator().stats(static_cast<c10::DeviceIndex>(device)).named()) {
    names.push_back(name);
    values.push_back(value);
  }
  return {names, values};
}

void reset_peak_memory_stats(int64_t device) {
  check_index(static_cast<c10::DeviceIndex>(device));
  caching_allocator().resetPeakStats(static_cast<c10::DeviceIndex>(device));
}

void reset_accumulated_memory_stats(int64_t device) {
  check_index(static_cast<c10::DeviceIndex>(device));
  caching_allocator().resetAccumulatedStats(static_cast<c10::DeviceIndex>(device));
}

void empty_cache() { caching_allocator().emptyCache(); }

// [free, total] bytes of the device (the device library's view: what the cache holds is not free).
std::vector<int64_t> mem_get_info(int64_t device) {
  const auto [free_bytes, total] = caching_allocator().getMemoryInfo(static_cast<c10::DeviceIndex>(device));
  return {static_cast<int64_t>(free_bytes), static_cast<int64_t>(total)};
}

void manual_seed(int64_t seed, int64_t device) {
  auto gen = default_generator(static_cast<c10::DeviceIndex>(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(static_cast<uint64_t>(seed));
}

int64_t initial_seed(int64_t device) {
  return static_cast<int64_t>(default_generator(static_cast<c10::DeviceIndex>(device)).current_seed());
}

// A fresh non-deterministic seed for the device's generator; returns it.
int64_t seed(int64_t device) {
  auto gen = default_generator(static_cast<c10::DeviceIndex>(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  return static_cast<int64_t>(gen.seed());
}

// The default generator's state as a CPU uint8 tensor (what torch.cuda.get_rng_state gives):
// setting it back makes the device draw the same numbers again.
at::Tensor get_rng_state(int64_t device) {
  auto gen = default_generator(static_cast<c10::DeviceIndex>(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_rng_state(const at::Tensor& state, int64_t device) {
  auto gen = default_generator(static_cast<c10::DeviceIndex>(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);  // checks the state's dtype and size (c10::Error naming them)
}

int64_t current_stream_id(int64_t device) {
  return Streams::get().current(static_cast<c10::DeviceIndex>(device)).id();
}

// The device library's id of a torch stream: what its op trace prints as stream=<id>.
int64_t library_stream_id(int64_t device, int64_t stream_id) {
  const c10::Stream stream(c10::Stream::UNSAFE, device_of(static_cast<c10::DeviceIndex>(device)), stream_id);
  uint64_t id = 0;
  check({{ p }}_stream_get_id(Streams::get().handle(stream), &id), "stream_get_id");
  return static_cast<int64_t>(id);
}

// What torch.<device>.synchronize() means, as in CUDA: all work of the device, every stream.
void synchronize_device(int64_t device) {
  check({{ p }}_device_synchronize(static_cast<int>(device)), "device_synchronize");
}

std::string build_info() { return {{ p }}_torch_build_info; }

// The device library's API version: torch.{{ device_type }}.get_device_capability()'s major
// (the device has no compute capability of its own; Paddle's get_compute_capability says the same).
int64_t device_api_version() { return {{ NAME }}_DEVICE_API_VERSION; }

}  // namespace

TORCH_LIBRARY({{ p }}, m) {
  m.def("device_count() -> int", &py_device_count);
  m.def("memory_stats(int device) -> (str[], int[])", &memory_stats);
  m.def("reset_peak_memory_stats(int device) -> ()", &reset_peak_memory_stats);
  m.def("reset_accumulated_memory_stats(int device) -> ()", &reset_accumulated_memory_stats);
  m.def("empty_cache() -> ()", &empty_cache);
  m.def("mem_get_info(int device) -> int[]", &mem_get_info);
  m.def("manual_seed(int seed, int device) -> ()", &manual_seed);
  m.def("initial_seed(int device) -> int", &initial_seed);
  m.def("seed(int device) -> int", &seed);
  m.def("get_rng_state(int device) -> Tensor", &get_rng_state);
  m.def("set_rng_state(Tensor state, int device) -> ()", &set_rng_state);
  m.def("current_stream_id(int device) -> int", &current_stream_id);
  m.def("library_stream_id(int device, int stream_id) -> int", &library_stream_id);
  m.def("synchronize(int device) -> ()", &synchronize_device);
  m.def("build_info() -> str", &build_info);
  m.def("device_api_version() -> int", &device_api_version);
}

}  // namespace torch_{{ p }}
