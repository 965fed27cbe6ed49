// Conformance, area launch: compiled kernels ({{ p }}_launch_kernel), what torch.compile's
// generated code runs on the device. The kernel gets the library's views of device memory and
// copies of its values, runs on the stream's worker in order with ops, and later than the call.
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "conformance.h"
#include "device_buffer.h"

namespace launch_area {

// out[i] = in[i] * scale + offset (a float, a double), for i < n (an int64): what Inductor's
// C++ kernels look like behind their entry point.
void axpb(void* const* args) {
  const float* in = static_cast<const float*>(args[0]);
  float* out = static_cast<float*>(args[1]);
  const int64_t n = *static_cast<const int64_t*>(args[2]);
  const float scale = *static_cast<const float*>(args[3]);
  const double offset = *static_cast<const double*>(args[4]);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i] * scale + offset);
}

std::atomic<int> g_runs{0};
void count(void* const*) { g_runs.fetch_add(1); }

{{ p }}_kernel_arg_t buffer(void* p) {
  {{ p }}_kernel_arg_t a{};
  a.kind = {{ NAME }}_KERNEL_ARG_BUFFER;
  a.value.buffer = p;
  return a;
}

std::vector<{{ p }}_kernel_arg_t> axpb_args(const float* in, float* out, int64_t n, float scale, double offset) {
  std::vector<{{ p }}_kernel_arg_t> args = {buffer(const_cast<float*>(in)), buffer(out), {}, {}, {}};
  args[2].kind = {{ NAME }}_KERNEL_ARG_INT64;
  args[2].value.i64 = n;
  args[3].kind = {{ NAME }}_KERNEL_ARG_FLOAT32;
  args[3].value.f32 = scale;
  args[4].kind = {{ NAME }}_KERNEL_ARG_FLOAT64;
  args[4].value.f64 = offset;
  return args;
}

}  // namespace launch_area

// Device pointers reach the kernel as the library's views, values as copies; it runs between
// the ops queued before and after it on the stream.
CONFORMANCE_CASE("launch", kernel_runs_in_queue_order_on_device_memory) {
  {{ p }}_stream_t s = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  const int64_t n = 1000;
  Dev<float> x(n, 0.f), y(n, -1.f);
  EXPECT_OK({{ p }}_fill(s, {{ NAME }}_FLOAT32, x.ptr(), n, 2.0));  // before: the kernel reads 2
  std::vector<{{ p }}_kernel_arg_t> args = launch_area::axpb_args(x.ptr(), y.ptr(), n, 3.f, 0.5);
  EXPECT_OK({{ p }}_launch_kernel(s, "axpb", launch_area::axpb, args.data(), args.size()));
  args[3].value.f32 = 100.f;  // the call copied its values: changing them now changes nothing
  EXPECT_OK({{ p }}_scale(s, {{ NAME }}_FLOAT32, y.ptr(), y.ptr(), n, 2.0, 0.0, 1));  // after: doubles 6.5
  EXPECT_OK({{ p }}_stream_synchronize(s));
  const std::vector<float> back = y.host();
  EXPECT(!back.empty() && back[0] == 13.f && back[n - 1] == 13.f);
  EXPECT_OK({{ p }}_stream_destroy(s));
}

// A launch returns before the kernel runs (unless {{ NAME }}_SYNC): synchronising waits for it.
CONFORMANCE_CASE("launch", kernel_runs_later_than_the_call) {
  {{ p }}_stream_t s = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s));
  const int ms = 200;
  launch_area::g_runs = 0;
  EXPECT_OK({{ p }}_launch_host_func(s, conformance::sleep_ms, conformance::millis(ms)));
  EXPECT_OK({{ p }}_launch_kernel(s, "count", launch_area::count, nullptr, 0));
  if (!conformance::synchronous_mode()) EXPECT(launch_area::g_runs.load() == 0);
  EXPECT_OK({{ p }}_stream_synchronize(s));
  EXPECT(launch_area::g_runs.load() == 1);
  EXPECT_OK({{ p }}_stream_destroy(s));
}

// Bad launches are refused at the call: host memory or another device's memory as a buffer,
// no entry point, a name that is no identifier, an unknown argument kind.
CONFORMANCE_CASE("launch", bad_launches_refused) {
  std::vector<float> host(16, 1.f);
  Dev<float> y(16);
  std::vector<{{ p }}_kernel_arg_t> args = launch_area::axpb_args(host.data(), y.ptr(), 16, 1.f, 0.0);
  EXPECT_STATUS({{ p }}_launch_kernel(nullptr, "axpb", launch_area::axpb, args.data(), args.size()),
                {{ NAME }}_ERROR_INVALID_VALUE);
  int devices = 0;
  EXPECT_OK({{ p }}_device_count(&devices));
  if (devices > 1) {
    Dev<float> other(16, 0.f, 1);
    args = launch_area::axpb_args(other.ptr(), y.ptr(), 16, 1.f, 0.0);
    EXPECT_STATUS({{ p }}_launch_kernel(nullptr, "axpb", launch_area::axpb, args.data(), args.size()),
                  {{ NAME }}_ERROR_INVALID_VALUE);  // the default stream is device 0's
  }
  args = launch_area::axpb_args(y.ptr(), y.ptr(), 16, 1.f, 0.0);
  EXPECT_STATUS({{ p }}_launch_kernel(nullptr, "axpb", nullptr, args.data(), args.size()), {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_STATUS({{ p }}_launch_kernel(nullptr, "not a name", launch_area::axpb, args.data(), args.size()),
                {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_STATUS({{ p }}_launch_kernel(nullptr, nullptr, launch_area::axpb, args.data(), args.size()),
                {{ NAME }}_ERROR_INVALID_VALUE);
  args[2].kind = 7;
  EXPECT_STATUS({{ p }}_launch_kernel(nullptr, "axpb", launch_area::axpb, args.data(), args.size()),
                {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_OK({{ p }}_device_synchronize(0));  // nothing was queued, nothing failed
}

// Each stream has its own id (the op trace's stream=), NULL meaning the default stream.
CONFORMANCE_CASE("launch", stream_ids) {
  {{ p }}_stream_t s1 = nullptr, s2 = nullptr, d = nullptr;
  REQUIRE_OK({{ p }}_stream_create(0, &s1));
  REQUIRE_OK({{ p }}_stream_create(0, &s2));
  REQUIRE_OK({{ p }}_stream_default(0, &d));
  uint64_t a = 0, b = 0, c = 0, n = 1;
  EXPECT_OK({{ p }}_stream_get_id(s1, &a));
  EXPECT_OK({{ p }}_stream_get_id(s2, &b));
  EXPECT_OK({{ p }}_stream_get_id(d, &c));
  EXPECT_OK({{ p }}_stream_get_id(nullptr, &n));
  EXPECT(a != b && a != c && b != c && n == c);
  EXPECT_STATUS({{ p }}_stream_get_id(s1, nullptr), {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_OK({{ p }}_stream_destroy(s1));
  EXPECT_OK({{ p }}_stream_destroy(s2));
}
