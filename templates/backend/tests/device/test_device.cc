// Tests of the {{ NAME }} device library through its C API only: no Paddle,
// so they also run on targets without a Paddle runtime (e.g. armhf).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "{{ p }}_device.h"
#include "device_buffer.h"

namespace {

int g_passed = 0, g_failed = 0;

#define EXPECT(cond)                                                         \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::printf("  FAILED %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
      ok = false;                                                            \
    }                                                                        \
  } while (0)

#define EXPECT_OK(expr) EXPECT((expr) == {{ NAME }}_OK)

void run(const char* name, const std::function<bool()>& test) {
  const bool ok = test();
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", name);
  (ok ? g_passed : g_failed)++;
}

{{ p }}_shape_t shape(std::initializer_list<int64_t> dims) {
  {{ p }}_shape_t s;
  s.ndim = static_cast<int>(dims.size());
  int i = 0;
  for (int64_t d : dims) s.dims[i++] = d;
  return s;
}

bool near(float a, float b, float tol = 1e-4f) { return std::fabs(a - b) <= tol * (1.f + std::fabs(b)); }

bool synchronous_mode() {
  const char* v = std::getenv("{{ NAME }}_SYNC");
  return v && *v && std::strcmp(v, "0") != 0;
}

bool host_visible_memory() {
  const char* v = std::getenv("{{ NAME }}_HOST_VISIBLE_MEMORY");
  return v && *v && std::strcmp(v, "0") != 0;
}

bool memory_accounting() {
  bool ok = true;
  size_t total = 0, free0 = 0, free1 = 0, free2 = 0;
  EXPECT_OK({{ p }}_mem_info(0, &total, &free0));
  EXPECT(total > 0 && free0 <= total);
  void* p = nullptr;
  EXPECT_OK({{ p }}_malloc(0, &p, 1 << 20));
  EXPECT_OK({{ p }}_mem_info(0, &total, &free1));
  EXPECT(free0 - free1 >= (1u << 20));
  EXPECT_OK({{ p }}_free(0, p));
  EXPECT_OK({{ p }}_mem_info(0, &total, &free2));
  EXPECT(free2 == free0);
  EXPECT({{ p }}_free(0, p) == {{ NAME }}_ERROR_INVALID_VALUE);  // double free is refused
  void* huge = nullptr;
  EXPECT({{ p }}_malloc(0, &huge, total + 1) == {{ NAME }}_ERROR_OUT_OF_MEMORY);
  EXPECT({{ p }}_malloc(7, &huge, 16) == {{ NAME }}_ERROR_INVALID_VALUE);  // no such device
  return ok;
}

bool copies_round_trip() {
  bool ok = true;
  std::vector<float> host(1000), back(1000, 0.f);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i) * 0.5f;
  void *a = nullptr, *b = nullptr;
  const size_t bytes = host.size() * sizeof(float);
  EXPECT_OK({{ p }}_malloc(0, &a, bytes));
  EXPECT_OK({{ p }}_malloc(0, &b, bytes));
  EXPECT_OK({{ p }}_memcpy(a, host.data(), bytes, {{ NAME }}_COPY_HOST_TO_DEVICE));
  EXPECT_OK({{ p }}_memcpy(b, a, bytes, {{ NAME }}_COPY_DEVICE_TO_DEVICE));
  EXPECT_OK({{ p }}_memcpy(back.data(), b, bytes, {{ NAME }}_COPY_DEVICE_TO_HOST));
  EXPECT(std::memcmp(host.data(), back.data(), bytes) == 0);
  {{ p }}_stream_t s = nullptr;
  EXPECT_OK({{ p }}_stream_create(0, &s));
  std::fill(back.begin(), back.end(), 0.f);
  EXPECT_OK({{ p }}_memset(0, b, 0, bytes));
  EXPECT_OK({{ p }}_memcpy_async(s, b, a, bytes, {{ NAME }}_COPY_DEVICE_TO_DEVICE));
  EXPECT_OK({{ p }}_memcpy_async(s, back.data(), b, bytes, {{ NAME }}_COPY_DEVICE_TO_HOST));
  EXPECT_OK({{ p }}_stream_synchronize(s));
  EXPECT(std::memcmp(host.data(), back.data(), bytes) == 0);
  EXPECT_OK({{ p }}_stream_destroy(s));
  EXPECT_OK({{ p }}_free(0, a));
  EXPECT_OK({{ p }}_free(0, b));
  return ok;
}

void append(void* data) {
  auto* log = static_cast<std::vector<int>*>(data);
  log->push_back(static_cast<int>(log->size()));
}

bool stream_and_event_order() {
  bool ok = true;
  {{ p }}_stream_t s1 = nullptr, s2 = nullptr;
  {{ p }}_event_t e = nullptr;
  EXPECT_OK({{ p }}_stream_create(0, &s1));
  EXPECT_OK({{ p }}_stream_create(0, &s2));
  EXPECT_OK({{ p }}_event_create(0, &e));
  EXPECT_OK({{ p }}_event_query(e));  // never recorded: complete
  std::vector<int> log;
  for (int i = 0; i < 5; ++i) EXPECT_OK({{ p }}_launch_host_func(s1, append, &log));
  EXPECT_OK({{ p }}_event_record(e, s1));
  // s2 waits on e, so its work sees all of s1's work before it.
  EXPECT_OK({{ p }}_stream_wait_event(s2, e));
  size_t seen_by_s2 = 0;
  auto observe = [](void* d) { *static_cast<size_t*>(d) = 1; };
  EXPECT_OK({{ p }}_launch_host_func(s2, observe, &seen_by_s2));
  EXPECT_OK({{ p }}_event_synchronize(e));
  EXPECT_OK({{ p }}_event_query(e));
  EXPECT(log.size() == 5);
  for (size_t i = 0; i < log.size(); ++i) EXPECT(log[i] == static_cast<int>(i));  // submission order
  EXPECT_OK({{ p }}_stream_synchronize(s2));
  EXPECT(seen_by_s2 == 1);
  EXPECT_OK({{ p }}_stream_query(s1));
  EXPECT({{ p }}_event_record(nullptr, s1) == {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_OK({{ p }}_event_destroy(e));
  EXPECT_OK({{ p }}_stream_destroy(s1));
  EXPECT_OK({{ p }}_stream_destroy(s2));
  return ok;
}

bool gemm_matches_naive() {
  bool ok = true;
  // Odd tiles; a long k over a small C (split across threads); a skinny product; a short k.
  const int64_t shapes[][3] = { {37, 29, 53}, {6, 25, 5000}, {16, 150, 700}, {150, 40, 16} };
  for (const auto& mnk : shapes) {
    const int64_t m = mnk[0], n = mnk[1], k = mnk[2];
    const float tol = 1e-5f * static_cast<float>(k);  // float sums of k products vs double
    std::vector<float> a(m * k), b(k * n), c(m * n, 7.f), ref(m * n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(static_cast<float>(i));
    for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(static_cast<float>(i));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += static_cast<double>(a[i * k + p]) * b[p * n + j];
        ref[i * n + j] = static_cast<float>(acc);
      }
    Dev<float> da(a), db(b), dc(c);
    EXPECT_OK({{ p }}_gemm(nullptr, 0, 0, m, n, k, 1.f, da.ptr(), k, db.ptr(), n, 0.f, dc.ptr(), n));
    c = dc.host();
    for (size_t i = 0; i < c.size(); ++i) EXPECT(near(c[i], ref[i], tol));
    // transposed operands: (A^T)^T (B^T)^T with A^T, B^T stored explicitly; beta = 1 adds to C
    std::vector<float> at(k * m), bt(n * k);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) at[p * m + i] = a[i * k + p];
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) bt[j * k + p] = b[p * n + j];
    Dev<float> dat(at), dbt(bt);
    EXPECT_OK({{ p }}_gemm(nullptr, 1, 1, m, n, k, 1.f, dat.ptr(), m, dbt.ptr(), k, 1.f, dc.ptr(), n));
    c = dc.host();
    for (size_t i = 0; i < c.size(); ++i) EXPECT(near(c[i], 2.f * ref[i], tol));
  }
  return ok;
}

// Two devices: separate accounting, copies only between pointers of the copying device,
// and the peer copy between devices.
bool devices_and_peer_copies() {
  bool ok = true;
  int count = 0;
  EXPECT_OK({{ p }}_device_count(&count));
  EXPECT(count >= 1);
  if (count < 2) return ok;  // {{ NAME }}_DEVICE_COUNT=1: nothing more to check
  size_t total = 0, free1_before = 0, free1_after = 0;
  EXPECT_OK({{ p }}_mem_info(1, &total, &free1_before));
  std::vector<float> host(256), back(256, 0.f);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i);
  const size_t bytes = host.size() * sizeof(float);
  void *d0 = nullptr, *d1 = nullptr;
  EXPECT_OK({{ p }}_malloc(0, &d0, bytes));
  EXPECT_OK({{ p }}_mem_info(1, &total, &free1_after));
  EXPECT(free1_after == free1_before);  // device 0's allocation is not device 1's
  EXPECT_OK({{ p }}_malloc(1, &d1, bytes));
  int owner = -1;
  EXPECT_OK({{ p }}_pointer_device(static_cast<char*>(d1) + 8, &owner));
  EXPECT(owner == 1);
  EXPECT({{ p }}_pointer_device(host.data(), &owner) == {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_OK({{ p }}_memcpy(d0, host.data(), bytes, {{ NAME }}_COPY_HOST_TO_DEVICE));
  EXPECT({{ p }}_memcpy(d1, d0, bytes, {{ NAME }}_COPY_DEVICE_TO_DEVICE) == {{ NAME }}_ERROR_INVALID_VALUE);
  {{ p }}_stream_t s0 = nullptr;
  EXPECT_OK({{ p }}_stream_create(0, &s0));
  EXPECT({{ p }}_memcpy_async(s0, back.data(), d1, bytes, {{ NAME }}_COPY_DEVICE_TO_HOST) == {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT({{ p }}_memcpy_async(s0, back.data(), host.data(), bytes, {{ NAME }}_COPY_DEVICE_TO_HOST) ==
         {{ NAME }}_ERROR_INVALID_VALUE);  // a host pointer is no device pointer
  EXPECT_OK({{ p }}_memcpy_peer(d1, 1, d0, 0, bytes));
  EXPECT_OK({{ p }}_memcpy(back.data(), d1, bytes, {{ NAME }}_COPY_DEVICE_TO_HOST));
  EXPECT(std::memcmp(host.data(), back.data(), bytes) == 0);
  EXPECT({{ p }}_memcpy_peer(d1, 0, d0, 0, bytes) == {{ NAME }}_ERROR_INVALID_VALUE);  // d1 is not device 0's
  EXPECT({{ p }}_free(0, d1) == {{ NAME }}_ERROR_INVALID_VALUE);                       // nor freed there
  int current = -1;
  EXPECT_OK({{ p }}_set_device(1));
  EXPECT_OK({{ p }}_get_device(&current));
  EXPECT(current == 1);
  EXPECT({{ p }}_set_device(count) == {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT_OK({{ p }}_set_device(0));
  EXPECT_OK({{ p }}_stream_destroy(s0));
  EXPECT_OK({{ p }}_free(0, d0));
  EXPECT_OK({{ p }}_free(1, d1));
  return ok;
}

bool conv2d_matches_naive() {
  bool ok = true;
  {{ p }}_conv2d_params_t p = {2, 4, 9, 8, 6, 0, 0, 3, 3, 2, 1, 1, 1, 1, 1, 2};
  p.out_h = (p.in_h + 2 * p.pad_top - (p.kernel_h - 1) - 1) / p.stride_h + 1;
  p.out_w = (p.in_w + 2 * p.pad_left - (p.kernel_w - 1) - 1) / p.stride_w + 1;
  const int64_t cg = p.in_channels / p.groups, og = p.out_channels / p.groups;
  std::vector<float> x(p.batch * p.in_channels * p.in_h * p.in_w), w(p.out_channels * cg * 9);
  std::vector<float> y(p.batch * p.out_channels * p.out_h * p.out_w), ref(y.size(), 0.f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.3f * i);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.7f * i);
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t o = 0; o < p.out_channels; ++o)
      for (int64_t oy = 0; oy < p.out_h; ++oy)
        for (int64_t ox = 0; ox < p.out_w; ++ox) {
          float acc = 0.f;
          const int64_t g = o / og;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < 3; ++i)
              for (int64_t j = 0; j < 3; ++j) {
                const int64_t iy = oy * p.stride_h - p.pad_top + i, ix = ox * p.stride_w - p.pad_left + j;
                if (iy < 0 || iy >= p.in_h || ix < 0 || ix >= p.in_w) continue;
                acc += x[((n * p.in_channels + g * cg + c) * p.in_h + iy) * p.in_w + ix] *
                       w[((o * cg + c) * 3 + i) * 3 + j];
              }
          ref[((n * p.out_channels + o) * p.out_h + oy) * p.out_w + ox] = acc;
        }
  Dev<float> dx(x), dw(w), dy(y);
  EXPECT_OK({{ p }}_conv2d_forward(nullptr, &p, dx.ptr(), dw.ptr(), dy.ptr()));
  y = dy.host();
  for (size_t i = 0; i < y.size(); ++i) EXPECT(near(y[i], ref[i]));
  return ok;
}

bool broadcast_and_reduce() {
  bool ok = true;
  std::vector<float> x = {1, 2, 3, 4, 5, 6}, y = {10, 20, 30}, out(6), back(3);
  Dev<float> dx(x), dy(y), dout(out), dback(back);
  {
    // the shapes live on this stack only until the call returns (the op runs later)
    auto xs = shape({2, 3}), ys = shape({3}), os = shape({2, 3});
    EXPECT_OK({{ p }}_binary(nullptr, {{ NAME }}_BINARY_ADD, {{ NAME }}_FLOAT32, dx.ptr(), &xs, dy.ptr(), &ys, dout.ptr(), &os));
    EXPECT_OK({{ p }}_sum_to_shape(nullptr, {{ NAME }}_FLOAT32, dout.ptr(), &os, dback.ptr(), &ys));
    xs = shape({9}), ys = shape({9}), os = shape({9});  // reused at once, as callers do
  }
  out = dout.host();
  const float expect[] = {11, 22, 33, 14, 25, 36};
  for (int i = 0; i < 6; ++i) EXPECT(out[i] == expect[i]);
  back = dback.host();
  EXPECT(back[0] == 25 && back[1] == 47 && back[2] == 69);
  Dev<int64_t> a(std::vector<int64_t>{1, 2, 3}), b(std::vector<int64_t>{1, 1, 1}), c(3);
  auto s3 = shape({3});
  EXPECT_OK({{ p }}_binary(nullptr, {{ NAME }}_BINARY_ADD, {{ NAME }}_INT64, a.ptr(), &s3, b.ptr(), &s3, c.ptr(), &s3));
  const std::vector<int64_t> hc = c.host();
  EXPECT(hc[0] == 2 && hc[1] == 3 && hc[2] == 4);
  auto xs = shape({2, 3}), os = shape({2, 3}), bad = shape({4});
  EXPECT({{ p }}_binary(nullptr, {{ NAME }}_BINARY_ADD, {{ NAME }}_FLOAT32, dx.ptr(), &xs, dy.ptr(), &bad, dout.ptr(), &os) ==
         {{ NAME }}_ERROR_INVALID_VALUE);
  // host memory is no device memory: refused, not read
  EXPECT({{ p }}_binary(nullptr, {{ NAME }}_BINARY_ADD, {{ NAME }}_FLOAT32, x.data(), &xs, x.data(), &xs, dout.ptr(), &os) ==
         {{ NAME }}_ERROR_INVALID_VALUE);
  return ok;
}

bool softmax_cross_entropy() {
  bool ok = true;
  std::vector<float> logits = {1, 2, 3, 1, 1, 1}, sm(6), loss(2), grad(6), dloss = {1, 1};
  Dev<float> dlogits(logits), dsm(sm), dl(loss), dgrad(grad), ddloss(dloss);
  Dev<int64_t> labels(std::vector<int64_t>{2, 0});
  EXPECT_OK({{ p }}_softmax_cross_entropy_forward(nullptr, dlogits.ptr(), labels.ptr(), 0, -100, dsm.ptr(), dl.ptr(), 2, 3, 1));
  sm = dsm.host(), loss = dl.host();
  EXPECT(near(sm[0] + sm[1] + sm[2], 1.f) && near(sm[3], 1.f / 3));
  EXPECT(near(loss[0], -std::log(sm[2])) && near(loss[1], std::log(3.f)));
  EXPECT_OK({{ p }}_softmax_cross_entropy_backward(nullptr, dsm.ptr(), labels.ptr(), 0, -100, ddloss.ptr(), dgrad.ptr(), 2, 3, 1));
  grad = dgrad.host();
  EXPECT(near(grad[2], sm[2] - 1.f) && near(grad[0], sm[0]));
  return ok;
}

bool random_is_deterministic() {
  bool ok = true;
  Dev<float> da(10000), db(10000);
  EXPECT_OK({{ p }}_random_uniform(nullptr, da.ptr(), 10000, -1.f, 1.f, 42));
  EXPECT_OK({{ p }}_random_uniform(nullptr, db.ptr(), 10000, -1.f, 1.f, 42));
  const std::vector<float> a = da.host();
  EXPECT(a == db.host());
  double mean = 0;
  for (float v : a) {
    EXPECT(v >= -1.f && v <= 1.f);
    mean += v;
  }
  EXPECT(std::fabs(mean / a.size()) < 0.05);
  return ok;
}

// One small check of each op of nn_ops.cc, against values worked out by hand.
bool batch_norm_training_and_backward() {
  bool ok = true;
  // [outer=2, channels=1, inner=2]: x = 1 2 3 4 -> mean 2.5, var 1.25
  Dev<float> x(std::vector<float>{1, 2, 3, 4}), dy_(4), dsm(1), dsv(1), drm(1, 1.f), drv(1, 1.f);
  EXPECT_OK({{ p }}_batch_norm_training(nullptr, {{ NAME }}_FLOAT32, x.ptr(), nullptr, nullptr, 0.0, 0.9, 2, 1, 2,
                                        dy_.ptr(), dsm.ptr(), dsv.ptr(), drm.ptr(), drv.ptr(), drm.ptr(), drv.ptr()));
  std::vector<float> y = dy_.host(), sm = dsm.host(), sv = dsv.host(), rm = drm.host(), rv = drv.host();
  EXPECT(near(sm[0], 2.5f) && near(sv[0], 1.f / std::sqrt(1.25f)) && near(y[0], -1.5f / std::sqrt(1.25f)));
  EXPECT(near(rm[0], 0.9f + 0.25f) && near(rv[0], 0.9f + 0.125f));  // momentum update, biased variance
  Dev<float> ddy(4, 1.f), ddx(4), dds(1), ddb(1);
  EXPECT_OK({{ p }}_batch_norm_backward(nullptr, {{ NAME }}_FLOAT32, x.ptr(), ddy.ptr(), dsm.ptr(), dsv.ptr(), 0, 0.0,
                                        nullptr, 2, 1, 2, ddx.ptr(), dds.ptr(), ddb.ptr()));
  const std::vector<float> dx = ddx.host(), ds = dds.host(), db = ddb.host();
  EXPECT(near(db[0], 4.f) && std::fabs(ds[0]) < 1e-5f && std::fabs(dx[0]) < 1e-5f);  // constant dy: no dx
  Dev<float> mean(1, 0.f), var(1, 3.f);
  EXPECT_OK({{ p }}_batch_norm_normalize(nullptr, {{ NAME }}_FLOAT32, x.ptr(), mean.ptr(), var.ptr(), nullptr,
                                         nullptr, 1.0, 2, 1, 2, dy_.ptr()));
  EXPECT(near(dy_.host()[3], 2.f));
  return ok;
}

bool layer_norm_and_gelu() {
  bool ok = true;
  Dev<double> x(std::vector<double>{1, 3, -2, 2}), dy_(4), dm(2), dv(2), ddy(std::vector<double>{1, 0, 0, 0}), ddx(4);
  EXPECT_OK({{ p }}_layer_norm_forward(nullptr, {{ NAME }}_FLOAT64, x.ptr(), nullptr, nullptr, 0.0, 2, 2, dy_.ptr(),
                                       dm.ptr(), dv.ptr()));
  const std::vector<double> y = dy_.host(), m = dm.host(), v = dv.host();
  EXPECT(near(y[0], -1.f) && near(y[1], 1.f) && near(m[1], 0.f) && near(v[1], 4.f));
  EXPECT_OK({{ p }}_layer_norm_backward(nullptr, {{ NAME }}_FLOAT64, x.ptr(), ddy.ptr(), dm.ptr(), dv.ptr(), nullptr,
                                        0.0, 2, 2, ddx.ptr(), nullptr, nullptr));
  const std::vector<double> dx = ddx.host();
  EXPECT(std::fabs(dx[0] + dx[1]) < 1e-9 && std::fabs(dx[2]) < 1e-9);  // gradient sums to zero per row
  Dev<float> g(std::vector<float>{0.f, 1.f, -1.f}), dgy(3), one(3, 1.f), dgd(3);
  EXPECT_OK({{ p }}_gelu_forward(nullptr, {{ NAME }}_FLOAT32, g.ptr(), dgy.ptr(), 3, 0));
  const std::vector<float> gy = dgy.host();
  EXPECT(near(gy[0], 0.f) && near(gy[1], 0.841345f) && near(gy[2], -0.158655f));
  EXPECT_OK({{ p }}_gelu_backward(nullptr, {{ NAME }}_FLOAT32, g.ptr(), one.ptr(), dgd.ptr(), 3, 0));
  const std::vector<float> gd = dgd.host();
  EXPECT(near(gd[0], 0.5f) && near(gd[1], 1.083315f));
  return ok;
}

bool dropout_mask_and_scale() {
  bool ok = true;
  Dev<uint8_t> da(10000), db(10000);
  EXPECT_OK({{ p }}_dropout_mask(nullptr, da.ptr(), 10000, 0.25f, 7, {{ NAME }}_RNG_COUNTER));
  EXPECT_OK({{ p }}_dropout_mask(nullptr, db.ptr(), 10000, 0.25f, 7, {{ NAME }}_RNG_COUNTER));
  const std::vector<uint8_t> a = da.host();
  EXPECT(a == db.host());
  int dropped = 0;
  for (uint8_t m : a) dropped += m == 0;
  EXPECT(std::abs(dropped - 2500) < 200);
  EXPECT_OK({{ p }}_dropout_mask(nullptr, db.ptr(), 10000, 0.25f, 7, {{ NAME }}_RNG_MT19937_64));
  EXPECT(a != db.host());
  EXPECT({{ p }}_dropout_mask(nullptr, db.ptr(), 10, 1.5f, 7, {{ NAME }}_RNG_COUNTER) == {{ NAME }}_ERROR_INVALID_VALUE);
  Dev<float> x(std::vector<float>{1, 2, 3}), dout(3);
  Dev<uint8_t> mask(std::vector<uint8_t>{1, 0, 1});
  EXPECT_OK({{ p }}_masked_scale(nullptr, {{ NAME }}_FLOAT32, x.ptr(), mask.ptr(), 3, 2.0, dout.ptr()));
  const std::vector<float> out = dout.host();
  EXPECT(out[0] == 2.f && out[1] == 0.f && out[2] == 6.f);
  return ok;
}

bool gather_and_strided_copy() {
  bool ok = true;
  // x = [[0 1] [2 3] [4 5]] ; rows 2, 0, 2 (row 0 is the padding row: zeros)
  Dev<float> x(std::vector<float>{0, 1, 2, 3, 4, 5}), dout(6), ddx(6);
  Dev<int64_t> idx(std::vector<int64_t>{2, 0, 2});
  EXPECT_OK({{ p }}_gather(nullptr, {{ NAME }}_FLOAT32, x.ptr(), 1, 3, 2, {{ NAME }}_INT64, idx.ptr(), 3, 0, dout.ptr()));
  std::vector<float> out = dout.host();
  EXPECT(out[0] == 4.f && out[1] == 5.f && out[2] == 0.f && out[3] == 0.f && out[4] == 4.f);
  Dev<float> ones(6, 1.f);
  EXPECT_OK({{ p }}_gather_backward(nullptr, {{ NAME }}_FLOAT32, ones.ptr(), 1, 3, 2, {{ NAME }}_INT64, idx.ptr(), 3,
                                    -1, ddx.ptr()));
  const std::vector<float> dx = ddx.host();
  EXPECT(dx[0] == 1.f && dx[2] == 0.f && dx[4] == 2.f);
  // An index out of range is device data: the op fails where it runs, and the next
  // synchronising call reports it with the op's name (inline mode: the call itself).
  Dev<int64_t> bad(std::vector<int64_t>{3, 0, 2});
  const {{ p }}_status_t queued =
      {{ p }}_gather(nullptr, {{ NAME }}_FLOAT32, x.ptr(), 1, 3, 2, {{ NAME }}_INT64, bad.ptr(), 3, -1, dout.ptr());
  if (synchronous_mode()) {
    EXPECT(queued == {{ NAME }}_ERROR_INVALID_VALUE);
  } else {
    EXPECT_OK(queued);
    EXPECT({{ p }}_stream_synchronize(nullptr) == {{ NAME }}_ERROR_INVALID_VALUE);
    EXPECT(std::string({{ p }}_error_detail()).find("gather") != std::string::npos);
    EXPECT_OK({{ p }}_stream_synchronize(nullptr));  // reported once
  }
  // the transpose view of a [3,2] array (strides 1, 2) made contiguous
  const {{ p }}_shape_t dims = shape({2, 3});
  const int64_t view_strides[] = {1, 2}, dense[] = {3, 1};
  EXPECT_OK({{ p }}_strided_copy(nullptr, {{ NAME }}_FLOAT32, &dims, x.ptr(), view_strides, dout.ptr(), dense));
  out = dout.host();
  EXPECT(out[0] == 0.f && out[1] == 2.f && out[2] == 4.f && out[3] == 1.f && out[5] == 5.f);
  return ok;
}

void sleep_ms(void* ms) { usleep(static_cast<useconds_t>(*static_cast<int*>(ms)) * 1000); }

// Ops and *_async copies return before their work runs; events and synchronisation wait for it.
bool queues_run_later() {
  bool ok = true;
  const bool inline_mode = synchronous_mode();
  {{ p }}_stream_t s = nullptr;
  {{ p }}_event_t e = nullptr;
  EXPECT_OK({{ p }}_stream_create(0, &s));
  EXPECT_OK({{ p }}_event_create(0, &e));
  static int ms = 300;  // long enough that nothing queued behind it can have run when checked
  Dev<float> x(1000, 1.f), y(1000);
  std::vector<float> back(1000, -1.f);
  EXPECT_OK({{ p }}_launch_host_func(s, sleep_ms, &ms));
  EXPECT_OK({{ p }}_scale(s, {{ NAME }}_FLOAT32, x.ptr(), y.ptr(), 1000, 2.0, 0.0, 1));
  EXPECT_OK({{ p }}_memcpy_async(s, back.data(), y.ptr(), 1000 * sizeof(float), {{ NAME }}_COPY_DEVICE_TO_HOST));
  EXPECT_OK({{ p }}_event_record(e, s));
  if (!inline_mode) {
    EXPECT({{ p }}_stream_query(s) == {{ NAME }}_ERROR_NOT_READY);
    EXPECT({{ p }}_event_query(e) == {{ NAME }}_ERROR_NOT_READY);
    EXPECT(back[0] == -1.f);  // not written yet: reading it now is the missing-synchronisation bug
  }
  EXPECT_OK({{ p }}_event_synchronize(e));
  EXPECT(back[0] == 2.f && back[999] == 2.f);
  EXPECT_OK({{ p }}_stream_query(s));
  int count = 0;
  {{ p }}_device_count(&count);
  if (count > 1) {  // an event of device 0 cannot be recorded on device 1's queue
    {{ p }}_stream_t s1 = nullptr;
    EXPECT_OK({{ p }}_stream_default(1, &s1));
    EXPECT({{ p }}_event_record(e, s1) == {{ NAME }}_ERROR_INVALID_VALUE);
  }
  EXPECT_OK({{ p }}_event_destroy(e));
  EXPECT_OK({{ p }}_stream_destroy(s));
  return ok;
}

// Memory freed while queued work still uses it is not handed out again before that work ran.
bool freed_memory_waits_for_queued_work() {
  bool ok = true;
  static int ms = 300;
  void *a = nullptr, *b = nullptr;
  size_t allocated = 0, peak = 0, before = 0;
  EXPECT_OK({{ p }}_memory_stats(0, &before, &peak));
  EXPECT_OK({{ p }}_malloc(0, &a, 4096));
  EXPECT_OK({{ p }}_launch_host_func(nullptr, sleep_ms, &ms));
  EXPECT_OK({{ p }}_fill(nullptr, {{ NAME }}_FLOAT32, a, 1024, 3.0));  // still queued behind the sleep
  EXPECT_OK({{ p }}_free(0, a));
  EXPECT_OK({{ p }}_memory_stats(0, &allocated, &peak));
  EXPECT(allocated == before);  // freed for the accounting at once
  EXPECT_OK({{ p }}_malloc(0, &b, 4096));
  if (!synchronous_mode()) EXPECT(b != a);
  EXPECT_OK({{ p }}_device_synchronize(0));
  EXPECT_OK({{ p }}_free(0, b));
  return ok;
}

// A host read through a device pointer faults; the library's handler names it and aborts.
bool host_access_to_device_memory_faults() {
  bool ok = true;
  Dev<float> x(16, 1.f);
  int err_pipe[2];
  EXPECT(pipe(err_pipe) == 0);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    dup2(err_pipe[1], 2);
    volatile float v = x.ptr()[3];  // the bug: the host reads device memory
    (void)v;
    _exit(0);
  }
  close(err_pipe[1]);
  std::string err;
  char buf[512];
  ssize_t n = 0;
  while ((n = read(err_pipe[0], buf, sizeof(buf))) > 0) err.append(buf, static_cast<size_t>(n));
  close(err_pipe[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (host_visible_memory()) {
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  } else {
    EXPECT(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    EXPECT(err.find("host access to device memory") != std::string::npos);
    EXPECT(err.find("byte 12 of the 64-byte allocation") != std::string::npos);
    if (!ok) std::printf("  child's stderr: %s\n", err.c_str());
  }
  return ok;
}

// ---- lifetimes, error attribution, exceptions, fork and signals ----

// Runs `body` in a forked child; its exit status (waitpid's) and what it wrote to stderr.
struct ChildResult {
  int status = 0;
  std::string err;
};
ChildResult in_child(const std::function<int()>& body) {
  int err_pipe[2];
  ChildResult r;
  if (pipe(err_pipe) != 0) return r;
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    dup2(err_pipe[1], 2);
    close(err_pipe[0]);
    _exit(body());
  }
  close(err_pipe[1]);
  char buf[512];
  ssize_t n = 0;
  while ((n = read(err_pipe[0], buf, sizeof(buf))) > 0) r.err.append(buf, static_cast<size_t>(n));
  close(err_pipe[0]);
  waitpid(child, &r.status, 0);
  return r;
}

// Polls until `done` or `seconds` passed: a hang is a failure, not a test that never ends.
bool within(double seconds, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    usleep(1000);
  }
  return true;
}

// A stream destroyed while an event recorded on it, or another stream's queued wait, still
// refers to it: both complete (no read of freed memory, no wait on a stream made later at the
// same address).
bool streams_outlive_events_and_waits() {
  bool ok = true;
  static int short_ms = 50, long_ms = 200;
  {{ p }}_stream_t s1 = nullptr, s2 = nullptr, reused = nullptr;
  {{ p }}_event_t e = nullptr;
  EXPECT_OK({{ p }}_event_create(0, &e));
  EXPECT_OK({{ p }}_stream_create(0, &s1));
  EXPECT_OK({{ p }}_stream_create(0, &s2));
  EXPECT_OK({{ p }}_launch_host_func(s1, sleep_ms, &short_ms));
  EXPECT_OK({{ p }}_event_record(e, s1));
  EXPECT_OK({{ p }}_launch_host_func(s2, sleep_ms, &long_ms));  // its wait runs after s1 is gone
  EXPECT_OK({{ p }}_stream_wait_event(s2, e));
  EXPECT_OK({{ p }}_stream_destroy(s1));
  EXPECT_OK({{ p }}_stream_create(0, &reused));  // often at s1's address, nothing submitted
  EXPECT_OK({{ p }}_event_query(e));
  const bool e_done = within(2, [&] { return {{ p }}_event_query(e) == {{ NAME }}_OK; });
  EXPECT(e_done);
  if (e_done) EXPECT_OK({{ p }}_event_synchronize(e));
  const bool s2_done = within(2, [&] { return {{ p }}_stream_query(s2) == {{ NAME }}_OK; });
  EXPECT(s2_done);
  if (!s2_done) return ok;  // (s2 is left: destroying it would wait for ever)
  EXPECT_OK({{ p }}_stream_destroy(s2));
  EXPECT_OK({{ p }}_stream_destroy(reused));
  EXPECT_OK({{ p }}_event_destroy(e));
  return ok;
}

// A queued error belongs to its place in the queue: a synchronisation reports it when it
// covers that place (an event recorded before the failing op: OK), every time, until a
// synchronisation of the whole stream has reported it.
bool errors_go_to_the_synchronisations_that_cover_them() {
  bool ok = true;
  if (synchronous_mode()) return ok;  // inline: the failing call itself returns the error
  static int ms = 20;
  {{ p }}_stream_t s = nullptr;
  {{ p }}_event_t before = nullptr, after = nullptr;
  EXPECT_OK({{ p }}_stream_create(0, &s));
  EXPECT_OK({{ p }}_event_create(0, &before));
  EXPECT_OK({{ p }}_event_create(0, &after));
  Dev<float> x(std::vector<float>{0, 1, 2, 3, 4, 5}), out(6);
  Dev<int64_t> bad(std::vector<int64_t>{3, 0, 2});
  EXPECT_OK({{ p }}_launch_host_func(s, sleep_ms, &ms));
  EXPECT_OK({{ p }}_event_record(before, s));
  EXPECT_OK({{ p }}_gather(s, {{ NAME }}_FLOAT32, x.ptr(), 1, 3, 2, {{ NAME }}_INT64, bad.ptr(), 3, -1, out.ptr()));
  EXPECT_OK({{ p }}_event_record(after, s));
  EXPECT(within(5, [&] { return {{ p }}_stream_query(s) == {{ NAME }}_OK; }));  // the gather has failed by now
  EXPECT_OK({{ p }}_event_synchronize(before));
  EXPECT({{ p }}_event_synchronize(after) == {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT(std::string({{ p }}_error_detail()).find("gather (queued on device 0) failed") == 0);
  EXPECT({{ p }}_event_synchronize(after) == {{ NAME }}_ERROR_INVALID_VALUE);  // sticky
  EXPECT_OK({{ p }}_event_synchronize(before));
  EXPECT({{ p }}_stream_synchronize(s) == {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT(std::string({{ p }}_error_detail()).find("gather") != std::string::npos);
  EXPECT_OK({{ p }}_stream_synchronize(s));  // reported to the whole stream's synchronisation: done
  EXPECT_OK({{ p }}_event_synchronize(after));
  EXPECT_OK({{ p }}_event_destroy(before));
  EXPECT_OK({{ p }}_event_destroy(after));
  EXPECT_OK({{ p }}_stream_destroy(s));
  return ok;
}

void throw_bad_alloc(void*) { throw std::bad_alloc(); }
void throw_runtime_error(void*) { throw std::runtime_error("scratch space exhausted"); }

// An exception thrown by queued work is that op's error, not std::terminate.
bool exceptions_in_queued_work_are_errors_naming_the_op() {
  bool ok = true;
  const bool inline_mode = synchronous_mode();
  {{ p }}_stream_t s = nullptr;
  EXPECT_OK({{ p }}_stream_create(0, &s));
  {{ p }}_status_t st = {{ p }}_launch_host_func(s, throw_bad_alloc, nullptr);
  if (!inline_mode) st = {{ p }}_stream_synchronize(s);
  EXPECT(st == {{ NAME }}_ERROR_OUT_OF_MEMORY);
  std::string detail = {{ p }}_error_detail();
  EXPECT(detail.find("host_func") == 0 && detail.find("std::bad_alloc") != std::string::npos);
  if (!ok) std::printf("  error detail: %s\n", detail.c_str());
  st = {{ p }}_launch_host_func(s, throw_runtime_error, nullptr);
  if (!inline_mode) st = {{ p }}_stream_synchronize(s);
  EXPECT(st == {{ NAME }}_ERROR_INVALID_VALUE);
  detail = {{ p }}_error_detail();
  EXPECT(detail.find("host_func") == 0 && detail.find("scratch space exhausted") != std::string::npos);
  if (!ok) std::printf("  error detail: %s\n", detail.c_str());
  EXPECT_OK({{ p }}_stream_synchronize(s));
  EXPECT_OK({{ p }}_stream_destroy(s));
  return ok;
}

// A child forked after the device was used shares its memory: the library refuses it in one
// line (device_count and get_device still answer; a free is left to the parent).
bool a_forked_child_is_refused() {
  bool ok = true;
  Dev<float> x(16, 1.f);
  const ChildResult child = in_child([&] {
    int count = 0, device = -1;
    void* p = nullptr;
    if ({{ p }}_device_count(&count) != {{ NAME }}_OK || {{ p }}_get_device(&device) != {{ NAME }}_OK) return 10;
    const {{ p }}_status_t filled = {{ p }}_fill(nullptr, {{ NAME }}_FLOAT32, x.ptr(), 16, 5.0);
    const {{ p }}_status_t synced = {{ p }}_device_synchronize(0);
    const {{ p }}_status_t allocated = {{ p }}_malloc(0, &p, 64);
    std::fprintf(stderr, "%s\n", {{ p }}_error_detail());
    if ({{ p }}_free(0, x.ptr()) != {{ NAME }}_OK) return 11;
    return filled == {{ NAME }}_ERROR_UNSUPPORTED && synced == {{ NAME }}_ERROR_UNSUPPORTED &&
                   allocated == {{ NAME }}_ERROR_UNSUPPORTED
               ? 0
               : 12;
  });
  EXPECT(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0);
  EXPECT(child.err.find("malloc: the {{ NAME }} device cannot be used in a process forked after it was initialised") == 0);
  EXPECT(std::count(child.err.begin(), child.err.end(), '\n') == 1);
  EXPECT(x.host() == std::vector<float>(16, 1.f));  // the parent's memory is untouched
  if (!ok) std::printf("  child: status %d, stderr: %s\n", child.status, child.err.c_str());
  return ok;
}

// Signals the device did not cause go on to the previous handler (here the default action):
// a SIGSEGV sent by kill kills; a SIGBUS in device memory is named.
bool signals_the_device_did_not_cause_are_passed_on() {
  bool ok = true;
  Dev<float> x(16, 1.f);  // the fault handler is installed
  const ChildResult killed = in_child([] {
    kill(getpid(), SIGSEGV);
    return 0;
  });
  EXPECT(WIFSIGNALED(killed.status) && WTERMSIG(killed.status) == SIGSEGV);
  if (!ok) std::printf("  SIGSEGV by kill: child status %d, stderr: %s\n", killed.status, killed.err.c_str());
  // qemu-user (an emulated target's verify sets DEVKIT_EMULATED) aborts in its own signal code on
  // a queued SIGBUS, before the handler runs: there, this half is the native targets' to prove.
  if (std::getenv("DEVKIT_EMULATED")) return ok;
  const ChildResult bus = in_child([&] {  // as the kernel sends it when device memory cannot be backed
    siginfo_t info;
    std::memset(&info, 0, sizeof(info));
    info.si_signo = SIGBUS;
    info.si_code = BUS_ADRERR;
    info.si_addr = x.ptr() + 2;
    syscall(SYS_rt_tgsigqueueinfo, getpid(), syscall(SYS_gettid), SIGBUS, &info);
    return 0;
  });
  EXPECT(WIFSIGNALED(bus.status) && WTERMSIG(bus.status) == SIGABRT);
  EXPECT(bus.err.find("[{{ NAME }}] SIGBUS: device memory at 0x") == 0);
  if (!ok) std::printf("  SIGBUS: child status %d, stderr: %s\n", bus.status, bus.err.c_str());
  return ok;
}

void sleep_long(void*) { sleep(30); }

// This binary with --exit-with-queued-work: an op still running when main returns.
int exit_with_queued_work() {
  {{ p }}_launch_host_func(nullptr, sleep_long, nullptr);
  return 0;
}

// Work still queued at exit is waited for, within {{ NAME }}_EXIT_TIMEOUT_S: then the process
// ends naming the op instead of hanging.
bool the_exit_wait_is_bounded() {
  bool ok = true;
  if (synchronous_mode()) return ok;
  const auto start = std::chrono::steady_clock::now();
  const ChildResult child = in_child([] {
    setenv("{{ NAME }}_EXIT_TIMEOUT_S", "1", 1);
    execl("/proc/self/exe", "test_{{ p }}_device", "--exit-with-queued-work", static_cast<char*>(nullptr));
    return 127;
  });
  EXPECT(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  EXPECT(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 1);
  EXPECT(child.err.find("host_func") != std::string::npos &&
         child.err.find("{{ NAME }}_EXIT_TIMEOUT_S=1") != std::string::npos);
  if (!ok) std::printf("  child: status %d, stderr: %s\n", child.status, child.err.c_str());
  return ok;
}

// ---- collectives: each rank is a process of its own (this binary again, with --ccl-rank) ----

std::string g_self;  // this binary

// The communicator directory in /dev/shm a unique id names ("<p>ccl-<name>-<secret>").
std::string comm_dir(const {{ p }}_ccl_id_t& id) {
  const std::string text(id.bytes);
  return "/dev/shm/" + text.substr(0, text.rfind('-'));
}

void ccl_pause(void* ms) { usleep(static_cast<useconds_t>(*static_cast<int*>(ms)) * 1000); }

// The status of the all_reduce `call` makes, at the call (inline) or the synchronisation
// (queued), and the error detail that goes with it.
struct CclResult {
  {{ p }}_status_t status;
  std::string detail;
};
CclResult ccl_outcome(int device, const std::function<{{ p }}_status_t()>& call) {
  const {{ p }}_status_t at_call = call();
  const std::string detail_at_call = {{ p }}_error_detail();
  if (synchronous_mode() || at_call != {{ NAME }}_OK) return {at_call, detail_at_call};
  const {{ p }}_status_t at_sync = {{ p }}_device_synchronize(device);
  return {at_sync, {{ p }}_error_detail()};
}

// The modes of one rank that go wrong on purpose (see the tests below); false: not such a mode.
bool ccl_failure_mode(const std::string& mode, int rank, int nranks, int device, {{ p }}_comm_t comm, bool* passed) {
  bool ok = true;
  if (mode == "mismatch") {  // rank 0 all-reduces 2048 floats, rank 1 1024: both fail, naming both sides
    const size_t count = rank == 0 ? 2048 : 1024;
    Dev<float> x(std::vector<float>(count, 1.f), device);
    const CclResult r = ccl_outcome(device, [&] {
      return {{ p }}_ccl_all_reduce(nullptr, x.ptr(), x.ptr(), count, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, comm);
    });
    EXPECT(r.status == {{ NAME }}_ERROR_INVALID_VALUE);
    const std::string mine = "rank " + std::to_string(rank) + " all_reduce of " + std::to_string(count) + " float32";
    const std::string theirs = "rank " + std::to_string(1 - rank) + " all_reduce of " + std::to_string(3072 - count) +
                               " float32";
    EXPECT(r.detail.find(mine) != std::string::npos && r.detail.find(" but " + theirs) != std::string::npos);
    EXPECT((x.host() == std::vector<float>(count, 1.f)));  // not written
    if (!ok) std::printf("  rank %d: status %d, detail: %s\n", rank, r.status, r.detail.c_str());
  } else if (mode == "nospace") {  // rank 1 cannot write its data (EFBIG, as ENOSPC would): both fail at once
    Dev<float> x(std::vector<float>(4096, 1.f), device);  // (device memory first: it is a file too)
    if (rank == 1) {
      signal(SIGXFSZ, SIG_IGN);
      const rlimit small{1024, 1024};
      setrlimit(RLIMIT_FSIZE, &small);
    }
    const auto start = std::chrono::steady_clock::now();
    const CclResult r = ccl_outcome(device, [&] {
      return {{ p }}_ccl_all_reduce(nullptr, x.ptr(), x.ptr(), 4096, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, comm);
    });
    EXPECT(r.status == {{ NAME }}_ERROR_PEER);
    EXPECT(r.detail.find("File too large") != std::string::npos);
    if (rank == 0) EXPECT(r.detail.find("rank 1") != std::string::npos);
    // at once: not the timeout, nor rank 1's exit (it stays 3 s more)
    EXPECT(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2500));
    if (!ok) std::printf("  rank %d: status %d, detail: %s\n", rank, r.status, r.detail.c_str());
    if (rank == 1) sleep(3);
  } else if (mode == "streams") {  // one communicator, two streams: the first call's stream starts later
    {{ p }}_stream_t s1 = nullptr, s2 = nullptr;
    EXPECT_OK({{ p }}_stream_create(device, &s1));
    EXPECT_OK({{ p }}_stream_create(device, &s2));
    static int pause_ms = 0;
    pause_ms = 100 * (rank + 1);
    Dev<float> a(std::vector<float>(64, 1.f + rank), device), b(std::vector<float>(64, 10.f * (rank + 1)), device);
    EXPECT_OK({{ p }}_launch_host_func(s1, ccl_pause, &pause_ms));
    EXPECT_OK({{ p }}_ccl_all_reduce(s1, a.ptr(), a.ptr(), 64, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, comm));
    EXPECT_OK({{ p }}_ccl_all_reduce(s2, b.ptr(), b.ptr(), 64, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, comm));
    EXPECT_OK({{ p }}_stream_synchronize(s2));
    EXPECT_OK({{ p }}_stream_synchronize(s1));
    if (!ok) std::printf("  rank %d: %s\n", rank, {{ p }}_error_detail());
    float want_a = 0.f, want_b = 0.f;
    for (int r = 0; r < nranks; ++r) want_a += 1.f + r, want_b += 10.f * (r + 1);
    EXPECT((a.host() == std::vector<float>(64, want_a)));
    EXPECT((b.host() == std::vector<float>(64, want_b)));
    EXPECT_OK({{ p }}_stream_destroy(s1));
    EXPECT_OK({{ p }}_stream_destroy(s2));
  } else {
    return false;
  }
  *passed = ok;
  return true;
}

// One rank's part of the collective tests: every collective against the values the ranks'
// inputs give ("all"), or one of the modes that go wrong on purpose. "exit": rank 1 joins and
// exits; rank 0's all-reduce must then fail naming it, well within the timeout ("exit-no-destroy":
// and rank 0 then exits without comm_destroy; "stalled": rank 1 never comes and ends without a
// trace once rank 0 has failed). "keep": "all" without comm_destroy. "crash": every
// rank exits without comm_destroy (what a killed job leaves). "duplicate": both
// processes claim rank 0 of 2; "nranks": rank 1 says there are 3 ranks.
int ccl_rank(const char* id_text, int rank, int nranks, const std::string& mode) {
  bool ok = true;
  {{ p }}_ccl_id_t id;
  std::memset(&id, 0, sizeof(id));
  std::strncpy(id.bytes, id_text, sizeof(id.bytes) - 1);
  int devices = 1;
  {{ p }}_device_count(&devices);
  const int device = rank % devices;
  EXPECT_OK({{ p }}_set_device(device));
  if (mode == "duplicate" || mode == "nranks") {  // every process's comm_init fails at once, saying why
    const int given_rank = mode == "duplicate" ? 0 : rank;
    const int given_nranks = mode == "duplicate" ? 2 : (rank == 1 ? 3 : 2);
    {{ p }}_comm_t comm = nullptr;
    const auto start = std::chrono::steady_clock::now();
    const {{ p }}_status_t st = {{ p }}_ccl_comm_init(&id, given_nranks, given_rank, &comm);
    const std::string detail = {{ p }}_error_detail();
    EXPECT(st == {{ NAME }}_ERROR_INVALID_VALUE);
    EXPECT(std::chrono::steady_clock::now() - start < std::chrono::seconds(3));
    EXPECT(detail.find(mode == "duplicate" ? "rank 0 of 2 was given to two processes" : "nranks") != std::string::npos);
    if (!ok) std::printf("  process %d: status %d, detail: %s\n", rank, st, detail.c_str());
    if (st == {{ NAME }}_OK) {{ p }}_ccl_comm_destroy(comm);
    return ok ? 0 : 1;
  }
  {{ p }}_comm_t comm = nullptr;
  EXPECT_OK({{ p }}_ccl_comm_init(&id, nranks, rank, &comm));
  if (!comm) {
    std::printf("  rank %d: comm_init: %s\n", rank, {{ p }}_error_detail());
    return 1;
  }
  if (mode == "crash") _exit(4);
  if (mode == "gated") {  // (tests/e2e/test_collectives.py) joined; goes on as "all" once stdin has a line
    std::printf("joined\n");
    std::fflush(stdout);
    char line[8];
    if (!std::fgets(line, sizeof(line), stdin)) return 1;
  }
  if (mode == "stalled" && rank == 1) {  // joined, then silent until killed: gone without a trace
    for (int i = 0; i < 1000; ++i) {  // (the directory goes when rank 0's wait fails: then "killed")
      if (access(comm_dir(id).c_str(), F_OK) != 0) _exit(5);
      usleep(10 * 1000);
    }
    _exit(6);
  }
  if (mode == "late" && rank == 1) {  // joined, then busy past rank 0's timeout
    sleep(3);
    EXPECT_OK({{ p }}_ccl_comm_destroy(comm));
    return ok ? 0 : 1;
  }
  if (mode == "exit" || mode == "exit-no-destroy" || mode == "late" || mode == "stalled") {
    if (rank == 1) _exit(3);  // joined, then gone: no collective, no destroy
    Dev<float> x(std::vector<float>(8, 1.f), device);
    // Queued, the error comes at the synchronisation; inline ({{ NAME }}_SYNC=1), from the call.
    const CclResult r = ccl_outcome(device, [&] {
      return {{ p }}_ccl_all_reduce(nullptr, x.ptr(), x.ptr(), 8, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, comm);
    });
    EXPECT(r.status == {{ NAME }}_ERROR_PEER);
    const std::string where =
        synchronous_mode() ? "ccl_all_reduce failed" : "ccl_all_reduce (queued on device 0) failed";
    if (mode != "late" && mode != "stalled") {
      EXPECT(r.detail.find(where + ": a peer rank failed: rank 0 of 2 waited for rank 1 (") == 0);
      EXPECT(r.detail.find("which has exited") != std::string::npos);
    } else {
      EXPECT(r.detail == where + ": a peer rank failed: rank 0 of 2 waited 1 s for rank 1 ({{ NAME }}_CCL_TIMEOUT_S=1)");
    }
    if (!ok) std::printf("  error detail: %s\n", r.detail.c_str());
    std::fflush(stdout);
    if (mode == "exit-no-destroy" || mode == "stalled") _exit(ok ? 0 : 1);  // as a launcher's worker ends
    EXPECT_OK({{ p }}_ccl_comm_destroy(comm));  // the last rank alive: the communicator's files go
    return ok ? 0 : 1;
  }
  bool failure_mode_passed = true;
  if (ccl_failure_mode(mode, rank, nranks, device, comm, &failure_mode_passed)) {
    EXPECT_OK({{ p }}_ccl_comm_destroy(comm));
    return ok && failure_mode_passed ? 0 : 1;
  }
  const size_t n = 5;
  std::vector<float> mine(n);
  for (size_t i = 0; i < n; ++i) mine[i] = static_cast<float>(rank + 1) + 0.5f * i;
  auto expected = [&](auto f) {
    std::vector<float> out(n);
    for (size_t i = 0; i < n; ++i) {
      float acc = 1.f + 0.5f * i;
      for (int r = 1; r < nranks; ++r) acc = f(acc, static_cast<float>(r + 1) + 0.5f * i);
      out[i] = acc;
    }
    return out;
  };
  {  // all-reduce, four reductions, one of them in place
    Dev<float> x(mine, device), sum(n, 0.f, device), mx(n, 0.f, device), prod(n, 0.f, device), mn(mine, device);
    EXPECT_OK({{ p }}_ccl_all_reduce(nullptr, x.ptr(), sum.ptr(), n, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, comm));
    EXPECT_OK({{ p }}_ccl_all_reduce(nullptr, x.ptr(), mx.ptr(), n, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_MAX, comm));
    EXPECT_OK({{ p }}_ccl_all_reduce(nullptr, x.ptr(), prod.ptr(), n, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_PROD, comm));
    EXPECT_OK({{ p }}_ccl_all_reduce(nullptr, mn.ptr(), mn.ptr(), n, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_MIN, comm));
    EXPECT(sum.host() == expected([](float a, float b) { return a + b; }));
    EXPECT(mx.host() == expected([](float a, float b) { return std::max(a, b); }));
    EXPECT(prod.host() == expected([](float a, float b) { return a * b; }));
    EXPECT(mn.host() == expected([](float a, float b) { return std::min(a, b); }));
  }
  {  // int64 sum, broadcast from the last rank, reduce to rank 0
    Dev<int64_t> x(std::vector<int64_t>(3, int64_t{1} << (40 + rank)), device), y(3, 0, device);
    EXPECT_OK({{ p }}_ccl_all_reduce(nullptr, x.ptr(), y.ptr(), 3, {{ NAME }}_INT64, {{ NAME }}_CCL_SUM, comm));
    int64_t want = 0;
    for (int r = 0; r < nranks; ++r) want += int64_t{1} << (40 + r);
    EXPECT(y.host() == std::vector<int64_t>(3, want));
    Dev<int64_t> b(std::vector<int64_t>{rank, 10 + rank}, device);
    EXPECT_OK({{ p }}_ccl_broadcast(nullptr, b.ptr(), 2, {{ NAME }}_INT64, nranks - 1, comm));
    EXPECT((b.host() == std::vector<int64_t>{nranks - 1, 10 + nranks - 1}));
    Dev<float> x2(mine, device), r0(n, -1.f, device);
    EXPECT_OK({{ p }}_ccl_reduce(nullptr, x2.ptr(), r0.ptr(), n, {{ NAME }}_FLOAT32, {{ NAME }}_CCL_SUM, 0, comm));
    EXPECT(r0.host() == (rank == 0 ? expected([](float a, float b) { return a + b; }) : std::vector<float>(n, -1.f)));
  }
  {  // all-gather and reduce-scatter
    Dev<int32_t> x(std::vector<int32_t>{rank, -rank}, device), all(2 * nranks, 0, device);
    EXPECT_OK({{ p }}_ccl_all_gather(nullptr, x.ptr(), all.ptr(), 2, {{ NAME }}_INT32, comm));
    std::vector<int32_t> want;
    for (int r = 0; r < nranks; ++r) want.insert(want.end(), {r, -r});
    EXPECT(all.host() == want);
    std::vector<int32_t> blocks(3 * nranks);
    for (int i = 0; i < 3 * nranks; ++i) blocks[i] = i * (rank + 1);
    Dev<int32_t> sb(blocks, device), mine_block(3, 0, device);
    EXPECT_OK({{ p }}_ccl_reduce_scatter(nullptr, sb.ptr(), mine_block.ptr(), 3, {{ NAME }}_INT32, {{ NAME }}_CCL_SUM,
                                      comm));
    const int32_t ranks_sum = nranks * (nranks + 1) / 2;
    EXPECT((mine_block.host() ==
            std::vector<int32_t>{3 * rank * ranks_sum, (3 * rank + 1) * ranks_sum, (3 * rank + 2) * ranks_sum}));
  }
  if (nranks > 1) {  // a ring of send/recv (a send does not wait for its recv), twice, then a barrier
    const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    Dev<float> out(std::vector<float>{static_cast<float>(rank), 7.f}, device), in(2, 0.f, device), in2(2, 0.f, device);
    EXPECT_OK({{ p }}_ccl_send(nullptr, out.ptr(), 2, {{ NAME }}_FLOAT32, next, comm));
    EXPECT_OK({{ p }}_ccl_send(nullptr, out.ptr(), 1, {{ NAME }}_FLOAT32, next, comm));
    EXPECT_OK({{ p }}_ccl_recv(nullptr, in.ptr(), 2, {{ NAME }}_FLOAT32, prev, comm));
    EXPECT_OK({{ p }}_ccl_recv(nullptr, in2.ptr(), 1, {{ NAME }}_FLOAT32, prev, comm));
    EXPECT((in.host() == std::vector<float>{static_cast<float>(prev), 7.f}));
    EXPECT((in2.host() == std::vector<float>{static_cast<float>(prev), 0.f}));
    EXPECT_OK({{ p }}_ccl_barrier(nullptr, comm));
    EXPECT({{ p }}_ccl_send(nullptr, out.ptr(), 2, {{ NAME }}_FLOAT32, rank, comm) == {{ NAME }}_ERROR_INVALID_VALUE);
  }
  EXPECT_OK({{ p }}_device_synchronize(device));
  if (mode == "keep") {  // exits holding the communicator, as Paddle and torch do
    if (!ok) std::printf("  rank %d: %s\n", rank, {{ p }}_error_detail());
    std::fflush(stdout);
    std::exit(ok ? 0 : 1);
  }
  EXPECT_OK({{ p }}_ccl_comm_destroy(comm));
  if (!ok) std::printf("  rank %d: %s\n", rank, {{ p }}_error_detail());
  return ok ? 0 : 1;
}

// Starts `nranks` processes of this binary on a new unique id; their exit statuses.
std::vector<int> run_ranks(int nranks, const char* mode, {{ p }}_ccl_id_t* id) {
  {{ p }}_ccl_get_unique_id(id);
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < nranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string rank = std::to_string(r), size = std::to_string(nranks);
      execl(g_self.c_str(), g_self.c_str(), "--ccl-rank", id->bytes, rank.c_str(), size.c_str(), mode,
            static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<int> statuses(nranks, -1);
  for (int done = 0; done < nranks; ++done) {  // in the order they end, as a launcher reaps them
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    const auto it = std::find(pids.begin(), pids.end(), pid);
    if (it == pids.end()) break;
    statuses[it - pids.begin()] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return statuses;
}

// Entries of /dev/shm the communicator of `id` left (its directory, or files named after it).
int leftover_files(const {{ p }}_ccl_id_t& id) {
  const std::string dir = comm_dir(id).substr(std::strlen("/dev/shm/"));
  int n = 0;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) n += std::strncmp(e->d_name, dir.c_str(), dir.size()) == 0;
    closedir(d);
  }
  return n;
}

bool collectives_across_processes() {
  bool ok = true;
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "60", 1);  // the ranks' (a failure here must not take 300 s)
  {{ p }}_ccl_id_t id;
  EXPECT((run_ranks(3, "all", &id) == std::vector<int>{0, 0, 0}));
  EXPECT(leftover_files(id) == 0);
  // A rank that exits makes the other's collective fail naming it (pid check: no timeout wait);
  // the rank left alive removes the communicator's files when it destroys it.
  const auto start = std::chrono::steady_clock::now();
  EXPECT((run_ranks(2, "exit", &id) == std::vector<int>{0, 3}));
  EXPECT(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
  EXPECT(leftover_files(id) == 0);
  // Nor when the survivor exits at once after the error (a worker's os._exit), or when ranks exit
  // holding the communicator (the last one out removes it at exit).
  EXPECT((run_ranks(2, "exit-no-destroy", &id) == std::vector<int>{0, 3}));
  EXPECT(leftover_files(id) == 0);
  EXPECT((run_ranks(2, "keep", &id) == std::vector<int>{0, 0}));
  EXPECT(leftover_files(id) == 0);
  // A rank that is alive but does not come: the timeout.
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "1", 1);
  EXPECT((run_ranks(2, "late", &id) == std::vector<int>{0, 0}));
  EXPECT(leftover_files(id) == 0);
  // A rank that stays silent and is then killed (a stopped process): rank 0's failed wait
  // removes the communicator while it is still alive; neither destroys it.
  EXPECT((run_ranks(2, "stalled", &id) == std::vector<int>{0, 5}));
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "60", 1);
  EXPECT(leftover_files(id) == 0);
  {{ p }}_ccl_id_t bad;
  std::memset(&bad, 0, sizeof(bad));
  std::strcpy(bad.bytes, "../escape");
  {{ p }}_comm_t comm = nullptr;
  EXPECT({{ p }}_ccl_comm_init(&bad, 2, 0, &comm) == {{ NAME }}_ERROR_INVALID_VALUE);
  EXPECT({{ p }}_ccl_comm_init(&id, 2, 2, &comm) == {{ NAME }}_ERROR_INVALID_VALUE);
  return ok;
}

// Ranks that disagree on a collective's size fail together, each naming both sides (no SIGBUS,
// no sum over misread memory); a rank that cannot write its data makes its peers fail at once
// with its cause (not the timeout); one communicator used from two streams keeps call order.
bool collectives_fail_together_and_keep_order() {
  bool ok = true;
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "60", 1);
  {{ p }}_ccl_id_t id;
  for (const char* mode : {"mismatch", "nospace", "streams"}) {
    const std::vector<int> statuses = run_ranks(2, mode, &id);
    EXPECT((statuses == std::vector<int>{0, 0}));
    EXPECT(leftover_files(id) == 0);
    if (!ok) std::printf("  mode %s: exit statuses %d %d\n", mode, statuses[0], statuses[1]);
  }
  return ok;
}

// comm_init refuses, in every process and at once, a rank given twice and ranks that disagree
// on nranks; a bad {{ NAME }}_CCL_TIMEOUT_S is warned about once and the default used.
bool communicator_setup_is_checked() {
  bool ok = true;
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "60", 1);
  {{ p }}_ccl_id_t id;
  EXPECT((run_ranks(2, "duplicate", &id) == std::vector<int>{0, 0}));
  EXPECT(leftover_files(id) == 0);
  EXPECT((run_ranks(2, "nranks", &id) == std::vector<int>{0, 0}));
  EXPECT(leftover_files(id) == 0);
  {{ p }}_ccl_get_unique_id(&id);
  const ChildResult child = in_child([&id] {
    setenv("{{ NAME }}_CCL_TIMEOUT_S", "soon", 1);
    execl(g_self.c_str(), g_self.c_str(), "--ccl-rank", id.bytes, "0", "1", "all", static_cast<char*>(nullptr));
    return 127;
  });
  EXPECT(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0);
  EXPECT(child.err.find("{{ NAME }}_CCL_TIMEOUT_S=soon") != std::string::npos &&
         child.err.find("using 300") != std::string::npos);
  EXPECT(leftover_files(id) == 0);
  if (!ok) std::printf("  child's stderr: %s\n", child.err.c_str());
  setenv("{{ NAME }}_CCL_TIMEOUT_S", "60", 1);
  return ok;
}

// Ranks killed before they destroy their communicator leave its files; the next unique id
// made on the machine removes them (every rank is dead).
bool dead_communicators_are_swept() {
  bool ok = true;
  {{ p }}_ccl_id_t id, next;
  EXPECT((run_ranks(2, "crash", &id) == std::vector<int>{4, 4}));
  EXPECT((run_ranks(1, "all", &next) == std::vector<int>{0}));
  EXPECT(leftover_files(id) == 0);
  EXPECT(leftover_files(next) == 0);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  g_self = argv[0];
  if (argc == 2 && std::string(argv[1]) == "--exit-with-queued-work") return exit_with_queued_work();
  if (argc == 6 && std::string(argv[1]) == "--ccl-rank")
    return ccl_rank(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), argv[5]);
  if (argc == 2 && std::string(argv[1]) == "--ccl-unique-id") {  // (for tests/e2e/test_collectives.py)
    {{ p }}_ccl_id_t id;
    if ({{ p }}_ccl_get_unique_id(&id) != {{ NAME }}_OK) return 1;
    std::printf("%s\n", id.bytes);
    return 0;
  }
  run("memory_accounting", memory_accounting);
  run("copies_round_trip", copies_round_trip);
  run("devices_and_peer_copies", devices_and_peer_copies);
  run("stream_and_event_order", stream_and_event_order);
  run("gemm_matches_naive", gemm_matches_naive);
  run("conv2d_matches_naive", conv2d_matches_naive);
  run("broadcast_and_reduce", broadcast_and_reduce);
  run("softmax_cross_entropy", softmax_cross_entropy);
  run("random_is_deterministic", random_is_deterministic);
  run("batch_norm_training_and_backward", batch_norm_training_and_backward);
  run("layer_norm_and_gelu", layer_norm_and_gelu);
  run("dropout_mask_and_scale", dropout_mask_and_scale);
  run("gather_and_strided_copy", gather_and_strided_copy);
  run("queues_run_later", queues_run_later);
  run("freed_memory_waits_for_queued_work", freed_memory_waits_for_queued_work);
  run("host_access_to_device_memory_faults", host_access_to_device_memory_faults);
  run("streams_outlive_events_and_waits", streams_outlive_events_and_waits);
  run("errors_go_to_the_synchronisations_that_cover_them", errors_go_to_the_synchronisations_that_cover_them);
  run("a_forked_child_is_refused", a_forked_child_is_refused);
  run("signals_the_device_did_not_cause_are_passed_on", signals_the_device_did_not_cause_are_passed_on);
  run("the_exit_wait_is_bounded", the_exit_wait_is_bounded);
  run("exceptions_in_queued_work_are_errors_naming_the_op", exceptions_in_queued_work_are_errors_naming_the_op);
  run("collectives_across_processes", collectives_across_processes);
  run("collectives_fail_together_and_keep_order", collectives_fail_together_and_keep_order);
  run("communicator_setup_is_checked", communicator_setup_is_checked);
  run("dead_communicators_are_swept", dead_communicators_are_swept);
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
