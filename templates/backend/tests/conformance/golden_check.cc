// Checks the {{ NAME }} device library's ops against golden data recorded with Paddle's
// CPU kernels on another machine (`devkit test-ops --gen-golden DIR`), through the C
// API only, so a target with no Paddle runtime (armhf, a board) gets numeric checks.
//
//   golden_{{ p }}_device DIR    reads DIR/manifest.txt, prints one line per case:
//   "GOLDEN PASS|FAIL <id> <op> max_abs_diff=<d> values=<n> [reason]"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "{{ p }}_device.h"
#include "device_buffer.h"

namespace {

struct Tensor {
  std::vector<int64_t> dims;
  std::vector<float> host;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
};

struct Case {
  std::string id, op;
  std::map<std::string, std::string> attrs;
  std::map<std::string, Tensor> tensors;  // inputs and "expected"
  double rtol = 1e-4, atol = 1e-5;
};

bool load_tensor(const std::string& dir, const std::string& spec, Tensor* t) {
  const auto colon = spec.find(':');
  if (colon == std::string::npos) return false;
  const std::string dims = spec.substr(colon + 1);
  if (dims != "-") {
    std::stringstream ds(dims);
    for (std::string d; std::getline(ds, d, ',');) t->dims.push_back(std::atoll(d.c_str()));
  }
  t->host.resize(static_cast<size_t>(t->numel()));
  std::ifstream f(dir + "/" + spec.substr(0, colon), std::ios::binary);
  f.read(reinterpret_cast<char*>(t->host.data()), static_cast<std::streamsize>(t->host.size() * sizeof(float)));
  return static_cast<bool>(f) || t->host.empty();
}

{{ p }}_shape_t shape_of(const std::vector<int64_t>& dims) {
  {{ p }}_shape_t s{};
  s.ndim = static_cast<int>(dims.size());
  for (int i = 0; i < s.ndim; ++i) s.dims[i] = dims[i];
  return s;
}

int64_t attr_int(const Case& c, const char* key, int64_t fallback) {
  const auto it = c.attrs.find(key);
  return it == c.attrs.end() ? fallback : std::atoll(it->second.c_str());
}

std::vector<int64_t> attr_list(const Case& c, const char* key) {
  std::vector<int64_t> out;
  const auto it = c.attrs.find(key);
  if (it == c.attrs.end()) return out;
  std::stringstream ss(it->second);
  for (std::string v; std::getline(ss, v, ',');) out.push_back(std::atoll(v.c_str()));
  return out;
}

// Runs the case on the device into `out`; returns "" or why it could not run.
std::string run_case(const Case& c, const Tensor& expected, std::vector<float>* out) {
  const std::string kind = c.attrs.count("kind") ? c.attrs.at("kind") : "";
  const Tensor& x = c.tensors.at("x");
  Dev<float> dx(x.host), dout(expected.host.size());
  {{ p }}_status_t status = {{ NAME }}_ERROR_UNSUPPORTED;
  if (c.op == "binary") {
    static const std::map<std::string, {{ p }}_binary_op_t> ops = {
        {"add", {{ NAME }}_BINARY_ADD}, {"subtract", {{ NAME }}_BINARY_SUB}, {"multiply", {{ NAME }}_BINARY_MUL},
        {"divide", {{ NAME }}_BINARY_DIV}, {"maximum", {{ NAME }}_BINARY_MAX}, {"minimum", {{ NAME }}_BINARY_MIN}};
    if (!ops.count(kind)) return "unknown binary kind " + kind;
    const Tensor& y = c.tensors.at("y");
    Dev<float> dy(y.host);
    const auto xs = shape_of(x.dims), ys = shape_of(y.dims), os = shape_of(expected.dims);
    status = {{ p }}_binary(nullptr, ops.at(kind), {{ NAME }}_FLOAT32, dx.ptr(), &xs, dy.ptr(), &ys, dout.ptr(), &os);
  } else if (c.op == "unary") {
    static const std::map<std::string, {{ p }}_unary_op_t> ops = {
        {"relu", {{ NAME }}_UNARY_RELU}, {"sigmoid", {{ NAME }}_UNARY_SIGMOID}, {"tanh", {{ NAME }}_UNARY_TANH},
        {"exp", {{ NAME }}_UNARY_EXP},   {"sqrt", {{ NAME }}_UNARY_SQRT},       {"abs", {{ NAME }}_UNARY_ABS}};
    if (!ops.count(kind)) return "unknown unary kind " + kind;
    status = {{ p }}_unary(nullptr, ops.at(kind), {{ NAME }}_FLOAT32, dx.ptr(), dout.ptr(), x.numel());
  } else if (c.op == "gemm") {
    const Tensor& y = c.tensors.at("y");
    Dev<float> dy(y.host);
    const bool tb = attr_int(c, "trans_b", 0) != 0;
    const int64_t m = x.dims[0], k = x.dims[1], n = tb ? y.dims[0] : y.dims[1];
    status = {{ p }}_gemm(nullptr, {{ NAME }}_FLOAT32, 0, tb, m, n, k, 1.f, dx.ptr(), k, dy.ptr(), tb ? k : n, 0.f, dout.ptr(), n);
  } else if (c.op == "conv2d") {
    const Tensor& w = c.tensors.at("w");
    Dev<float> dw(w.host);
    {{ p }}_conv2d_params_t p{};
    p.batch = x.dims[0], p.in_channels = x.dims[1], p.in_h = x.dims[2], p.in_w = x.dims[3];
    p.out_channels = w.dims[0], p.kernel_h = w.dims[2], p.kernel_w = w.dims[3];
    p.out_h = expected.dims[2], p.out_w = expected.dims[3];
    p.stride_h = p.stride_w = attr_int(c, "stride", 1);
    p.pad_top = p.pad_left = attr_int(c, "pad", 0);
    p.dilation_h = p.dilation_w = attr_int(c, "dilation", 1);
    p.groups = attr_int(c, "groups", 1);
    status = {{ p }}_conv2d_forward(nullptr, {{ NAME }}_FLOAT32, &p, dx.ptr(), dw.ptr(), dout.ptr());
  } else if (c.op == "pool2d") {
    {{ p }}_pool2d_params_t p{};
    p.batch = x.dims[0], p.channels = x.dims[1], p.in_h = x.dims[2], p.in_w = x.dims[3];
    p.out_h = expected.dims[2], p.out_w = expected.dims[3];
    p.kernel_h = p.kernel_w = attr_int(c, "kernel", 2);
    p.stride_h = p.stride_w = attr_int(c, "stride", 2);
    p.pad_top = p.pad_left = attr_int(c, "pad", 0);
    p.is_max = static_cast<int>(attr_int(c, "max", 1));
    p.exclusive = 1;  // Paddle's avg_pool2d default
    status = {{ p }}_pool2d_forward(nullptr, {{ NAME }}_FLOAT32, &p, dx.ptr(), dout.ptr());
  } else if (c.op == "softmax") {
    const int64_t axis = x.dims.back();
    status = {{ p }}_softmax_forward(nullptr, {{ NAME }}_FLOAT32, dx.ptr(), dout.ptr(), x.numel() / axis, axis, 1);
  } else if (c.op == "reduce") {
    static const std::map<std::string, {{ p }}_reduce_op_t> ops = {
        {"sum", {{ NAME }}_REDUCE_SUM}, {"mean", {{ NAME }}_REDUCE_MEAN}, {"max", {{ NAME }}_REDUCE_MAX}};
    if (!ops.count(kind)) return "unknown reduce kind " + kind;
    std::vector<int> mask(x.dims.size(), 0);
    for (int64_t a : attr_list(c, "axes")) mask.at(static_cast<size_t>(a)) = 1;
    const auto xs = shape_of(x.dims);
    status = {{ p }}_reduce(nullptr, ops.at(kind), {{ NAME }}_FLOAT32, dx.ptr(), &xs, mask.data(), dout.ptr());
  } else if (c.op == "transpose") {
    std::vector<int> perm;
    for (int64_t a : attr_list(c, "perm")) perm.push_back(static_cast<int>(a));
    const auto xs = shape_of(x.dims);
    status = {{ p }}_transpose(nullptr, {{ NAME }}_FLOAT32, dx.ptr(), &xs, perm.data(), dout.ptr());
  } else if (c.op == "scale") {
    status = {{ p }}_scale(nullptr, {{ NAME }}_FLOAT32, dx.ptr(), dout.ptr(), x.numel(),
                           std::atof(c.attrs.at("scale").c_str()), std::atof(c.attrs.at("bias").c_str()), 1);
  } else {
    return "op " + c.op + " is not known to this checker";
  }
  if (status != {{ NAME }}_OK) return std::string("device op failed: ") + {{ p }}_status_string(status);
  out->resize(expected.host.size());
  // (the synchronous copy waits for the queued op and returns an error it raised)
  if (!out->empty()) status = {{ p }}_memcpy(out->data(), dout.ptr(), out->size() * sizeof(float), {{ NAME }}_COPY_DEVICE_TO_HOST);
  if (status != {{ NAME }}_OK)
    return std::string("device op failed: ") + {{ p }}_status_string(status) + " " + {{ p }}_error_detail();
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s GOLDEN_DIR (made by devkit test-ops --gen-golden)\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::ifstream manifest(dir + "/manifest.txt");
  if (!manifest) {
    std::fprintf(stderr, "no %s/manifest.txt\n", dir.c_str());
    return 2;
  }
  if ({{ p }}_init() != {{ NAME }}_OK) return 2;
  int passed = 0, failed = 0;
  for (std::string line; std::getline(manifest, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::stringstream fields(line);
    Case c;
    fields >> c.id >> c.op;
    bool loaded = true;
    for (std::string field; fields >> field;) {
      const auto eq = field.find('=');
      const std::string key = field.substr(0, eq), value = field.substr(eq + 1);
      if (key == "rtol") c.rtol = std::atof(value.c_str());
      else if (key == "atol") c.atol = std::atof(value.c_str());
      else if (value.find(".bin:") != std::string::npos) loaded &= load_tensor(dir, value, &c.tensors[key]);
      else c.attrs[key] = value;
    }
    std::vector<float> got;
    std::string reason = !loaded ? "cannot read its .bin files"
                         : (!c.tensors.count("x") || !c.tensors.count("expected")) ? "no x or expected"
                                                                                     : run_case(c, c.tensors.at("expected"), &got);
    double max_diff = 0;
    int64_t bad = 0;
    const Tensor& want = c.tensors["expected"];
    for (size_t i = 0; reason.empty() && i < got.size(); ++i) {
      const double diff = std::fabs(static_cast<double>(got[i]) - want.host[i]);
      max_diff = std::max(max_diff, diff);
      if (!(diff <= c.atol + c.rtol * std::fabs(want.host[i]))) ++bad;
    }
    if (reason.empty() && bad) reason = std::to_string(bad) + " values outside rtol/atol";
    std::printf("GOLDEN %s %s %s max_abs_diff=%.3g values=%zu%s%s\n", reason.empty() ? "PASS" : "FAIL", c.id.c_str(),
                c.op.c_str(), max_diff, got.size(), reason.empty() ? "" : " ", reason.c_str());
    (reason.empty() ? passed : failed)++;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 && passed > 0 ? 0 : 1;
}
