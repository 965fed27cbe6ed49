// The {{ device_type }} device allocator: a stream-ordered cache of device memory, like the
// one CUDA's PyTorch backend has, so that allocating a tensor does not reach the device
// library once a block of its size has been used on its stream.
//
// Each block is one allocation of the device library, rounded up to a size class (512-byte
// steps up to 1 MiB, then eight classes per power of two): a fault on opaque memory names
// the block. A freed block is reused by the next allocation of its size class on the stream
// it was allocated on; work queued there runs in order, so no wait is needed. A block also
// used on other streams (tensor.record_stream, recordDataPtrOnStream) is reused only once
// events recorded on those streams at its free have completed. When the device library runs
// out of memory, the cache is released and the allocation tried once more.
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Stream.h>
#include <torch/version.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "{{ p }}_device.h"

// Since torch 2.9 an allocator can be a c10::DeviceAllocator: torch.accelerator's
// memory_stats, memory_allocated, reset_peak_memory_stats and empty_cache reach it.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 9)
#include <c10/core/CachingDeviceAllocator.h>
#define {{ NAME }}_DEVICE_ALLOCATOR 1
#define {{ NAME }}_DEVICE_ALLOCATOR_OVERRIDE override
#else
#define {{ NAME }}_DEVICE_ALLOCATOR 0
#define {{ NAME }}_DEVICE_ALLOCATOR_OVERRIDE
#endif

namespace torch_{{ p }} {

// A current value with its peak and what was added and taken over time (c10's Stat).
struct Counter {
  int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void add(int64_t n) {
    current += n;
    allocated += n;
    if (current > peak) peak = current;
  }
  void take(int64_t n) {
    current -= n;
    freed += n;
  }
};

// What the allocator counts per device; torch.{{ device_type }}.memory_stats() names them as
// torch.cuda.memory_stats() does.
struct MemoryStats {
  Counter allocated_bytes;  // blocks in use by tensors (their size classes)
  Counter requested_bytes;  // what those tensors asked for
  Counter reserved_bytes;   // held from the device library: in use and cached
  Counter allocation;       // blocks in use
  Counter segment;          // blocks held from the device library
  int64_t num_alloc_retries = 0;  // device allocations that succeeded after emptying the cache
  int64_t num_ooms = 0;           // allocations that failed even then
  int64_t num_device_alloc = 0;   // calls of {{ p }}_malloc
  int64_t num_device_free = 0;    // calls of {{ p }}_free

  // (name, value) pairs in torch.cuda.memory_stats() keys
  std::vector<std::pair<std::string, int64_t>> named() const;
};

#if {{ NAME }}_DEVICE_ALLOCATOR
using AllocatorBase = c10::DeviceAllocator;
#else
using AllocatorBase = c10::Allocator;
#endif

class CachingAllocator final : public AllocatorBase {
 public:
  c10::DataPtr allocate(size_t nbytes) override;
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }  // blocks carry a context
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  bool initialized() {{ NAME }}_DEVICE_ALLOCATOR_OVERRIDE { return true; }
  // Gives every cached block back to the device library (waiting for blocks whose other
  // streams have not finished with them).
  void emptyCache(std::pair<unsigned long long, unsigned long long> pool = {0, 0}) {{ NAME }}_DEVICE_ALLOCATOR_OVERRIDE;
  void recordStream(const c10::DataPtr& data, c10::Stream stream) {{ NAME }}_DEVICE_ALLOCATOR_OVERRIDE;
  void resetAccumulatedStats(c10::DeviceIndex device) {{ NAME }}_DEVICE_ALLOCATOR_OVERRIDE;
  void resetPeakStats(c10::DeviceIndex device) {{ NAME }}_DEVICE_ALLOCATOR_OVERRIDE;
#if {{ NAME }}_DEVICE_ALLOCATOR
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override;
#endif
  // (free, total) bytes of the device as the device library counts them (what the cache holds
  // is not free): torch.accelerator.get_memory_info(). Not marked override: it overrides
  // c10::DeviceAllocator's where torch has one (2.13 does), and is a plain method elsewhere.
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device);

  MemoryStats stats(c10::DeviceIndex device);
};

CachingAllocator& caching_allocator();

// The size class a request of `nbytes` is served from.
size_t block_size(size_t nbytes);

// Graph capture's memory (runtime/graph.cpp), as CUDA's caching allocator keeps it: while
// `stream` captures, what is allocated on it comes from the private pool `pool` (shared by the
// graphs that name it). A private block serves only that pool's allocations and stays held from
// the device library until every graph using the pool released it and no tensor holds the
// block: a replay writes into it, and the device library refuses to replay into freed memory.
using PoolId = std::pair<unsigned long long, unsigned long long>;  // c10::MempoolId_t
void begin_allocate_to_pool(c10::DeviceIndex device, PoolId pool, {{ p }}_stream_t stream);
void end_allocate_to_pool(c10::DeviceIndex device, {{ p }}_stream_t stream);
void release_pool(c10::DeviceIndex device, PoolId pool);

}  // namespace torch_{{ p }}
