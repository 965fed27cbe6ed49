#include "runtime/caching_allocator.h"

#include <c10/util/Exception.h>
#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <map>
#include <mutex>

#include "runtime/device.h"
#include "runtime/streams.h"

namespace torch_{{ p }} {
namespace {

// A process forked after the device was initialised may not use it (the device library
// refuses there with a one-line reason): its copy of the cache is never handed out.
std::atomic<bool> g_forked_child{false};
const bool g_fork_handler = [] {
  pthread_atfork(nullptr, nullptr, [] { g_forked_child.store(true); });
  return true;
}();

struct PrivatePool;

struct Block {
  void* ptr;
  size_t size;       // the size class: what the device library allocated
  size_t requested;  // what the tensor asked for
  c10::DeviceIndex device;
  {{ p }}_stream_t stream;                 // allocated on: reused there without waiting
  std::vector<{{ p }}_stream_t> uses;      // other streams the block was recorded on
  std::vector<{{ p }}_event_t> events;     // recorded on those streams when it was freed
  PrivatePool* owner = nullptr;            // a graph's private pool, else the stream's cache
};

// A private pool of graph capture (begin_allocate_to_pool): its free blocks by size class.
struct PrivatePool {
  int graphs = 0;      // graphs that use it and have not released it
  int64_t blocks = 0;  // blocks held from the device library, free or not
  std::map<size_t, std::vector<Block*>> free;
};

// One device's blocks. Nothing here throws from a deleter's path: free() is noexcept.
class DevicePool {
 public:
  explicit DevicePool(c10::DeviceIndex device) : device_(device) {}

  Block* get(size_t nbytes, {{ p }}_stream_t stream) {
    const size_t size = block_size(nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    if (!pending_.empty()) collect_pending(false);
    PrivatePool* owner = capture_pool(stream);
    Block* block = nullptr;
    if (!g_forked_child.load(std::memory_order_relaxed))
      block = owner ? take_private(*owner, size) : take_cached(stream, size);
    if (block == nullptr) {
      block = fresh_block(size, nbytes, stream);
      block->owner = owner;
      if (owner) owner->blocks++;
    }
    block->requested = nbytes;
    stats_.allocated_bytes.add(static_cast<int64_t>(block->size));
    stats_.requested_bytes.add(static_cast<int64_t>(nbytes));
    stats_.allocation.add(1);
    return block;
  }

  void free(Block* block) noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.allocated_bytes.take(static_cast<int64_t>(block->size));
    stats_.requested_bytes.take(static_cast<int64_t>(block->requested));
    stats_.allocation.take(1);
    if (g_forked_child.load(std::memory_order_relaxed)) {
      {{ p }}_free(device_, block->ptr);  // (the parent's memory: the device library ignores it)
      delete block;
      return;
    }
    for ({{ p }}_stream_t s : block->uses) {
      {{ p }}_event_t e = nullptr;
      if ({{ p }}_event_create(device_, &e) != {{ NAME }}_OK || {{ p }}_event_record(e, s) != {{ NAME }}_OK) {
        if (e) {{ p }}_event_destroy(e);
        {{ p }}_stream_synchronize(s);  // no event to wait on: wait for the stream now
        continue;
      }
      block->events.push_back(e);
    }
    block->uses.clear();
    if (block->events.empty()) {
      cache(block);
    } else {
      pending_.push_back(block);
    }
  }

  void record_use(Block* block, {{ p }}_stream_t stream) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stream != block->stream && std::find(block->uses.begin(), block->uses.end(), stream) == block->uses.end())
      block->uses.push_back(stream);
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    release_cached();
  }

  MemoryStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  void begin_allocate_to_pool(PoolId id, {{ p }}_stream_t stream) {
    std::lock_guard<std::mutex> lock(mu_);
    PrivatePool& owner = private_pools_[id];  // made by its first graph
    owner.graphs++;
    capturing_.emplace_back(stream, &owner);
  }

  void end_allocate_to_pool({{ p }}_stream_t stream) {
    std::lock_guard<std::mutex> lock(mu_);
    capturing_.erase(std::remove_if(capturing_.begin(), capturing_.end(),
                                    [&](const auto& entry) { return entry.first == stream; }),
                     capturing_.end());
  }

  void release_pool(PoolId id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = private_pools_.find(id);
    if (it == private_pools_.end() || it->second.graphs == 0) return;
    if (--it->second.graphs == 0) release_private(it->second);
  }

  void reset_peaks() {
    std::lock_guard<std::mutex> lock(mu_);
    for (Counter* c : counters()) c->peak = c->current;
  }

  void reset_accumulated() {
    std::lock_guard<std::mutex> lock(mu_);
    for (Counter* c : counters()) c->allocated = c->freed = 0;
    stats_.num_alloc_retries = stats_.num_ooms = stats_.num_device_alloc = stats_.num_device_free = 0;
  }

 private:
  std::array<Counter*, 5> counters() {
    return {&stats_.allocated_bytes, &stats_.requested_bytes, &stats_.reserved_bytes, &stats_.allocation,
            &stats_.segment};
  }

  // A free block, reused by the next allocation of its size class on its stream (or in its
  // private pool; one no graph uses any more goes back to the device library).
  void cache(Block* block) {
    if (block->owner == nullptr) {
      cached_[{block->stream, block->size}].push_back(block);
      return;
    }
    PrivatePool& owner = *block->owner;
    owner.free[block->size].push_back(block);
    if (owner.graphs == 0) release_private(owner);
  }

  PrivatePool* capture_pool({{ p }}_stream_t stream) {
    for (const auto& entry : capturing_)
      if (entry.first == stream) return entry.second;
    return nullptr;
  }

  static Block* take_private(PrivatePool& owner, size_t size) {
    auto it = owner.free.find(size);
    if (it == owner.free.end() || it->second.empty()) return nullptr;
    Block* block = it->second.back();
    it->second.pop_back();
    return block;
  }

  // Gives a pool no graph uses its free blocks' memory back; the pool goes once it holds none.
  void release_private(PrivatePool& owner) {
    for (auto& entry : owner.free) {
      for (Block* block : entry.second) {
        give_back(block);
        owner.blocks--;
      }
    }
    owner.free.clear();
    if (owner.blocks > 0) return;  // tensors still hold some: they come back through cache()
    for (auto it = private_pools_.begin(); it != private_pools_.end(); ++it) {
      if (&it->second == &owner) {
        private_pools_.erase(it);
        return;
      }
    }
  }

  // The device library keeps the memory from reuse until work queued on it has run.
  void give_back(Block* block) {
    {{ p }}_free(device_, block->ptr);
    stats_.num_device_free++;
    stats_.reserved_bytes.take(static_cast<int64_t>(block->size));
    stats_.segment.take(1);
    delete block;
  }

  Block* take_cached({{ p }}_stream_t stream, size_t size) {
    auto it = cached_.find({stream, size});
    if (it == cached_.end() || it->second.empty()) return nullptr;
    Block* block = it->second.back();
    it->second.pop_back();
    return block;
  }

  Block* fresh_block(size_t size, size_t nbytes, {{ p }}_stream_t stream) {
    void* ptr = nullptr;
    {{ p }}_status_t st = {{ p }}_malloc(device_, &ptr, size);
    stats_.num_device_alloc++;
    if (st == {{ NAME }}_ERROR_OUT_OF_MEMORY && stats_.segment.current > stats_.allocation.current) {
      release_cached();  // what is cached but unused goes back, then once more
      st = {{ p }}_malloc(device_, &ptr, size);
      stats_.num_device_alloc++;
      if (st == {{ NAME }}_OK) stats_.num_alloc_retries++;
    }
    if (st == {{ NAME }}_ERROR_OUT_OF_MEMORY) {
      stats_.num_ooms++;
      size_t total = 0, free_bytes = 0;
      {{ p }}_mem_info(device_, &total, &free_bytes);
      TORCH_CHECK_WITH(OutOfMemoryError, false, "{{ device_type }}:", static_cast<int>(device_),
                       " out of memory: tried to allocate ", nbytes, " bytes with ", free_bytes, " of ", total,
                       " bytes free; tensors hold ", stats_.allocated_bytes.current,
                       " bytes ({{ NAME }}_MEMORY_MB sets the capacity)");
    }
    check(st, "malloc");
    stats_.reserved_bytes.add(static_cast<int64_t>(size));
    stats_.segment.add(1);
    return new Block{ptr, size, nbytes, device_, stream, {}, {}};
  }

  // Moves blocks whose other streams are done with them into the cache; `wait`: waits for them.
  void collect_pending(bool wait) {
    auto done = [&](Block* block) {
      for ({{ p }}_event_t e : block->events) {
        const {{ p }}_status_t st = wait ? {{ p }}_event_synchronize(e) : {{ p }}_event_query(e);
        // UNSUPPORTED: the event's stream captures a graph, and what it ran before is unknown
        // until the capture ends. (Another error is one of that work: it has ended.)
        if (st == {{ NAME }}_ERROR_NOT_READY || st == {{ NAME }}_ERROR_UNSUPPORTED) return false;
      }
      for ({{ p }}_event_t e : block->events) {{ p }}_event_destroy(e);
      block->events.clear();
      cache(block);
      return true;
    };
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(), done), pending_.end());
  }

  void release_cached() {
    collect_pending(true);
    for (auto& entry : cached_)
      for (Block* block : entry.second) give_back(block);
    cached_.clear();  // (private pools keep theirs: their graphs replay into them)
  }

  const c10::DeviceIndex device_;
  std::mutex mu_;
  std::map<std::pair<{{ p }}_stream_t, size_t>, std::vector<Block*>> cached_;  // (stream, size) -> free blocks
  std::vector<Block*> pending_;  // freed, waiting for events on other streams
  std::map<PoolId, PrivatePool> private_pools_;  // (std::map: a pool's address is stable)
  std::vector<std::pair<{{ p }}_stream_t, PrivatePool*>> capturing_;  // streams allocating to a pool
  MemoryStats stats_;
};

constexpr int kMaxDevices = 64;

DevicePool& pool(c10::DeviceIndex device) {
  static std::array<std::atomic<DevicePool*>, kMaxDevices> pools{};  // leaked: tensors outlive exit
  TORCH_CHECK(device >= 0 && device < kMaxDevices, "{{ device_type }}:", static_cast<int>(device), " does not exist");
  DevicePool* p = pools[device].load(std::memory_order_acquire);
  if (p == nullptr) {
    auto* fresh = new DevicePool(device);
    if (pools[device].compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) {
      p = fresh;
    } else {
      delete fresh;  // another thread made it first
    }
  }
  return *p;
}

void free_block(void* ctx) {
  auto* block = static_cast<Block*>(ctx);
  pool(block->device).free(block);
}

template <class Fn>
void for_each_pool(Fn fn) {
  int n = 0;
  if ({{ p }}_device_count(&n) != {{ NAME }}_OK) return;
  for (int d = 0; d < n && d < kMaxDevices; ++d) fn(pool(static_cast<c10::DeviceIndex>(d)));
}

}  // namespace

size_t block_size(size_t nbytes) {
  constexpr size_t kStep = 512, kSmall = size_t{1} << 20;
  if (nbytes <= kSmall) return std::max<size_t>(kStep, (nbytes + kStep - 1) / kStep * kStep);
  size_t power = kSmall;
  while (power <= nbytes / 2) power *= 2;  // the largest power of two <= nbytes
  const size_t step = power / 8;
  return (nbytes + step - 1) / step * step;
}

std::vector<std::pair<std::string, int64_t>> MemoryStats::named() const {
  std::vector<std::pair<std::string, int64_t>> out;
  auto counter = [&](const std::string& name, const Counter& c) {
    out.emplace_back(name + ".all.current", c.current);
    out.emplace_back(name + ".all.peak", c.peak);
    out.emplace_back(name + ".all.allocated", c.allocated);
    out.emplace_back(name + ".all.freed", c.freed);
  };
  counter("allocated_bytes", allocated_bytes);
  counter("requested_bytes", requested_bytes);
  counter("reserved_bytes", reserved_bytes);
  counter("allocation", allocation);
  counter("segment", segment);
  out.emplace_back("num_alloc_retries", num_alloc_retries);
  out.emplace_back("num_ooms", num_ooms);
  out.emplace_back("num_device_alloc", num_device_alloc);
  out.emplace_back("num_device_free", num_device_free);
  return out;
}

c10::DataPtr CachingAllocator::allocate(size_t nbytes) {
  const c10::DeviceIndex device = current_index();
  if (nbytes == 0) return c10::DataPtr(nullptr, device_of(device));
  const {{ p }}_stream_t stream = Streams::get().handle(Streams::get().current(device));
  Block* block = pool(device).get(nbytes, stream);
  return c10::DataPtr(block->ptr, block, &free_block, device_of(device));
}

void CachingAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  check({{ p }}_memcpy(dest, src, count, {{ NAME }}_COPY_DEVICE_TO_DEVICE), "memcpy");
}

void CachingAllocator::emptyCache(std::pair<unsigned long long, unsigned long long>) {
  for_each_pool([](DevicePool& p) { p.empty_cache(); });
}

void CachingAllocator::recordStream(const c10::DataPtr& data, c10::Stream stream) {
  if (data.get_deleter() != &free_block) return;  // not one of our blocks (an empty tensor's)
  auto* block = static_cast<Block*>(data.get_context());
  pool(block->device).record_use(block, Streams::get().handle(stream));
}

void CachingAllocator::resetAccumulatedStats(c10::DeviceIndex device) { pool(device).reset_accumulated(); }

void CachingAllocator::resetPeakStats(c10::DeviceIndex device) { pool(device).reset_peaks(); }

std::pair<size_t, size_t> CachingAllocator::getMemoryInfo(c10::DeviceIndex device) {
  check_index(device);
  size_t total = 0, free_bytes = 0;
  check({{ p }}_mem_info(device, &total, &free_bytes), "mem_info");
  return {free_bytes, total};
}

void begin_allocate_to_pool(c10::DeviceIndex device, PoolId id, {{ p }}_stream_t stream) {
  pool(device).begin_allocate_to_pool(id, stream);
}

void end_allocate_to_pool(c10::DeviceIndex device, {{ p }}_stream_t stream) {
  pool(device).end_allocate_to_pool(stream);
}

void release_pool(c10::DeviceIndex device, PoolId id) { pool(device).release_pool(id); }

MemoryStats CachingAllocator::stats(c10::DeviceIndex device) {
  check_index(device);
  return pool(device).stats();
}

#if {{ NAME }}_DEVICE_ALLOCATOR
c10::CachingDeviceAllocator::DeviceStats CachingAllocator::getDeviceStats(c10::DeviceIndex device) {
  const MemoryStats s = stats(device);
  c10::CachingDeviceAllocator::DeviceStats out;
  const auto all = static_cast<size_t>(c10::CachingDeviceAllocator::StatType::AGGREGATE);
  auto fill = [&](c10::CachingDeviceAllocator::StatArray& to, const Counter& from) {
    to[all].current = from.current;
    to[all].peak = from.peak;
    to[all].allocated = from.allocated;
    to[all].freed = from.freed;
  };
  fill(out.allocated_bytes, s.allocated_bytes);
  fill(out.requested_bytes, s.requested_bytes);
  fill(out.reserved_bytes, s.reserved_bytes);
  fill(out.active_bytes, s.allocated_bytes);
  fill(out.allocation, s.allocation);
  fill(out.active, s.allocation);
  fill(out.segment, s.segment);
  out.num_alloc_retries = s.num_alloc_retries;
  out.num_ooms = s.num_ooms;
  out.num_device_alloc = s.num_device_alloc;
  out.num_device_free = s.num_device_free;
  return out;
}
#endif

CachingAllocator& caching_allocator() {
  static CachingAllocator* allocator = new CachingAllocator();  // leaked: tensors outlive exit
  return *allocator;
}

namespace {
const bool g_allocator_registered = [] {
  c10::SetAllocator(c10::DeviceType::PrivateUse1, &caching_allocator());
  return true;
}();
}  // namespace

}  // namespace torch_{{ p }}
