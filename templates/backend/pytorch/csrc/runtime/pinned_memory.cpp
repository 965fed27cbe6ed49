#include "runtime/pinned_memory.h"

#include <c10/core/CPUAllocator.h>

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
class PinnedMemoryAllocator final : public at::Allocator {
 public:
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
