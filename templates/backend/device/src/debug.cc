// {{ NAME }}_DUMP_OP_ARGS and {{ NAME }}_AUTOCOMPARE (see debug.h), and the reference ops
// autocompare runs.
#include "debug.h"
#include "internal.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>

namespace {{ p }} {
namespace debug {
namespace {

thread_local const char* g_kernel = "-";
std::atomic<int64_t> g_compared{0}, g_mismatched{0};
std::mutex g_print;  // one op's lines stay together

double env_number(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const double d = std::strtod(v, &end);
  if (end == v || *end) {
    std::fprintf(stderr, "[{{ NAME }}] ignoring %s=%s: not a number\n", name, v);
    return fallback;
  }
  return d;
}

void summary() {
  std::fprintf(stderr, "[{{ NAME }}] autocompare: %lld op outputs compared, %lld mismatched\n",
               static_cast<long long>(g_compared.load()), static_cast<long long>(g_mismatched.load()));
}

double value_at(const void* data, {{ p }}_dtype_t dtype, int64_t i) {
  switch (dtype) {
    case {{ NAME }}_BOOL: return static_cast<const bool*>(data)[i];
    case {{ NAME }}_INT32: return static_cast<const int32_t*>(data)[i];
    case {{ NAME }}_INT64: return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case {{ NAME }}_FLOAT32: return static_cast<const float*>(data)[i];
    case {{ NAME }}_FLOAT64: return static_cast<const double*>(data)[i];
    case {{ NAME }}_UINT8: return static_cast<const uint8_t*>(data)[i];
    case {{ NAME }}_INT8: return static_cast<const int8_t*>(data)[i];
    case {{ NAME }}_INT16: return static_cast<const int16_t*>(data)[i];
    case {{ NAME }}_FLOAT16: return static_cast<const core::float16*>(data)[i];
    case {{ NAME }}_BFLOAT16: return static_cast<const core::bfloat16*>(data)[i];
  }
  return 0;
}

}  // namespace

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

const Settings& settings() {
  static const Settings s = [] {
    Settings r;
    r.dump = static_cast<int>(env_number("{{ NAME }}_DUMP_OP_ARGS", 0));
    r.autocompare = env_number("{{ NAME }}_AUTOCOMPARE", 0) != 0;
    r.rtol = env_number("{{ NAME }}_AUTOCOMPARE_RTOL", r.rtol);
    r.atol = env_number("{{ NAME }}_AUTOCOMPARE_ATOL", r.atol);
    r.max_values = static_cast<int64_t>(env_number("{{ NAME }}_DUMP_MAX_VALUES", 16));
    if (r.autocompare) std::atexit(summary);
    return r;
  }();
  return s;
}

const char* current_kernel() { return g_kernel; }

std::string shape_string(const {{ p }}_shape_t& shape) {
  return dims_string(std::vector<int64_t>(shape.dims, shape.dims + shape.ndim));
}

Trace& Trace::tensor(const char* name, const void* data, {{ p }}_dtype_t dtype, const {{ p }}_shape_t* shape) {
  if (on_ && shape) tensors_.push_back({name, data, dtype, std::vector<int64_t>(shape->dims, shape->dims + shape->ndim)});
  return *this;
}

Trace& Trace::tensor(const char* name, const void* data, {{ p }}_dtype_t dtype, std::initializer_list<int64_t> dims) {
  if (on_) tensors_.push_back({name, data, dtype, dims});
  return *this;
}

Trace::~Trace() {
  if (!on_) return;
  const Settings& s = settings();
  std::string line = std::string("[{{ NAME }}] ") + g_kernel + ": " + op_;
  if (s.dump >= 2) {
    line += attrs_;
    for (const Tensor& t : tensors_) line += " " + t.name + "=" + core::dtype_name(t.dtype) + dims_string(t.dims);
  }
  std::lock_guard<std::mutex> lock(g_print);
  std::fprintf(stderr, "%s\n", line.c_str());
  if (s.dump < 3) return;
  for (const Tensor& t : tensors_) {
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    std::string values;
    char buf[32];
    // Values are read through the library's view of device memory (level 3 runs ops inline).
    const void* data = t.data ? host_view_of(t.data, -1) : nullptr;
    for (int64_t i = 0; i < std::min(n, s.max_values) && data; ++i) {
      std::snprintf(buf, sizeof(buf), "%s%.6g", i ? ", " : "", value_at(data, t.dtype, i));
      values += buf;
    }
    std::fprintf(stderr, "[{{ NAME }}]   %s = [%s%s] (%lld values)\n", t.name.c_str(), values.c_str(),
                 n > s.max_values ? ", ..." : "", static_cast<long long>(n));
  }
}

void compare(const char* op, const char* output, const float* got, const float* want, int64_t n,
             const std::string& shape) {
  const Settings& s = settings();
  double max_diff = 0, allowed_at_max = 0;
  int64_t worst = -1, bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double allowed = s.atol + s.rtol * std::fabs(static_cast<double>(want[i]));
    const bool nan_mismatch = std::isnan(got[i]) != std::isnan(want[i]);
    if (diff > allowed || nan_mismatch) {
      ++bad;
      if (worst < 0 || diff > max_diff || nan_mismatch) {
        max_diff = nan_mismatch ? std::numeric_limits<double>::infinity() : diff;
        allowed_at_max = allowed;
        worst = i;
      }
    }
  }
  g_compared.fetch_add(1);
  if (bad == 0) return;
  g_mismatched.fetch_add(1);
  std::lock_guard<std::mutex> lock(g_print);
  std::fprintf(stderr,
               "[{{ NAME }}] AUTOCOMPARE MISMATCH kernel=%s op=%s output=%s shape=%s: %lld of %lld "
               "values differ, max |diff| %.3g at %lld (device %.6g, reference %.6g, allowed %.3g)\n",
               g_kernel, op, output, shape.c_str(), static_cast<long long>(bad), static_cast<long long>(n),
               max_diff, static_cast<long long>(worst), got[worst], want[worst], allowed_at_max);
}

}  // namespace debug

namespace reference {
namespace {

// Offset into a tensor of shape `src` broadcast (trailing-aligned) to `dst` at `coord`.
int64_t broadcast_offset(const {{ p }}_shape_t& src, const {{ p }}_shape_t& dst, const std::vector<int64_t>& coord) {
  int64_t offset = 0;
  for (int d = 0; d < src.ndim; ++d) {
    const int dd = d + dst.ndim - src.ndim;
    offset = offset * src.dims[d] + (src.dims[d] == 1 ? 0 : coord[dd]);
  }
  return offset;
}

bool next_coord(std::vector<int64_t>* coord, const {{ p }}_shape_t& shape) {
  for (int d = shape.ndim - 1; d >= 0; --d) {
    if (++(*coord)[d] < shape.dims[d]) return true;
    (*coord)[d] = 0;
  }
  return false;
}

int64_t numel(const {{ p }}_shape_t& s) {
  int64_t n = 1;
  for (int d = 0; d < s.ndim; ++d) n *= s.dims[d];
  return n;
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, const float* c_in, float* c,
          int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += static_cast<double>(trans_a ? a[p * lda + i] : a[i * lda + p]) *
               (trans_b ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = static_cast<float>(alpha * acc + (beta == 0.f ? 0.0 : beta * c_in[i * ldc + j]));
    }
}

void conv2d_forward(const {{ p }}_conv2d_params_t& p, const float* x, const float* w, float* y) {
  const int64_t cg = p.in_channels / p.groups, og = p.out_channels / p.groups;
  for (int64_t n = 0; n < p.batch; ++n)
    for (int64_t oc = 0; oc < p.out_channels; ++oc)
      for (int64_t oy = 0; oy < p.out_h; ++oy)
        for (int64_t ox = 0; ox < p.out_w; ++ox) {
          double acc = 0;
          const int64_t g = oc / og;
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t i = 0; i < p.kernel_h; ++i)
              for (int64_t j = 0; j < p.kernel_w; ++j) {
                const int64_t iy = oy * p.stride_h - p.pad_top + i * p.dilation_h;
                const int64_t ix = ox * p.stride_w - p.pad_left + j * p.dilation_w;
                if (iy < 0 || iy >= p.in_h || ix < 0 || ix >= p.in_w) continue;
                acc += static_cast<double>(x[((n * p.in_channels + g * cg + ic) * p.in_h + iy) * p.in_w + ix]) *
                       w[((oc * cg + ic) * p.kernel_h + i) * p.kernel_w + j];
              }
          y[((n * p.out_channels + oc) * p.out_h + oy) * p.out_w + ox] = static_cast<float>(acc);
        }
}

void binary({{ p }}_binary_op_t op, const float* x, const {{ p }}_shape_t& xs, const float* y,
            const {{ p }}_shape_t& ys, float* out, const {{ p }}_shape_t& os) {
  if (numel(os) == 0) return;
  std::vector<int64_t> coord(os.ndim, 0);
  int64_t i = 0;
  do {
    const float a = x[broadcast_offset(xs, os, coord)], b = y[broadcast_offset(ys, os, coord)];
    float r = 0;
    switch (op) {
      case {{ NAME }}_BINARY_ADD: r = a + b; break;
      case {{ NAME }}_BINARY_SUB: r = a - b; break;
      case {{ NAME }}_BINARY_MUL: r = a * b; break;
      case {{ NAME }}_BINARY_DIV: r = a / b; break;
      case {{ NAME }}_BINARY_MAX: r = std::max(a, b); break;
      case {{ NAME }}_BINARY_MIN: r = std::min(a, b); break;
      default: break;
    }
    out[i++] = r;
  } while (next_coord(&coord, os));
}

void softmax_forward(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t a = 0; a < axis; ++a) mx = std::max<double>(mx, x[(o * axis + a) * inner + in]);
      for (int64_t a = 0; a < axis; ++a) sum += std::exp(x[(o * axis + a) * inner + in] - mx);
      for (int64_t a = 0; a < axis; ++a)
        y[(o * axis + a) * inner + in] = static_cast<float>(std::exp(x[(o * axis + a) * inner + in] - mx) / sum);
    }
}

void reduce({{ p }}_reduce_op_t op, const float* x, const {{ p }}_shape_t& xs, const int* mask, float* out) {
  {{ p }}_shape_t kept{};
  int64_t group = 1;
  for (int d = 0; d < xs.ndim; ++d) {
    if (mask[d]) group *= xs.dims[d];
    else kept.dims[kept.ndim++] = xs.dims[d];
  }
  std::vector<double> acc(static_cast<size_t>(numel(kept)),
                          op == {{ NAME }}_REDUCE_MAX ? -std::numeric_limits<double>::infinity() : 0.0);
  if (numel(xs) > 0) {
    std::vector<int64_t> coord(xs.ndim, 0);
    int64_t i = 0;
    do {
      int64_t o = 0;
      for (int d = 0; d < xs.ndim; ++d)
        if (!mask[d]) o = o * xs.dims[d] + coord[d];
      acc[o] = op == {{ NAME }}_REDUCE_MAX ? std::max<double>(acc[o], x[i]) : acc[o] + x[i];
      ++i;
    } while (next_coord(&coord, xs));
  }
  for (size_t o = 0; o < acc.size(); ++o)
    out[o] = static_cast<float>(op == {{ NAME }}_REDUCE_MEAN && group > 0 ? acc[o] / group : acc[o]);
}

}  // namespace reference
}  // namespace {{ p }}

extern "C" void {{ p }}_debug_kernel(const char* name) { {{ p }}::debug::g_kernel = name ? name : "-"; }
