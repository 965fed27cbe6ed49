// Tests of the {{ NAME }} device library on OpenCL, through its C API only, on whatever
// OpenCL device the ICD loader finds (pocl runs on the CPU): memory, copies, streams and
// events, each implemented op against a host computation, and the unimplemented ops
// answering UNSUPPORTED. Built with WITH_TESTING=ON; run by ctest.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <CL/cl.h>

#include "{{ p }}_device.h"

// clSetEventCallback as the ICD loader has it, or failing (g_fail_event_callback): defined
// here, the library's calls resolve to it at link time.
bool g_fail_event_callback = false;
extern "C" cl_int CL_API_CALL clSetEventCallback(cl_event event, cl_int type,
                                                 void(CL_CALLBACK* notify)(cl_event, cl_int, void*), void* data) {
  using Real = cl_int(CL_API_CALL*)(cl_event, cl_int, void(CL_CALLBACK*)(cl_event, cl_int, void*), void*);
  static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "clSetEventCallback"));
  return g_fail_event_callback ? CL_OUT_OF_HOST_MEMORY : real(event, type, notify, data);
}

namespace {

int g_passed = 0, g_failed = 0;
std::string g_detail;  // what the device library said of the failing call, when a call failed

void run(const char* name, const std::function<bool()>& test) {
  g_detail.clear();
  const bool ok = test();
  std::printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, g_detail.empty() ? "" : ": ", g_detail.c_str());
  (ok ? g_passed : g_failed)++;
}

#define EXPECT(cond)                                                  \
  do {                                                                \
    if (!(cond)) {                                                    \
      std::printf("  %s:%d: %s does not hold\n", __FILE__, __LINE__, #cond); \
      return false;                                                   \
    }                                                                 \
  } while (0)
// A failed call adds the library's detail to the FAIL line (not an earlier call's, which a
// failed EXPECT would otherwise show).
#define OK(call)                                                              \
  do {                                                                        \
    if ((call) != {{ NAME }}_OK) {                                            \
      g_detail = {{ p }}_error_detail();                                      \
      std::printf("  %s:%d: %s failed\n", __FILE__, __LINE__, #call);        \
      return false;                                                           \
    }                                                                         \
  } while (0)

// A device allocation holding n values of T, freed at scope exit.
template <typename T>
struct Buffer {
  explicit Buffer(size_t n, int device = 0) : n(n), device(device) { {{ p }}_malloc(device, &ptr, sizeof(T) * (n ? n : 1)); }
  ~Buffer() { {{ p }}_free(device, ptr); }
  T* get() { return static_cast<T*>(ptr); }
  bool put(const std::vector<T>& v) {
    return {{ p }}_memcpy(ptr, v.data(), sizeof(T) * v.size(), {{ NAME }}_COPY_HOST_TO_DEVICE) == {{ NAME }}_OK;
  }
  std::vector<T> read() {
    std::vector<T> v(n);
    if ({{ p }}_memcpy(v.data(), ptr, sizeof(T) * n, {{ NAME }}_COPY_DEVICE_TO_HOST) != {{ NAME }}_OK) v.clear();
    return v;
  }
  size_t n;
  int device;
  void* ptr = nullptr;
};

bool near(double a, double b, double tol = 1e-5) { return std::fabs(a - b) <= tol * (1 + std::fabs(b)); }

template <typename T>
bool all_near(const std::vector<T>& got, const std::vector<T>& want, double tol = 1e-5) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (!near(got[i], want[i], tol)) {
      std::printf("  [%zu]: %g, want %g\n", i, static_cast<double>(got[i]), static_cast<double>(want[i]));
      return false;
    }
  return true;
}

{{ p }}_shape_t shape(std::vector<int64_t> dims) {
  {{ p }}_shape_t s;
  s.ndim = static_cast<int>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) s.dims[i] = dims[i];
  return s;
}

bool memory_and_accounting() {
  size_t before = 0, peak = 0, after = 0, total = 0, free_bytes = 0;
  OK({{ p }}_memory_stats(0, &before, &peak));
  void* p = nullptr;
  OK({{ p }}_malloc(0, &p, 1000));
  OK({{ p }}_memory_stats(0, &after, &peak));
  EXPECT(after == before + 1024 && peak >= after);
  int device = -1;
  OK({{ p }}_pointer_device(static_cast<char*>(p) + 999, &device));
  EXPECT(device == 0);
  EXPECT({{ p }}_pointer_device(&device, &device) == {{ NAME }}_ERROR_INVALID_VALUE);  // host memory
  OK({{ p }}_mem_info(0, &total, &free_bytes));
  EXPECT(total > 0 && free_bytes <= total);
  OK({{ p }}_free(0, p));
  OK({{ p }}_memory_stats(0, &after, &peak));
  EXPECT(after == before);
  return true;
}

bool host_access_to_device_memory_faults() {
  void* p = nullptr;
  OK({{ p }}_malloc(0, &p, 64));
  const pid_t child = fork();
  if (child == 0) {
    volatile char c = *static_cast<volatile char*>(p);  // must not be readable
    (void)c;
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  OK({{ p }}_free(0, p));
  EXPECT(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
  return true;
}

bool copies_with_offsets() {
  Buffer<float> a(8), b(8);
  EXPECT(a.put({0, 1, 2, 3, 4, 5, 6, 7}));
  OK({{ p }}_memset(0, b.ptr, 0, 32));
  OK({{ p }}_memcpy(b.get() + 2, a.get() + 4, 3 * sizeof(float), {{ NAME }}_COPY_DEVICE_TO_DEVICE));
  EXPECT((b.read() == std::vector<float>{0, 0, 4, 5, 6, 0, 0, 0}));
  std::vector<float> host(2, -1.f);
  {{ p }}_stream_t s = nullptr;
  OK({{ p }}_stream_create(0, &s));
  OK({{ p }}_memcpy_async(s, host.data(), a.get() + 6, 2 * sizeof(float), {{ NAME }}_COPY_DEVICE_TO_HOST));
  OK({{ p }}_stream_synchronize(s));
  OK({{ p }}_stream_destroy(s));
  EXPECT((host == std::vector<float>{6, 7}));
  EXPECT({{ p }}_memcpy(b.ptr, host.data(), 4, {{ NAME }}_COPY_DEVICE_TO_DEVICE) == {{ NAME }}_ERROR_INVALID_VALUE);
  return true;
}

std::vector<int>* g_order = nullptr;
void note(void* value) { g_order->push_back(*static_cast<int*>(value)); }

bool streams_events_and_host_functions() {
  std::vector<int> order;
  g_order = &order;
  static int one = 1, two = 2;
  {{ p }}_stream_t s1 = nullptr, s2 = nullptr;
  {{ p }}_event_t e = nullptr;
  OK({{ p }}_stream_create(0, &s1));
  OK({{ p }}_stream_create(0, &s2));
  OK({{ p }}_event_create(0, &e));
  Buffer<float> a(1 << 16), b(1 << 16);
  OK({{ p }}_fill(s1, {{ NAME }}_FLOAT32, a.ptr, 1 << 16, 3.0));
  OK({{ p }}_launch_host_func(s1, note, &one));
  OK({{ p }}_event_record(e, s1));
  OK({{ p }}_stream_wait_event(s2, e));  // s2's copy sees the fill
  OK({{ p }}_memcpy_async(s2, b.ptr, a.ptr, sizeof(float) << 16, {{ NAME }}_COPY_DEVICE_TO_DEVICE));
  OK({{ p }}_launch_host_func(s2, note, &two));
  OK({{ p }}_stream_synchronize(s2));
  OK({{ p }}_event_synchronize(e));
  OK({{ p }}_event_query(e));
  EXPECT((order == std::vector<int>{1, 2}));
  EXPECT(b.read()[(1 << 16) - 1] == 3.f);
  // Done, so the query says so; but a query is a marker the device runs too, and it waits at most
  // a millisecond for it: under load it may say NOT_READY first (CI's other worker keeps both
  // cores busy). It must reach OK within a bound and never fail otherwise.
  {{ p }}_status_t query = {{ p }}_stream_query(s1);
  for (int i = 0; i < 2000 && query == {{ NAME }}_ERROR_NOT_READY; ++i) {
    usleep(1000);
    query = {{ p }}_stream_query(s1);
  }
  OK(query);
  OK({{ p }}_event_destroy(e));
  OK({{ p }}_stream_destroy(s1));
  OK({{ p }}_stream_destroy(s2));
  return true;
}

void sleep_ms(void* ms) { usleep(static_cast<useconds_t>(*static_cast<int*>(ms)) * 1000); }

// A host function whose callback cannot be registered is an error of that call; the stream
// goes on (alarm: a stream that waits for ever ends the run instead of hanging it).
bool a_failed_host_function_does_not_block_the_stream() {
  static int ms = 1;
  {{ p }}_stream_t s = nullptr;
  OK({{ p }}_stream_create(0, &s));
  g_fail_event_callback = true;
  const {{ p }}_status_t failed = {{ p }}_launch_host_func(s, sleep_ms, &ms);
  g_fail_event_callback = false;
  EXPECT(failed != {{ NAME }}_OK);
  alarm(20);
  OK({{ p }}_stream_synchronize(s));
  alarm(0);
  OK({{ p }}_launch_host_func(s, sleep_ms, &ms));
  OK({{ p }}_stream_synchronize(s));
  OK({{ p }}_stream_destroy(s));
  return true;
}

std::atomic<bool> g_released{false};
void wait_until_released(void*) {
  while (!g_released.load()) usleep(1000);
}

// A query of a busy stream answers NOT_READY within about a millisecond, also when every
// core is busy (it is asked in a loop: a count of sleeps there would take a tick each). The
// stream stays busy until the queries are done, however long a loaded machine takes for them;
// launching the host function on the idle stream returns at once (were it run inside the launch,
// as OpenCL runs the callback of a complete event, this test would never get past it: the alarm).
bool stream_query_is_quick_under_load() {
  {{ p }}_stream_t s = nullptr;
  OK({{ p }}_stream_create(0, &s));
  g_released = false;
  alarm(60);
  OK({{ p }}_launch_host_func(s, wait_until_released, nullptr));
  std::atomic<bool> stop{false};
  std::vector<std::thread> load;
  for (unsigned i = 0; i < 2 * std::max(1u, std::thread::hardware_concurrency()); ++i)
    load.emplace_back([&] {
      while (!stop.load()) {
      }
    });
  // What the load alone does to a millisecond: spinning until it has passed, timed the same way.
  // A query is judged against this (a preempted thread takes longer whatever it runs), so the
  // test catches a query that sleeps or yields (a scheduler tick each) and not a busy machine.
  std::vector<double> spin;
  for (int i = 0; i < 10; ++i) {
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(1)) {
    }
    spin.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::vector<double> took;
  {{ p }}_status_t answer = {{ NAME }}_ERROR_NOT_READY;  // the first other answer, if any
  for (int i = 0; i < 10; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const {{ p }}_status_t status = {{ p }}_stream_query(s);
    took.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    if (answer == {{ NAME }}_ERROR_NOT_READY) answer = status;
  }
  stop = true;
  g_released = true;
  alarm(0);
  for (std::thread& t : load) t.join();
  std::sort(took.begin(), took.end());
  std::sort(spin.begin(), spin.end());
  // (pocl's own threads, which a query's enqueue and flush wait on, are preempted too: measured
  // 1-3.3 ms with twice as many spinning threads as cores; polling by sleeps took 20 ms)
  const double limit = std::max(10.0, 2.0 * spin[5]);
  if (took[5] >= limit)
    std::printf("  stream_query took %.1f ms (median) under load, a 1 ms spin %.1f ms\n", took[5], spin[5]);
  if (answer != {{ NAME }}_ERROR_NOT_READY)
    std::printf("  stream_query of a busy stream answered %s\n", {{ p }}_status_string(answer));
  EXPECT(answer == {{ NAME }}_ERROR_NOT_READY);
  EXPECT(took[5] < limit);
  OK({{ p }}_stream_synchronize(s));
  OK({{ p }}_stream_destroy(s));
  return true;
}

bool fill_cast_scale() {
  Buffer<float> x(4);
  Buffer<int32_t> i(4);
  Buffer<uint8_t> m(4);
  Buffer<int64_t> l(4);
  EXPECT(x.put({-1.5f, 0.f, 2.7f, 9.f}));
  OK({{ p }}_cast(nullptr, {{ NAME }}_FLOAT32, x.ptr, {{ NAME }}_INT32, i.ptr, 4));
  OK({{ p }}_cast(nullptr, {{ NAME }}_FLOAT32, x.ptr, {{ NAME }}_BOOL, m.ptr, 4));
  EXPECT((i.read() == std::vector<int32_t>{-1, 0, 2, 9}));
  EXPECT((m.read() == std::vector<uint8_t>{1, 0, 1, 1}));
  OK({{ p }}_fill(nullptr, {{ NAME }}_INT64, l.ptr, 4, 7));
  EXPECT((l.read() == std::vector<int64_t>{7, 7, 7, 7}));
  OK({{ p }}_scale(nullptr, {{ NAME }}_FLOAT32, x.ptr, x.ptr, 4, 2.0, 1.0, 0));  // (x + 1) * 2, in place
  EXPECT(all_near(x.read(), {-1.f, 2.f, 7.4f, 20.f}));
  return true;
}

bool binary_unary_and_gradients() {
  Buffer<float> x(6), y(3), out(6), g(6);
  Buffer<uint8_t> less(6);
  EXPECT(x.put({1, 2, 3, 4, 5, 6}) && y.put({2, 4, 8}));
  const auto xs = shape({2, 3}), ys = shape({3});
  OK({{ p }}_binary(nullptr, {{ NAME }}_BINARY_DIV, {{ NAME }}_FLOAT32, x.ptr, &xs, y.ptr, &ys, out.ptr, &xs));
  EXPECT(all_near(out.read(), {0.5f, 0.5f, 0.375f, 2.f, 1.25f, 0.75f}));
  OK({{ p }}_binary(nullptr, {{ NAME }}_BINARY_LESS, {{ NAME }}_FLOAT32, x.ptr, &xs, y.ptr, &ys, less.ptr, &xs));
  EXPECT((less.read() == std::vector<uint8_t>{1, 1, 1, 0, 0, 1}));
  const auto bad = shape({4});
  EXPECT({{ p }}_binary(nullptr, {{ NAME }}_BINARY_ADD, {{ NAME }}_FLOAT32, x.ptr, &xs, y.ptr, &bad, out.ptr, &xs) ==
         {{ NAME }}_ERROR_INVALID_VALUE);
  OK({{ p }}_unary(nullptr, {{ NAME }}_UNARY_TANH, {{ NAME }}_FLOAT32, x.ptr, out.ptr, 6));
  std::vector<float> want(6), grad(6);
  for (int k = 0; k < 6; ++k) want[k] = std::tanh(k + 1.f), grad[k] = 1.f - want[k] * want[k];
  EXPECT(all_near(out.read(), want));
  OK({{ p }}_fill(nullptr, {{ NAME }}_FLOAT32, g.ptr, 6, 1.0));
  OK({{ p }}_unary_grad(nullptr, {{ NAME }}_UNARY_TANH, {{ NAME }}_FLOAT32, out.ptr, g.ptr, g.ptr, 6));
  EXPECT(all_near(g.read(), grad, 1e-4));
  return true;
}

bool reductions_and_broadcasts() {
  Buffer<double> x(24), sum(4), mean(2), b(24);
  std::vector<double> host(24);
  for (int k = 0; k < 24; ++k) host[k] = k * 0.5;
  EXPECT(x.put(host));
  const auto xs = shape({2, 3, 4}), to = shape({3, 1});
  const int mask[3] = {1, 0, 1};  // keep axis 1
  OK({{ p }}_reduce(nullptr, {{ NAME }}_REDUCE_MEAN, {{ NAME }}_FLOAT64, x.ptr, &xs, mask, mean.ptr));
  // sum_to_shape [2,3,4] -> [3,1]: over axes 0 and 2
  Buffer<double> s3(3);
  OK({{ p }}_sum_to_shape(nullptr, {{ NAME }}_FLOAT64, x.ptr, &xs, s3.ptr, &to));
  std::vector<double> want(3, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want[j] += host[i * 12 + j * 4 + k];
  EXPECT(all_near(s3.read(), want, 1e-12));
  auto m = mean.read();
  EXPECT(near(m[0], want[0] / 8, 1e-12) && near(m[1], want[1] / 8, 1e-12));
  const auto ones = shape({3, 1}), out = shape({2, 3, 4});
  OK({{ p }}_broadcast(nullptr, {{ NAME }}_FLOAT64, s3.ptr, &ones, b.ptr, &out));
  EXPECT(b.read()[23] == want[2] && b.read()[4] == want[1]);
  return true;
}

bool transpose_and_strided_copies() {
  Buffer<int32_t> x(6), t(6), c(6);
  EXPECT(x.put({0, 1, 2, 3, 4, 5}));
  const auto xs = shape({2, 3});
  const int perm[2] = {1, 0};
  OK({{ p }}_transpose(nullptr, {{ NAME }}_INT32, x.ptr, &xs, perm, t.ptr));
  EXPECT((t.read() == std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  const auto dims = shape({3, 2});
  const int64_t src_strides[2] = {1, 3}, dst_strides[2] = {2, 1};  // a transposed view, made contiguous
  OK({{ p }}_strided_copy(nullptr, {{ NAME }}_INT32, &dims, x.ptr, src_strides, c.ptr, dst_strides));
  EXPECT((c.read() == std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  OK({{ p }}_copy_2d(nullptr, c.ptr, 12, x.get() + 1, 12, 8, 2));  // columns 1..2 of x into 0..1 of c
  EXPECT((c.read() == std::vector<int32_t>{1, 2, 1, 4, 5, 5}));
  return true;
}

bool gemm_and_sgd() {
  const int64_t m = 3, n = 5, k = 4;
  std::vector<float> a(m * k), b(n * k), c0(m * n, 1.f), want(m * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.25f * i - 1;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.5f - 0.125f * i;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += a[i * k + p] * b[j * k + p];  // B transposed: [n, k]
      want[i * n + j] = 2 * acc + 0.5f * c0[i * n + j];
    }
  Buffer<float> da(a.size()), db(b.size()), dc(c0.size());
  EXPECT(da.put(a) && db.put(b) && dc.put(c0));
  OK({{ p }}_gemm(nullptr, 0, 1, m, n, k, 2.f, da.get(), k, db.get(), k, 0.5f, dc.get(), n));
  EXPECT(all_near(dc.read(), want, 1e-5));
  Buffer<float> p(3), g(3), lr(1);
  EXPECT(p.put({1, 2, 3}) && g.put({1, -1, 0.5f}) && lr.put({0.1f}));
  OK({{ p }}_sgd_update(nullptr, p.get(), g.get(), lr.get(), p.get(), 3));
  EXPECT(all_near(p.read(), {0.9f, 2.1f, 2.95f}));
  return true;
}

bool unimplemented_ops_say_so() {
  {{ p }}_conv2d_params_t params = {};
  EXPECT({{ p }}_conv2d_forward(nullptr, &params, nullptr, nullptr, nullptr) == {{ NAME }}_ERROR_UNSUPPORTED);
  EXPECT(std::string({{ p }}_error_detail()).find("conv2d_forward is not implemented") != std::string::npos);
  return true;
}

}  // namespace

int main() {
  int count = 0;
  if ({{ p }}_init() != {{ NAME }}_OK || {{ p }}_device_count(&count) != {{ NAME }}_OK || count < 1) {
    std::printf("FAIL no {{ NAME }} device: no OpenCL device found\n");
    return 1;
  }
  run("memory and accounting", memory_and_accounting);
  run("host access to device memory faults", host_access_to_device_memory_faults);
  run("copies with offsets", copies_with_offsets);
  run("streams, events and host functions", streams_events_and_host_functions);
  run("a failed host function does not block the stream", a_failed_host_function_does_not_block_the_stream);
  run("stream query is quick under load", stream_query_is_quick_under_load);
  run("fill, cast, scale", fill_cast_scale);
  run("binary, unary and gradients", binary_unary_and_gradients);
  run("reductions and broadcasts", reductions_and_broadcasts);
  run("transpose and strided copies", transpose_and_strided_copies);
  run("gemm and sgd", gemm_and_sgd);
  run("unimplemented ops say so", unimplemented_ops_say_so);
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
