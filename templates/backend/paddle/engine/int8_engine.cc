// The {{ NAME }} int8 engine: Paddle's Custom Engine interface (InitPluginCustomEngine) for the
// custom_engine.{{ p }}_int8_engine ops int8_engine_pass.cc puts in a program.
//
// Each op is one quantized convolution or matmul, or one quantized activation between float ops.
// A convolution or matmul, built once (at its first run, when its weight and scales are on the
// device), quantizes the weight to int8 on the device; each run it quantizes x with x's scale (the
// same integers Paddle's quantize_linear gives), sums int8 products in int32 (conv2d_int8 /
// gemm_int8) and rescales the sums once to float (requantize): what the QDQ program computes in
// float, in integer arithmetic. An activation (the input of a batch norm, relu or pooling that
// Paddle's quantization observed) is quantized to int8 and taken back to the float values of its
// grid, so the float ops between the engine's see exactly the values the QDQ program gives them;
// a relu or max pooling that alone reads it runs on the integers in between (the maximum with an
// int8 zero, int8 max pooling: exact, as both commute with the rounding), and an average pooling
// sums the integers in int32 and rescales the sums to float once (avg_pool2d_int8); a softmax takes
// the exponentials of the integers' differences from a table (softmax_int8). A residual add
// quantizes both operands with their scales and adds the integers, each rescaled once (add_int8); a
// concat writes each operand's integers, rescaled once by its own scale, into its slice (concat_int8).
// Everything is queued on the op's stream; nothing here reads device memory. A vendor's engine
// replaces these device calls by its graph compiler's.
//
// No engine op runs without InferMeta's checks: Paddle runs none for an engine op, so the engine
// checks its attributes when it is built (int8_engine_checks.h) and its inputs' ranks and shapes
// against the weight and attributes at every run, each refusal an InvalidArgument naming the op.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "int8_engine_checks.h"
#include "../kernels/conv_geometry.h"
#include "../kernels/kernel_helpers.h"  // (by its path from here: see CMakeLists.txt)
#include "paddle/fluid/custom_engine/custom_engine_ext.h"
#include "paddle/fluid/framework/new_executor/instruction/custom_engine_instruction.h"
#include "paddle/fluid/pir/dialect/kernel/ir/kernel_type.h"
#include "paddle/fluid/pir/transforms/pd_op_to_kernel_pass.h"
#include "paddle/pir/include/core/builtin_attribute.h"
#include "paddle/pir/include/core/builtin_type.h"
#include "paddle/pir/include/core/ir_context.h"

namespace {{ p }}_engine {
namespace {

using {{ p }}_kernels::axis_geometry;
using {{ p }}_kernels::axis_view;
using {{ p }}_kernels::conv2d_params;
using {{ p }}_kernels::AxisGeometry;
using {{ p }}_kernels::AxisView;
using {{ p }}_kernels::stream_of;

// how the device library's op trace names the calls of a convolution or matmul; those of an
// activation are "int8_engine_<kind>" (verify counts what the engine ran by them:
// quant_engine.engine_ops)
constexpr const char* kKernel = "int8_engine";

// The engine refuses an op `problem` (not empty) says is wrong, as Paddle's InferMeta would.
void refuse_if(const std::string& problem) {
  PADDLE_ENFORCE_EQ(problem.empty(), true,
                    common::errors::InvalidArgument("{{ device_type }} int8 engine: %s", problem));
}

template <typename T>
T required(const std::optional<T>& value, pir::Operation* op, const char* name, const char* due) {
  if (!value) refuse_if(wrong(op, name, due));
  return *value;
}

int32_t int32_attr(pir::Operation* op, const char* name) { return required(int32_of(op, name), op, name, "an int32"); }
bool bool_attr(pir::Operation* op, const char* name) { return required(bool_of(op, name), op, name, "a bool"); }
std::string str_attr(pir::Operation* op, const char* name) { return required(str_of(op, name), op, name, "a string"); }

// An int array attribute the engine's pass copied from a conv2d or pool2d (conv_problem or
// pool_problem has checked it).
std::vector<int> int_list(pir::Operation* op, const char* name) {
  const std::vector<int64_t> values = required(int_list_of(op, name), op, name, "ints");
  return {values.begin(), values.end()};
}

bool is_known_kind(const std::string& kind) {
  return is_activation_kind(kind) || kind == "conv2d" || kind == "matmul" || kind == "add" || kind == "concat";
}

// The most elements a tensor of the engine holds (a bound that also keeps every size of the device
// library's int64 arithmetic far from overflowing).
constexpr double kMaxElements = 1ull << 34;

// What is wrong with an output of `dims` the engine would compute ("" when nothing).
std::string output_problem(const std::string& called, const std::vector<int64_t>& dims) {
  double elements = 1;
  bool positive = true;
  for (int64_t d : dims) {
    positive = positive && d >= 1;
    elements *= static_cast<double>(d);
  }
  if (positive && elements <= kMaxElements) return "";
  return called + " would give an output of " + common::make_ddim(dims).to_str() +
         (positive ? ", more elements than the engine holds" : ", where each dim >= 1 is due (its input is empty or "
                                                                       "smaller than its window)");
}

// dims with the axes start..stop merged into one, as Paddle's flatten shapes its output.
phi::DDim flattened(const phi::DDim& dims, int start, int stop) {
  const int rank = dims.size();
  start = start < 0 ? start + rank : start;
  stop = stop < 0 ? stop + rank : stop;
  std::vector<int64_t> out;
  int64_t merged = 1;
  for (int i = 0; i < rank; ++i) {
    if (i < start || i > stop) out.push_back(dims[i]);
    if (i >= start && i <= stop) merged *= dims[i];
    if (i == stop) out.push_back(merged);
  }
  return common::make_ddim(out);
}

{{ p }}_quant_params_t per_tensor(int64_t numel, int32_t qmax, int32_t round_type) {
  return {1, 1, numel, qmax, round_type};
}

class Int8Engine {
 public:
  // inputs: [x, w, x_scale, w_scale] of a conv2d or matmul, [a, b, a_scale, b_scale] of an add,
  // [x1..xn, s1..sn] of a concat, [x, x_scale] of an activation
  // (every attribute checked before it is read: a wrong one is an InvalidArgument naming it)
  Int8Engine(pir::Operation* op, std::vector<phi::DenseTensor*> inputs, phi::DenseTensor* out)
      : kind_(str_attr(op, "kind")), kernel_("int8_engine_" + kind_), called_(op_called(op)),
        inputs_(std::move(inputs)), out_(out), x_qmax_(int32_attr(op, "x_qmax")),
        x_round_(int32_attr(op, "x_round_type")) {
    refuse_if(is_known_kind(kind_) ? "" : wrong(op, "kind", "a kind the engine computes"));
    refuse_if(x_qmax_ >= 1 && x_qmax_ <= 127 ? "" : wrong(op, "x_qmax", "an int32 in [1, 127]"));
    x_ = inputs_.at(0);
    if (kind_ == "concat") {
      concat_axis_ = int32_attr(op, "axis");
      return;
    }
    if (is_activation_kind(kind_)) {
      x_scale_ = inputs_.at(1);
      if (kind_ == "softmax") softmax_axis_ = int32_attr(op, "axis");
      if (is_pool_kind(kind_)) {
        refuse_if(first_of({pool_problem(op), int32_problem(op, "kernel_h", 1, "an int32 >= 1"),
                            int32_problem(op, "kernel_w", 1, "an int32 >= 1")}));
        pool_kernel_ = {int32_attr(op, "kernel_h"), int32_attr(op, "kernel_w")};
        strides_ = int_list(op, "strides");
        paddings_ = int_list(op, "paddings");
        algorithm_ = str_attr(op, "padding_algorithm");
        ceil_mode_ = bool_attr(op, "ceil_mode");
        exclusive_ = bool_attr(op, "exclusive");
        adaptive_ = bool_attr(op, "adaptive");
        global_ = bool_attr(op, "global_pooling");
      }
      return;
    }
    if (kind_ == "add") {
      b_ = inputs_.at(1);
      x_scale_ = inputs_.at(2);
      b_scale_ = inputs_.at(3);
      b_round_ = int32_attr(op, "b_round_type");
      return;
    }
    w_ = inputs_.at(1);
    x_scale_ = inputs_.at(2);
    w_scale_ = inputs_.at(3);
    w_qmax_ = int32_attr(op, "w_qmax");
    refuse_if(w_qmax_ >= 1 && w_qmax_ <= 127 ? "" : wrong(op, "w_qmax", "an int32 in [1, 127]"));
    w_round_ = int32_attr(op, "w_round_type");
    w_axis_ = int32_attr(op, "w_quant_axis");
    if (kind_ == "matmul") {
      trans_w_ = bool_attr(op, "transpose_y");
      if (op->HasAttribute("flatten_start"))
        flatten_ = {int32_attr(op, "flatten_start"), int32_attr(op, "flatten_stop")};
    } else {
      refuse_if(conv_problem(op));
      strides_ = int_list(op, "strides");
      paddings_ = int_list(op, "paddings");
      dilations_ = int_list(op, "dilations");
      algorithm_ = str_attr(op, "padding_algorithm");
      groups_ = int32_attr(op, "groups");
    }
  }

  void Run(const phi::CustomContext& ctx) {
    const phi::Place place = ctx.GetPlace();
    for (const phi::DenseTensor* t : inputs_)
      PADDLE_ENFORCE_EQ(t->place() == place && t->dtype() == phi::DataType::FLOAT32, true,
                        common::errors::PreconditionNotMet("{{ device_type }} int8 engine: its inputs are float32 "
                                                           "tensors on %s (one is %s on %s)",
                                                           place.DebugString(), phi::DataTypeToString(t->dtype()),
                                                           t->place().DebugString()));
    CheckInputs();
    {{ p }}_stream_t stream = stream_of(ctx);
    if (is_activation_kind(kind_)) return OnGrid(ctx, stream);
    if (kind_ == "add") return Add(ctx, stream);
    if (kind_ == "concat") return Concat(ctx, stream);
    if (!weight_ready_) {  // the weight is constant: quantized once, on the device
      w_int8_.Resize(w_->dims());
      ctx.Alloc(&w_int8_, phi::DataType::INT8);
      const {{ p }}_quant_params_t wq = weight_layout(w_->dims(), w_qmax_, w_round_);
      {{ NAME }}_CHECK({{ p }}_quantize_linear(stream, &wq, {{ NAME }}_FLOAT32, w_->data(), w_scale_->data<float>(),
                                             {{ NAME }}_INT8, w_int8_.data()),
                       kKernel);
      weight_ready_ = true;
    }
    QuantizeInto(ctx, stream, *x_, *x_scale_, x_round_, &x_int8_, kKernel);
    const {{ p }}_quant_params_t rescale = kind_ == "matmul" ? Matmul(ctx, stream) : Conv(ctx, stream);
    {{ NAME }}_CHECK({{ p }}_requantize(stream, &rescale, acc_.data<int32_t>(), x_scale_->data<float>(),
                                     w_scale_->data<float>(), {{ NAME }}_FLOAT32, nullptr, out_->data()),
                     kKernel);
  }

 private:
  // The inputs against the weight and the attributes, as InferMeta checks them (Paddle runs none
  // for an engine op): the device calls below read no element past a tensor.
  void CheckInputs() const {
    const size_t scales = kind_ == "concat" ? inputs_.size() / 2 : 0;
    for (size_t k = scales; k < inputs_.size() && kind_ == "concat"; ++k) ScaleFits(inputs_[k], 1, "a scale");
    if (kind_ == "concat") return;
    ScaleFits(x_scale_, 1, "x's scale");
    if (b_scale_ != nullptr) ScaleFits(b_scale_, 1, "b's scale");
    if (is_pool_kind(kind_))
      refuse_if(x_->dims().size() == 4 ? "" : called_ + " of a " + x_->dims().to_str() + " input: a 4-d (NCHW) one is due");
    if (w_ == nullptr) return;
    const phi::DDim& w = w_->dims();
    refuse_if(w_axis_ >= -1 && w_axis_ < w.size() ? ""
                                                  : called_ + ": weight scale axis " + std::to_string(w_axis_) +
                                                        " of a " + w.to_str() + " weight");
    ScaleFits(w_scale_, w_axis_ < 0 ? 1 : w[w_axis_], "the weight's scales");
    if (kind_ == "conv2d") return refuse_if(conv_shapes_problem(called_, x_->dims(), w, groups_));
    const int rank = x_->dims().size();
    if (flatten_) {
      const auto in_rank = [&](int axis) { return axis >= -rank && axis < rank ? (axis + rank) % rank : -1; };
      const int start = in_rank(flatten_->first), stop = in_rank(flatten_->second);
      refuse_if(start >= 0 && start <= stop ? ""
                                            : called_ + ": flatten axes " + std::to_string(flatten_->first) + ".." +
                                                  std::to_string(flatten_->second) + " of a " +
                                                  x_->dims().to_str() + " input");
    }
    const phi::DDim x = MatmulX();
    const bool fits = x.size() >= 1 && w.size() == 2 && (trans_w_ ? w[1] : w[0]) == x[x.size() - 1];
    refuse_if(fits ? "" : called_ + " of " + x.to_str() + " by a weight " + w.to_str() + " that does not take it");
  }

  void ScaleFits(const phi::DenseTensor* scale, int64_t numel, const char* what) const {
    refuse_if(scale->numel() == numel ? ""
                                      : called_ + ": " + what + " " + scale->dims().to_str() + ", where " +
                                            std::to_string(numel) + " values are due");
  }

  phi::DDim MatmulX() const {
    return flatten_ ? flattened(x_->dims(), flatten_->first, flatten_->second) : x_->dims();
  }

  // An activation x quantized with its one scale (qmax x_qmax_, rounding `round`) into the
  // engine's int8 tensor q: every kind's first step.
  void QuantizeInto(const phi::CustomContext& ctx, {{ p }}_stream_t stream, const phi::DenseTensor& x,
                    const phi::DenseTensor& scale, int32_t round, phi::DenseTensor* q, const char* kernel) {
    q->Resize(x.dims());
    ctx.Alloc(q, phi::DataType::INT8);
    const {{ p }}_quant_params_t params = per_tensor(x.numel(), x_qmax_, round);
    {{ NAME }}_CHECK({{ p }}_quantize_linear(stream, &params, {{ NAME }}_FLOAT32, x.data(), scale.data<float>(),
                                           {{ NAME }}_INT8, q->data()),
                     kernel);
  }

  // x on its int8 grid: quantized, relu or pooling on the integers, taken back to float
  void OnGrid(const phi::CustomContext& ctx, {{ p }}_stream_t stream) {
    const char* kernel = kernel_.c_str();
    QuantizeInto(ctx, stream, *x_, *x_scale_, x_round_, &x_int8_, kernel);
    phi::DenseTensor* result = &x_int8_;
    if (kind_ == "relu") {
      if (!zero_ready_) {
        zero_.Resize(common::make_ddim({1}));
        ctx.Alloc(&zero_, phi::DataType::INT8);
        {{ NAME }}_CHECK({{ p }}_fill(stream, {{ NAME }}_INT8, zero_.data(), 1, 0.0), kernel);
        zero_ready_ = true;
      }
      y_int8_.Resize(x_->dims());
      ctx.Alloc(&y_int8_, phi::DataType::INT8);
      {{ p }}_shape_t all{}, one{};
      all.ndim = one.ndim = 1;
      all.dims[0] = x_->numel();
      one.dims[0] = 1;
      {{ NAME }}_CHECK({{ p }}_binary(stream, {{ NAME }}_BINARY_MAX, {{ NAME }}_INT8, x_int8_.data(), &all, zero_.data(),
                                    &one, y_int8_.data(), &all),
                       kernel);
      result = &y_int8_;
    } else if (kind_ == "max_pool2d") {
      const {{ p }}_pool2d_params_t pool = PoolParams();
      y_int8_.Resize(common::make_ddim({pool.batch, pool.channels, pool.out_h, pool.out_w}));
      ctx.Alloc(&y_int8_, phi::DataType::INT8);
      {{ NAME }}_CHECK({{ p }}_pool2d_forward(stream, {{ NAME }}_INT8, &pool, x_int8_.data(), y_int8_.data()), kernel);
      result = &y_int8_;
    } else if (kind_ == "softmax") {  // exponentials of the integers' differences: float, no int8 result
      const phi::DDim& dims = x_->dims();
      const int axis = softmax_axis_ < 0 ? softmax_axis_ + dims.size() : softmax_axis_;
      PADDLE_ENFORCE_EQ(dims.size() == 0 || (axis >= 0 && axis < dims.size()), true,  // (a 0-d one: 1)
                        common::errors::InvalidArgument("{{ device_type }} int8 engine: softmax axis %d of a "
                                                        "%d-d tensor", softmax_axis_, dims.size()));
      const AxisView v = axis_view(dims, axis);
      out_->Resize(dims);
      ctx.Alloc(out_, phi::DataType::FLOAT32);
      {{ NAME }}_CHECK({{ p }}_softmax_int8(stream, v.outer, v.axis, v.inner, x_int8_.data<int8_t>(),
                                          x_scale_->data<float>(), x_qmax_, out_->data<float>()),
                       kernel);
      return;
    } else if (kind_ == "avg_pool2d") {  // int32 window sums, rescaled to float: no int8 result
      const {{ p }}_pool2d_params_t pool = PoolParams();
      out_->Resize(common::make_ddim({pool.batch, pool.channels, pool.out_h, pool.out_w}));
      ctx.Alloc(out_, phi::DataType::FLOAT32);
      {{ NAME }}_CHECK({{ p }}_avg_pool2d_int8(stream, &pool, x_int8_.data<int8_t>(), x_scale_->data<float>(), x_qmax_,
                                           out_->data<float>()),
                       kernel);
      return;
    }
    out_->Resize(result->dims());
    ctx.Alloc(out_, phi::DataType::FLOAT32);
    const {{ p }}_quant_params_t dq = per_tensor(result->numel(), x_qmax_, x_round_);
    {{ NAME }}_CHECK({{ p }}_dequantize_linear(stream, &dq, {{ NAME }}_INT8, result->data(), x_scale_->data<float>(),
                                             out_->data<float>()),
                     kernel);
  }

  // a + b of one shape: both quantized with their scales, the integers added, each rescaled once
  void Add(const phi::CustomContext& ctx, {{ p }}_stream_t stream) {
    const char* kernel = kernel_.c_str();
    PADDLE_ENFORCE_EQ(x_->dims() == b_->dims(), true,
                      common::errors::InvalidArgument("{{ device_type }} int8 engine: an add of %s and %s (the "
                                                      "engine adds one shape, without broadcasting)",
                                                      x_->dims().to_str(), b_->dims().to_str()));
    QuantizeInto(ctx, stream, *x_, *x_scale_, x_round_, &x_int8_, kernel);
    QuantizeInto(ctx, stream, *b_, *b_scale_, b_round_, &b_int8_, kernel);
    out_->Resize(x_->dims());
    ctx.Alloc(out_, phi::DataType::FLOAT32);
    {{ NAME }}_CHECK({{ p }}_add_int8(stream, x_->numel(), x_int8_.data<int8_t>(), x_scale_->data<float>(),
                                    b_int8_.data<int8_t>(), b_scale_->data<float>(), x_qmax_, out_->data<float>()),
                     kernel);
  }

  // [x1..xn] along concat_axis_: each quantized with its scale, its integers rescaled once into its slice
  void Concat(const phi::CustomContext& ctx, {{ p }}_stream_t stream) {
    const char* kernel = kernel_.c_str();
    const size_t n = inputs_.size() / 2;
    const phi::DDim& first = x_->dims();
    std::vector<int64_t> out_dims = common::vectorize(first);
    PADDLE_ENFORCE_EQ(concat_axis_ >= 0 && concat_axis_ < first.size(), true,
                      common::errors::InvalidArgument("{{ device_type }} int8 engine: concat axis %d of a %d-d "
                                                      "tensor", concat_axis_, first.size()));
    out_dims[concat_axis_] = 0;
    parts_int8_.resize(n);
    std::vector<const int8_t*> parts;
    std::vector<const float*> scales;
    std::vector<int64_t> lens;
    for (size_t k = 0; k < n; ++k) {
      const phi::DenseTensor* x = inputs_[k];
      std::vector<int64_t> dims = common::vectorize(x->dims());
      const int64_t len = dims.size() == out_dims.size() ? dims[concat_axis_] : -1;
      if (len >= 0) dims[concat_axis_] = 0;
      PADDLE_ENFORCE_EQ(len >= 0 && dims == out_dims, true,
                        common::errors::InvalidArgument("{{ device_type }} int8 engine: concat of %s and %s along "
                                                        "axis %d", first.to_str(), x->dims().to_str(), concat_axis_));
      QuantizeInto(ctx, stream, *x, *inputs_[n + k], x_round_, &parts_int8_[k], kernel);
      parts.push_back(parts_int8_[k].data<int8_t>());
      scales.push_back(inputs_[n + k]->data<float>());
      lens.push_back(len);
    }
    for (int64_t len : lens) out_dims[concat_axis_] += len;
    const AxisView v = axis_view(first, concat_axis_);
    out_->Resize(common::make_ddim(out_dims));
    ctx.Alloc(out_, phi::DataType::FLOAT32);
    {{ NAME }}_CHECK({{ p }}_concat_int8(stream, static_cast<int>(n), parts.data(), scales.data(), lens.data(), v.outer,
                                       v.inner, x_qmax_, out_->data<float>()),
                     kernel);
  }

  // The pooling's windows, as Paddle's pool2d sizes them (EXPLICIT or VALID padding; a global
  // pooling is an adaptive one to 1x1, an adaptive one's kernel its output size).
  {{ p }}_pool2d_params_t PoolParams() const {
    const phi::DDim& x = x_->dims();
    {{ p }}_pool2d_params_t p{};
    p.batch = x[0];
    p.channels = x[1];
    p.in_h = x[2];
    p.in_w = x[3];
    p.is_max = kind_ == "max_pool2d";
    p.exclusive = exclusive_;
    if (global_ || adaptive_) {
      p.adaptive = 1;
      p.out_h = p.kernel_h = global_ ? 1 : pool_kernel_[0];
      p.out_w = p.kernel_w = global_ ? 1 : pool_kernel_[1];
      p.stride_h = p.stride_w = 1;
      refuse_if(output_problem(called_, {p.batch, p.channels, p.out_h, p.out_w}));
      return p;
    }
    p.kernel_h = pool_kernel_[0];
    p.kernel_w = pool_kernel_[1];
    p.stride_h = strides_.at(0);
    p.stride_w = strides_.at(1);
    const AxisGeometry height = axis_geometry(p.in_h, p.kernel_h, p.stride_h, 1, paddings_, 0, algorithm_, ceil_mode_);
    const AxisGeometry width = axis_geometry(p.in_w, p.kernel_w, p.stride_w, 1, paddings_, 1, algorithm_, ceil_mode_);
    p.pad_top = height.pad_before;
    p.out_h = height.out;
    p.pad_left = width.pad_before;
    p.out_w = width.out;
    refuse_if(output_problem(called_, {p.batch, p.channels, p.out_h, p.out_w}));
    return p;
  }

  // The weight's scales: one, or one per slice along w_quant_axis.
  {{ p }}_quant_params_t weight_layout(const phi::DDim& dims, int32_t qmax, int32_t round) const {
    if (w_axis_ < 0) return per_tensor(common::product(dims), qmax, round);
    const AxisView v = axis_view(dims, w_axis_);
    return {v.outer, v.axis, v.inner, qmax, round};
  }

  // int32 sums into acc_ and the output allocated; returns the layout acc_ is rescaled over.
  {{ p }}_quant_params_t Conv(const phi::CustomContext& ctx, {{ p }}_stream_t stream) {
    const {{ p }}_conv2d_params_t p =
        conv2d_params(x_->dims(), w_->dims(), strides_, paddings_, algorithm_, dilations_, groups_);
    Allocate(ctx, {p.batch, p.out_channels, p.out_h, p.out_w});
    {{ NAME }}_CHECK({{ p }}_conv2d_int8(stream, &p, x_int8_.data<int8_t>(), w_int8_.data<int8_t>(),
                                       acc_.data<int32_t>()),
                     kKernel);
    if (w_axis_ < 0) return per_tensor(acc_.numel(), x_qmax_, 0);
    return {p.batch, p.out_channels, p.out_h * p.out_w, x_qmax_, 0};
  }

  {{ p }}_quant_params_t Matmul(const phi::CustomContext& ctx, {{ p }}_stream_t stream) {
    const phi::DDim x = MatmulX();  // (CheckInputs: [..., k] by a 2-d weight that takes it)
    const phi::DDim& w = w_->dims();
    const int64_t k = x[x.size() - 1], n = trans_w_ ? w[0] : w[1], m = x_->numel() / std::max<int64_t>(k, 1);
    std::vector<int64_t> out_dims = common::vectorize(x);
    out_dims.back() = n;
    Allocate(ctx, out_dims);
    {{ NAME }}_CHECK({{ p }}_gemm_int8(stream, 0, trans_w_ ? 1 : 0, m, n, k, x_int8_.data<int8_t>(), k,
                                     w_int8_.data<int8_t>(), trans_w_ ? k : n, acc_.data<int32_t>(), n),
                     kKernel);
    if (w_axis_ < 0) return per_tensor(acc_.numel(), x_qmax_, 0);
    return {m, n, 1, x_qmax_, 0};
  }

  void Allocate(const phi::CustomContext& ctx, const std::vector<int64_t>& out_dims) {
    refuse_if(output_problem(called_, out_dims));
    const phi::DDim dims = common::make_ddim(out_dims);
    acc_.Resize(dims);
    ctx.Alloc(&acc_, phi::DataType::INT32);
    out_->Resize(dims);
    ctx.Alloc(out_, phi::DataType::FLOAT32);
  }

  std::string kind_, kernel_, called_;  // (called_: how errors name the op, op_called)
  std::vector<phi::DenseTensor*> inputs_;  // Paddle's, stable across runs, as are these views of them:
  phi::DenseTensor *x_ = nullptr, *w_ = nullptr, *x_scale_ = nullptr, *w_scale_ = nullptr, *out_;
  phi::DenseTensor *b_ = nullptr, *b_scale_ = nullptr;  // an add's second operand
  int32_t x_qmax_, x_round_, b_round_ = 0, w_qmax_ = 0, w_round_ = 0, w_axis_ = -1;
  bool trans_w_ = false;
  std::optional<std::pair<int, int>> flatten_;  // a matmul's x arrives unflattened: these axes merged
  std::vector<int> strides_, paddings_, dilations_;
  std::string algorithm_;
  int groups_ = 1;
  std::vector<int32_t> pool_kernel_;
  int softmax_axis_ = -1, concat_axis_ = 0;
  bool ceil_mode_ = false, exclusive_ = true, adaptive_ = false, global_ = false;
  bool weight_ready_ = false, zero_ready_ = false;
  phi::DenseTensor w_int8_, x_int8_, y_int8_, b_int8_, zero_, acc_;  // the engine's own device memory
  std::vector<phi::DenseTensor> parts_int8_;                          // (a concat's operands)
};

using Instruction = paddle::framework::CustomEngineInstruction;

C_Status RegisterOp() {
  RegisterInt8EngineOp();
  return C_SUCCESS;
}

// The op in the kernel dialect: inputs re-mapped, outputs allocated on the device, attributes
// kept (Paddle's executor requires op_name), the empty region given its one block.
C_Status Lower(C_CustomEngineLowerParams* params) {
  auto* ctx = reinterpret_cast<pir::IrContext*>(params->ir_context);
  auto* source = reinterpret_cast<pir::Operation*>(params->operation);
  const auto& place = *reinterpret_cast<phi::Place*>(params->place);
  auto* ops = reinterpret_cast<std::unordered_map<pir::Operation*, pir::Operation*>*>(params->map_op_pair);
  auto* values = reinterpret_cast<std::unordered_map<pir::Value, pir::Value>*>(params->map_value_pair);
  std::vector<pir::Type> outputs;
  for (uint32_t i = 0; i < source->num_results(); ++i) {
    std::vector<pir::Type> tensors;
    for (pir::Type t : source->result(i).type().dyn_cast<pir::VectorType>().data())
      tensors.push_back(paddle::dialect::AllocatedDenseTensorType::get(ctx, place, t.dyn_cast<pir::DenseTensorType>()));
    outputs.push_back(pir::VectorType::get(ctx, tensors));
  }
  std::vector<pir::Value> inputs;
  for (uint32_t i = 0; i < source->num_operands(); ++i) inputs.push_back(values->at(source->operand_source(i)));
  pir::AttributeMap attributes = source->attributes();
  attributes["op_name"] = pir::StrAttribute::get(ctx, source->name());
  pir::Operation* lowered = pir::Operation::Create(inputs, attributes, outputs,
                                                   ctx->GetRegisteredOpInfo(Int8EngineOp::name()), 1);
  lowered->set_attribute("origin_id", pir::Int64Attribute::get(ctx, lowered->id()));
  pir::Block* block = lowered->region(0).empty() ? &lowered->region(0).emplace_back() : &lowered->region(0).front();
  if (!source->region(0).empty())
    paddle::dialect::ProcessBlock(place, &source->region(0).front(), block, ctx, ops, values);
  (*ops)[source] = lowered;
  for (uint32_t i = 0; i < source->num_results(); ++i) (*values)[source->result(i)] = lowered->result(i);
  reinterpret_cast<pir::Block*>(params->block)->push_back(lowered);
  return C_SUCCESS;
}

C_Status Build(C_CustomEngineInstruction instruction) {
  auto* ins = reinterpret_cast<Instruction*>(instruction);
  const auto& tensors = ins->GetEngineValueToTensors();
  std::vector<phi::DenseTensor*> inputs;
  for (const pir::Value& v : ins->GetEngineInputs()) inputs.push_back(tensors.at(v).at(0));
  const std::string kind = str_attr(ins->Operation(), "kind");
  const bool inputs_fit = kind == "concat" ? inputs.size() >= 2 && inputs.size() % 2 == 0
                                           : inputs.size() == (is_activation_kind(kind) ? 2u : 4u);
  PADDLE_ENFORCE_EQ(inputs_fit && ins->GetEngineOutputs().size() == 1, true,
                    common::errors::PreconditionNotMet("{{ device_type }} int8 engine: an op of %d inputs and %d "
                                                       "outputs, not [x, w, x_scale, w_scale] -> [out] (an add's "
                                                       "[a, b, a_scale, b_scale], a concat's [x1..xn, s1..sn], an "
                                                       "activation's [x, x_scale])",
                                                       inputs.size(), ins->GetEngineOutputs().size()));
  phi::DenseTensor* out = tensors.at(ins->GetEngineOutputs()[0]).at(0);
  ins->SetCustomEngine(new Int8Engine(ins->Operation(), inputs, out));
  ins->SetCustomEngineDeleter([](void* engine) { delete static_cast<Int8Engine*>(engine); });
  return C_SUCCESS;
}

C_Status Execute(C_CustomEngineInstruction instruction) {
  auto* ins = reinterpret_cast<Instruction*>(instruction);
  static_cast<Int8Engine*>(ins->CustomEngine())->Run(static_cast<const phi::CustomContext&>(ins->DeviceContext()));
  return C_SUCCESS;
}

}  // namespace
}  // namespace {{ p }}_engine

extern "C" void InitPluginCustomEngine(CustomEngineParams* params) {
  std::memset(reinterpret_cast<void*>(params->interface), 0, sizeof(C_CustomEngineInterface));
  params->interface->size = sizeof(C_CustomEngineInterface);
  params->interface->register_custom_engine_op = {{ p }}_engine::RegisterOp;
  params->interface->custom_engine_op_lower = {{ p }}_engine::Lower;
  params->interface->graph_engine_build = {{ p }}_engine::Build;
  params->interface->graph_engine_execute = {{ p }}_engine::Execute;
}
