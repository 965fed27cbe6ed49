// Conformance, area memory: allocation and its accounting, copies in every direction (with
// offsets, asynchronous, between devices), the host's view of device memory.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "conformance.h"

CONFORMANCE_CASE("memory", allocation_accounting) {
  size_t total = 0, free0 = 0, free1 = 0, free2 = 0;
  REQUIRE_OK({{ p }}_mem_info(0, &total, &free0));
  EXPECT(total > 0 && free0 <= total);
  void* p = nullptr;
  REQUIRE_OK({{ p }}_malloc(0, &p, 1 << 20));
  EXPECT_OK({{ p }}_mem_info(0, &total, &free1));
  EXPECT(free0 - free1 >= (1u << 20));
  EXPECT_OK({{ p }}_free(0, p));
  EXPECT_OK({{ p }}_mem_info(0, &total, &free2));
  EXPECT(free2 == free0);
  EXPECT_STATUS({{ p }}_free(0, p), {{ NAME }}_ERROR_INVALID_VALUE);  // a double free is refused
  void* huge = nullptr;
  EXPECT_STATUS({{ p }}_malloc(0, &huge, total + 1), {{ NAME }}_ERROR_OUT_OF_MEMORY);
  EXPECT_STATUS({{ p }}_malloc(64, &huge, 16), {{ NAME }}_ERROR_INVALID_VALUE);  // no such device
}

CONFORMANCE_CASE("memory", statistics_and_owners) {
  size_t before = 0, peak = 0, after = 0;
  REQUIRE_OK({{ p }}_memory_stats(0, &before, &peak));
  void* p = nullptr;
  REQUIRE_OK({{ p }}_malloc(0, &p, 1000));
  EXPECT_OK({{ p }}_memory_stats(0, &after, &peak));
  EXPECT(after >= before + 1000 && peak >= after);
  int device = -1;
  EXPECT_OK({{ p }}_pointer_device(static_cast<char*>(p) + 999, &device));
  EXPECT(device == 0);
  EXPECT_STATUS({{ p }}_pointer_device(&device, &device), {{ NAME }}_ERROR_INVALID_VALUE);  // host memory
  EXPECT_OK({{ p }}_free(0, p));
  EXPECT_OK({{ p }}_memory_stats(0, &after, &peak));
  EXPECT(after == before);
  EXPECT_OK({{ p }}_memory_reset_peak(0));
  EXPECT_OK({{ p }}_memory_stats(0, &after, &peak));
  EXPECT(peak == after);
}

CONFORMANCE_CASE("memory", copies_round_trip) {
  std::vector<float> host(1000), back(1000, 0.f);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f;
  const size_t bytes = host.size() * sizeof(float);
  Dev<float> a(host.size()), b(host.size());
  REQUIRE(a.ptr() && b.ptr());
  EXPECT_OK({{ p }}_memcpy(a.ptr(), host.data(), bytes, {{ NAME }}_COPY_HOST_TO_DEVICE));
  EXPECT_OK({{ p }}_memcpy(b.ptr(), a.ptr(), bytes, {{ NAME }}_COPY_DEVICE_TO_DEVICE));
  EXPECT_OK({{ p }}_memcpy(back.data(), b.ptr(), bytes, {{ NAME }}_COPY_DEVICE_TO_HOST));
  EXPECT(std::memcmp(host.data(), back.data(), bytes) == 0);
  {{ p }}_stream_t s = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  std::fill(back.begin(), back.end(), 0.f);
  EXPECT_OK({{ p }}_memset(0, b.ptr(), 0, bytes));
  EXPECT_OK({{ p }}_memcpy_async(s, b.ptr(), a.ptr(), bytes, {{ NAME }}_COPY_DEVICE_TO_DEVICE));
  EXPECT_OK({{ p }}_memcpy_async(s, back.data(), b.ptr(), bytes, {{ NAME }}_COPY_DEVICE_TO_HOST));
  EXPECT_OK({{ p }}_stream_synchronize(s));
  EXPECT(std::memcmp(host.data(), back.data(), bytes) == 0);
  EXPECT_OK({{ p }}_stream_destroy(s));
}

CONFORMANCE_CASE("memory", copies_with_offsets) {
  Dev<float> a(std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}), b(8);
  EXPECT_OK({{ p }}_memset(0, b.ptr(), 0, 32));
  EXPECT_OK({{ p }}_memcpy(b.ptr() + 2, a.ptr() + 4, 3 * sizeof(float), {{ NAME }}_COPY_DEVICE_TO_DEVICE));
  EXPECT((b.host() == std::vector<float>{0, 0, 4, 5, 6, 0, 0, 0}));
  std::vector<float> host(2, -1.f);
  {{ p }}_stream_t s = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  EXPECT_OK({{ p }}_memcpy_async(s, host.data(), a.ptr() + 6, 2 * sizeof(float), {{ NAME }}_COPY_DEVICE_TO_HOST));
  EXPECT_OK({{ p }}_stream_synchronize(s));
  EXPECT_OK({{ p }}_stream_destroy(s));
  EXPECT((host == std::vector<float>{6, 7}));
  // a host pointer is no device pointer
  EXPECT_STATUS({{ p }}_memcpy(b.ptr(), host.data(), 4, {{ NAME }}_COPY_DEVICE_TO_DEVICE), {{ NAME }}_ERROR_INVALID_VALUE);
}

// Sizes the device cannot hold are refused, never wrapped: an allocation of nearly SIZE_MAX
// bytes (rounding it up to the alignment would wrap to a small block) is out of memory, with
// words; a copy or fill whose size runs past its allocation (ptr + size wrapping past the
// address space's end included) is an invalid value, not a fault.
CONFORMANCE_CASE("memory", sizes_that_wrap_are_refused) {
  const size_t max = std::numeric_limits<size_t>::max();
  for (size_t size : {max, max - 1, max - 63}) {
    void* p = nullptr;
    EXPECT_STATUS({{ p }}_malloc(0, &p, size), {{ NAME }}_ERROR_OUT_OF_MEMORY);
    EXPECT(p == nullptr);
    EXPECT(std::string({{ p }}_error_detail()).find("bytes") != std::string::npos);
  }
  Dev<float> a(std::vector<float>(16, 1.f)), b(16);
  REQUIRE(a.ptr() && b.ptr());
  std::vector<float> host(16, 0.f);
  // past the block by one byte; past the end of the address space (wraps to below `a`)
  const size_t wrapping = max - reinterpret_cast<uintptr_t>(a.ptr()) + 2;
  for (size_t size : {16 * sizeof(float) + 65, wrapping, max}) {
    EXPECT_STATUS({{ p }}_memcpy(b.ptr(), a.ptr(), size, {{ NAME }}_COPY_DEVICE_TO_DEVICE), {{ NAME }}_ERROR_INVALID_VALUE);
    EXPECT_STATUS({{ p }}_memcpy(host.data(), a.ptr(), size, {{ NAME }}_COPY_DEVICE_TO_HOST), {{ NAME }}_ERROR_INVALID_VALUE);
    EXPECT_STATUS({{ p }}_memcpy(a.ptr(), host.data(), size, {{ NAME }}_COPY_HOST_TO_DEVICE), {{ NAME }}_ERROR_INVALID_VALUE);
    EXPECT_STATUS({{ p }}_memcpy_async(nullptr, host.data(), a.ptr(), size, {{ NAME }}_COPY_DEVICE_TO_HOST),
                  {{ NAME }}_ERROR_INVALID_VALUE);
    EXPECT_STATUS({{ p }}_memset(0, a.ptr(), 0, size), {{ NAME }}_ERROR_INVALID_VALUE);
    EXPECT_STATUS({{ p }}_memcpy_peer(b.ptr(), 0, a.ptr(), 0, size), {{ NAME }}_ERROR_INVALID_VALUE);
  }
  EXPECT_OK({{ p }}_device_synchronize(0));
  EXPECT(a.host() == std::vector<float>(16, 1.f));  // nothing was written
}

// Two devices: separate accounting, copies only between pointers of the copying device, and
// the peer copy between devices.
CONFORMANCE_CASE("memory", devices_and_peer_copies) {
  int count = 0;
  REQUIRE_OK({{ p }}_device_count(&count));
  if (count < 2) return;  // one device: nothing more to check
  size_t total = 0, free1_before = 0, free1_after = 0;
  EXPECT_OK({{ p }}_mem_info(1, &total, &free1_before));
  std::vector<float> host(256), back(256, 0.f);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  const size_t bytes = host.size() * sizeof(float);
  Dev<float> d0(host.size());
  EXPECT_OK({{ p }}_mem_info(1, &total, &free1_after));
  EXPECT(free1_after == free1_before);  // device 0's allocation is not device 1's
  Dev<float> d1(host.size(), 0.f, 1);
  REQUIRE(d0.ptr() && d1.ptr());
  int owner = -1;
  EXPECT_OK({{ p }}_pointer_device(d1.ptr() + 2, &owner));
  EXPECT(owner == 1);
  EXPECT_OK({{ p }}_memcpy(d0.ptr(), host.data(), bytes, {{ NAME }}_COPY_HOST_TO_DEVICE));
  EXPECT_STATUS({{ p }}_memcpy(d1.ptr(), d0.ptr(), bytes, {{ NAME }}_COPY_DEVICE_TO_DEVICE), {{ NAME }}_ERROR_INVALID_VALUE);
  {{ p }}_stream_t s0 = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s0));
  EXPECT_STATUS({{ p }}_memcpy_async(s0, back.data(), d1.ptr(), bytes, {{ NAME }}_COPY_DEVICE_TO_HOST),
                {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_STATUS({{ p }}_memcpy_async(s0, back.data(), host.data(), bytes, {{ NAME }}_COPY_DEVICE_TO_HOST),
                {{ NAME }}_ERROR_INVALID_VALUE);  // a host pointer is no device pointer
  EXPECT_OK({{ p }}_memcpy_peer(d1.ptr(), 1, d0.ptr(), 0, bytes));
  EXPECT(d1.host() == host);
  EXPECT_STATUS({{ p }}_memcpy_peer(d1.ptr(), 0, d0.ptr(), 0, bytes), {{ NAME }}_ERROR_INVALID_VALUE);  // d1 is not device 0's
  EXPECT_STATUS({{ p }}_free(0, d1.ptr()), {{ NAME }}_ERROR_INVALID_VALUE);                       // nor freed there
  EXPECT_OK({{ p }}_stream_destroy(s0));
}

// Memory freed while queued work still uses it does not become another allocation's before
// that work ran: a fill queued behind a sleep on one stream, the memory freed and allocated
// again, filled on a second stream -- the first fill must not land in the new allocation.
CONFORMANCE_CASE("memory", freed_memory_waits_for_queued_work) {
  const int ms = 300;
  {{ p }}_stream_t s1 = nullptr, s2 = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s1));
  REQUIRE_OK({{ p }}_stream_create(0, &s2));
  void *a = nullptr, *b = nullptr;
  size_t allocated = 0, peak = 0, before = 0;
  REQUIRE_OK({{ p }}_memory_stats(0, &before, &peak));
  REQUIRE_OK({{ p }}_malloc(0, &a, 4096));
  EXPECT_OK({{ p }}_launch_host_func(s1, conformance::sleep_ms, conformance::millis(ms)));
  EXPECT_OK({{ p }}_fill(s1, {{ NAME }}_FLOAT32, a, 1024, 3.0));  // still queued behind the sleep
  EXPECT_OK({{ p }}_free(0, a));
  EXPECT_OK({{ p }}_memory_stats(0, &allocated, &peak));
  EXPECT(allocated == before);  // freed for the accounting at once
  REQUIRE_OK({{ p }}_malloc(0, &b, 4096));
  EXPECT_OK({{ p }}_fill(s2, {{ NAME }}_FLOAT32, b, 1024, 7.0));
  EXPECT_OK({{ p }}_stream_synchronize(s2));
  EXPECT_OK({{ p }}_device_synchronize(0));  // the first fill has run now
  std::vector<float> back(1024, 0.f);
  EXPECT_OK({{ p }}_memcpy(back.data(), b, 4096, {{ NAME }}_COPY_DEVICE_TO_HOST));
  EXPECT(back == std::vector<float>(1024, 7.f));
  EXPECT_OK({{ p }}_free(0, b));
  EXPECT_OK({{ p }}_stream_destroy(s1));
  EXPECT_OK({{ p }}_stream_destroy(s2));
}

// The host cannot read device memory: a read through a device pointer ends the process (unless
// the device's memory is host-visible, a debugging mode).
CONFORMANCE_CASE("memory", host_reads_of_device_memory_fault) {
  Dev<float> x(16, 1.f);
  REQUIRE(x.ptr());
  const conformance::ChildResult child = conformance::in_child([&] {
    volatile float v = x.ptr()[3];  // the bug: the host reads device memory
    (void)v;
    return 0;
  });
  if (conformance::host_visible_memory()) {
    EXPECT(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0);
  } else {
    EXPECT(WIFSIGNALED(child.status));
  }
}
