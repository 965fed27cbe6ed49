#include "runtime/pinned_memory.h"

#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

// Since torch 2.9 a device's pinned allocator is also its at::HostAllocator, which
// torch.accelerator.empty_host_cache() (and so torch.accelerator.Graph's `with`) calls: with none
// registered, torch calls through a null pointer.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 9)
#include <ATen/core/CachingHostAllocator.h>
#define {{ NAME }}_HOST_ALLOCATOR 1
#else
#define {{ NAME }}_HOST_ALLOCATOR 0
#endif

#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>

namespace torch_{{ p }} {
namespace {

// Live pinned blocks: start address -> size in bytes.
struct PinnedBlocks {
  std::mutex mu;
  std::map<std::uintptr_t, size_t> blocks;
};

PinnedBlocks& pinned_blocks() {
  static auto* blocks = new PinnedBlocks();  // leaked: pinned tensors may outlive exit
  return *blocks;
}

struct PinnedBlock {
  c10::DataPtr host;  // the CPU allocator's memory, freed with this block
};

void free_pinned(void* ctx) {
  auto* block = static_cast<PinnedBlock*>(ctx);
  {
    PinnedBlocks& live = pinned_blocks();
    std::lock_guard<std::mutex> lock(live.mu);
    live.blocks.erase(reinterpret_cast<std::uintptr_t>(block->host.get()));
  }
  delete block;
}

// CPU tensors (the device is c10::kCPU) whose memory the registry knows.
#if {{ NAME }}_HOST_ALLOCATOR
class PinnedMemoryAllocator final : public at::HostAllocator {
 public:
  // Nothing is cached (a block goes back at its free) and so nothing waits for a stream.
  bool record_event(void* ptr, void* ctx, c10::Stream stream) override { return true; }
  void empty_cache() override {}
  at::HostStats get_stats() override { return {}; }
  void reset_accumulated_stats() override {}
  void reset_peak_stats() override {}
#else
class PinnedMemoryAllocator final : public at::Allocator {
 public:
#endif
  c10::DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return c10::DataPtr(nullptr, c10::Device(c10::kCPU));
    auto* block = new PinnedBlock{c10::GetCPUAllocator()->allocate(nbytes)};
    void* data = block->host.get();
    {
      PinnedBlocks& live = pinned_blocks();
      std::lock_guard<std::mutex> lock(live.mu);
      live.blocks[reinterpret_cast<std::uintptr_t>(data)] = nbytes;
    }
    return c10::DataPtr(data, block, &free_pinned, c10::Device(c10::kCPU));
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }  // blocks carry a context
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }
};

}  // namespace

at::Allocator* pinned_memory_allocator() {
  static auto* allocator = new PinnedMemoryAllocator();  // leaked, as the blocks' registry
  return allocator;
}

#if {{ NAME }}_HOST_ALLOCATOR
namespace {
const bool g_host_allocator_registered = [] {
  at::setHostAllocator(c10::DeviceType::PrivateUse1, static_cast<at::HostAllocator*>(pinned_memory_allocator()));
  return true;
}();
}  // namespace
#endif

bool is_pinned_ptr(const void* ptr) {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  PinnedBlocks& live = pinned_blocks();
  std::lock_guard<std::mutex> lock(live.mu);
  auto after = live.blocks.upper_bound(address);  // the first block starting past `ptr`
  if (after == live.blocks.begin()) return false;
  const auto& [start, size] = *std::prev(after);
  return address < start + size;
}

}  // namespace torch_{{ p }}
