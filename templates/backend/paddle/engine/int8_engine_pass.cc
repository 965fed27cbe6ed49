// {{ p }}_int8_engine_pass: hands the int8 engine every quantized convolution and matmul of an
// inference program. Listed in [tool.devkit] inference-passes (before the QDQ-folding passes), it
// runs in Paddle Inference's pass pipeline for the device, before constant folding and lowering.
//
// It looks for what Paddle's quantization (PTQ or QAT, converted) leaves around a conv2d,
// depthwise_conv2d or matmul:
//
//   x' = dequantize_linear(quantize_linear(x, sx))    w' = dequantize_linear(quantize_linear(w, sw))
//   y  = conv2d(x', w')
//
// with w, sx and sw parameters, x per-tensor, w per-tensor or per output channel, and replaces the
// five ops by one custom_engine.{{ p }}_int8_engine op on [x, w, sx, sw] that computes y in int8
// (int8_engine.cc); a flatten that alone feeds a matmul's x joins it. An add of two quantized
// activations of one shape (a residual add whose operands the model quantizes) becomes an engine
// op on [a, b, sa, sb] the same way, a concat of quantized activations one on [x1..xn, s1..sn].
// Then every quantize/dequantize pair of an activation that is left (Paddle's quantization observes
// the inputs of batch norms, relus and pooling too) becomes an engine op on [x, sx] that puts x on
// its int8 grid: the float ops between the engine's see the values the QDQ program gives them, not
// the unrounded ones the folding passes would leave. Where the pair's one reader is a relu or a max
// pooling, that op joins it: the engine computes it on the integers (both commute with the
// rounding, so the result is the QDQ program's); an average pooling joins it too, summing the
// integers in int32 and rescaling the sums to float once, and a softmax, from a table of the
// exponentials of the integers' differences. What it does not match (NHWC, a transposed x, scales
// per input channel) is left as it was: the folding passes after it run that part in float. So is
// an op whose attributes or static shapes Paddle's InferMeta would refuse (int8_engine_checks.h):
// Paddle's own kernels then refuse it, or run it, as they do without the engine.
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "int8_engine_checks.h"
#include "paddle/pir/include/core/builtin_attribute.h"
#include "paddle/pir/include/core/builtin_op.h"
#include "paddle/pir/include/core/builtin_type.h"
#include "paddle/pir/include/core/ir_context.h"
#include "paddle/pir/include/pass/pass.h"
#include "paddle/pir/include/pass/pass_registry.h"

namespace {{ p }}_engine {
namespace {

pir::Operation* producer(pir::Value v) { return v ? v.defining_op() : nullptr; }

bool is(pir::Operation* op, const char* name) { return op != nullptr && op->name() == name; }

bool is_parameter(pir::Value v) {
  pir::Operation* op = producer(v);
  return op != nullptr && op->isa<pir::ParameterOp>();
}

// The one op that reads `v`, or nullptr.
pir::Operation* only_reader(pir::Value v) { return v && v.HasOneUse() ? v.first_use().owner() : nullptr; }

// The integers of a constant IntArray operand (a pd_op.full_int_array), or nullopt.
std::optional<std::vector<int64_t>> constant_ints(pir::Value v) {
  pir::Operation* op = producer(v);
  if (!is(op, "pd_op.full_int_array")) return std::nullopt;
  return int_list_of(op, "value");
}

// A quantize_linear -> dequantize_linear pair in inference mode, and what it quantizes.
struct Qdq {
  pir::Operation* quantize;
  pir::Operation* dequantize;
  pir::Value source;
  pir::Value scale;
  int32_t axis, qmax, round_type;
};

std::optional<Qdq> qdq_feeding(pir::Value v) {
  pir::Operation* dq = producer(v);
  if (!is(dq, "pd_op.dequantize_linear")) return std::nullopt;
  pir::Operation* q = producer(dq->operand_source(0));
  if (!is(q, "pd_op.quantize_linear") || !is_parameter(q->operand_source(1))) return std::nullopt;
  if (bool_of(q, "is_test") != true || bool_of(q, "only_observer") != false) return std::nullopt;
  const std::optional<int32_t> qmax = int32_of(q, "qmax"), axis = int32_of(q, "quant_axis");
  const std::optional<int32_t> round_type = int32_of(q, "round_type");
  if (!qmax || *qmax < 1 || *qmax > 127 || int32_of(dq, "qmax") != qmax || !axis || int32_of(dq, "quant_axis") != axis ||
      !round_type)
    return std::nullopt;
  return Qdq{q, dq, q->operand_source(0), q->operand_source(1), *axis, *qmax, *round_type};
}

// The attributes every engine op has: what it is, and how its activation x is quantized.
pir::AttributeMap activation_attributes(const std::string& kind, const std::string& quantized_op, const Qdq& x) {
  pir::IrContext* ctx = pir::IrContext::Instance();
  pir::AttributeMap attrs;
  attrs["kind"] = pir::StrAttribute::get(ctx, kind);
  attrs["quantized_op"] = pir::StrAttribute::get(ctx, quantized_op);
  attrs["x_qmax"] = pir::Int32Attribute::get(ctx, x.qmax);
  attrs["x_round_type"] = pir::Int32Attribute::get(ctx, x.round_type);
  return attrs;
}

common::DDim dims_of(pir::Value v) {
  const auto t = v.type().dyn_cast<pir::DenseTensorType>();
  return t ? t.dims() : common::DDim();
}

// A matmul's x [..., K] (-1: known at run time) by a 2-d weight that takes it.
bool matmul_shapes_fit(const common::DDim& x, const common::DDim& w, bool trans_w) {
  return x.size() >= 1 && w.size() == 2 && (x[x.size() - 1] < 0 || x[x.size() - 1] == (trans_w ? w[1] : w[0]));
}

// The attributes of the engine op for `anchor` with its quantized operands, or nullopt when the
// engine does not take it.
std::optional<pir::AttributeMap> engine_attributes(pir::Operation* anchor, const Qdq& x, const Qdq& w) {
  pir::IrContext* ctx = pir::IrContext::Instance();
  const std::string& kind = anchor->name();
  pir::AttributeMap attrs = activation_attributes(kind == "pd_op.matmul" ? "matmul" : "conv2d", kind, x);
  if (x.axis != -1 || !is_parameter(w.source)) return std::nullopt;  // activations: one scale
  if (kind == "pd_op.matmul") {
    // x [..., K] times a [K, N] weight; its scales per tensor or per output column
    const std::optional<bool> trans_x = bool_of(anchor, "transpose_x"), trans_w = bool_of(anchor, "transpose_y");
    if (trans_x != false || !trans_w) return std::nullopt;
    if (w.axis != -1 && w.axis != (*trans_w ? 0 : 1)) return std::nullopt;
    if (!matmul_shapes_fit(dims_of(x.source), dims_of(w.source), *trans_w)) return std::nullopt;
    attrs["transpose_y"] = anchor->attribute("transpose_y");
  } else {
    // NCHW convolutions; weight scales per tensor or per output channel (OIHW axis 0)
    const std::optional<std::string> layout = str_of(anchor, "data_format");
    if (!layout || (*layout != "NCHW" && *layout != "AnyLayout") || (w.axis != -1 && w.axis != 0)) return std::nullopt;
    if (!conv_problem(anchor).empty() ||
        !conv_shapes_problem(anchor->name(), dims_of(x.source), dims_of(w.source), *int32_of(anchor, "groups")).empty())
      return std::nullopt;
    for (const char* name : {"strides", "paddings", "padding_algorithm", "dilations"}) attrs[name] = anchor->attribute(name);
    attrs["groups"] = anchor->attribute("groups");
  }
  attrs["w_qmax"] = pir::Int32Attribute::get(ctx, w.qmax);
  attrs["w_round_type"] = pir::Int32Attribute::get(ctx, w.round_type);
  attrs["w_quant_axis"] = pir::Int32Attribute::get(ctx, w.axis);
  return attrs;
}

void erase_if_unused(pir::Operation* op) {
  if (op->use_empty()) op->Erase();
}

// The attributes of the engine op for a max or average pooling of the activation `x`, or nullopt
// when the engine does not take it (NHWC, SAME padding, a window size computed at run time).
std::optional<pir::AttributeMap> pool_attributes(pir::Operation* pool, const Qdq& x) {
  const std::string type = str_of(pool, "pooling_type").value_or(""), layout = str_of(pool, "data_format").value_or("");
  if ((type != "max" && type != "avg") || (layout != "NCHW" && layout != "AnyLayout")) return std::nullopt;
  if (!pool_problem(pool).empty() || dims_of(x.source).size() != 4) return std::nullopt;
  const std::optional<std::vector<int64_t>> kernel = constant_ints(pool->operand_source(1));
  if (!kernel || kernel->size() != 2 || (*kernel)[0] < 1 || (*kernel)[1] < 1 || (*kernel)[0] > kIntMax ||
      (*kernel)[1] > kIntMax)
    return std::nullopt;
  pir::IrContext* ctx = pir::IrContext::Instance();
  pir::AttributeMap attrs = activation_attributes(type + "_pool2d", pool->name(), x);
  attrs["kernel_h"] = pir::Int32Attribute::get(ctx, static_cast<int32_t>((*kernel)[0]));
  attrs["kernel_w"] = pir::Int32Attribute::get(ctx, static_cast<int32_t>((*kernel)[1]));
  for (const char* name : {"strides", "paddings", "padding_algorithm", "ceil_mode", "exclusive", "adaptive",
                           "global_pooling"})
    attrs[name] = pool->attribute(name);
  return attrs;
}

// `replaced` (one result) becomes an engine op on `operands`, put where `replaced` was.
void replace_by_engine(pir::Operation* replaced, const std::vector<pir::Value>& operands,
                       const pir::AttributeMap& attrs) {
  pir::Builder builder(pir::IrContext::Instance(), replaced->GetParent(), pir::Block::Iterator(*replaced));
  auto inputs = builder.Build<pir::CombineOp>(operands);
  auto engine = builder.Build<Int8EngineOp>(inputs.out(), std::vector<pir::Type>{replaced->result(0).type()}, attrs);
  auto outputs = builder.Build<pir::SplitOp>(engine.out());
  replaced->result(0).ReplaceAllUsesWith(outputs.outputs()[0]);
}

// The flatten that alone feeds a matmul's quantized x (flatten -> quantize -> dequantize -> matmul,
// each read once), or nullptr. The engine op takes the flatten's input and reads it as the
// flattened shape: the same contiguous values, so its int8 copy moves nothing.
pir::Operation* flatten_feeding(const Qdq& x) {
  pir::Operation* flatten = producer(x.source);
  if (!is(flatten, "pd_op.flatten") || !x.source.HasOneUse()) return nullptr;
  if (!x.quantize->result(0).HasOneUse() || !x.dequantize->result(0).HasOneUse()) return nullptr;
  const auto input = flatten->operand_source(0).type().dyn_cast<pir::DenseTensorType>();
  if (!input || input.dims().size() < 1) return nullptr;
  return flatten_problem(flatten, "start_axis", "stop_axis", input.dims().size()).empty() ? flatten : nullptr;
}

bool hand_to_engine(pir::Operation* anchor) {
  const std::optional<Qdq> x = qdq_feeding(anchor->operand_source(0));
  const std::optional<Qdq> w = qdq_feeding(anchor->operand_source(1));
  if (!x || !w) return false;
  std::optional<pir::AttributeMap> attrs = engine_attributes(anchor, *x, *w);
  if (!attrs) return false;
  pir::Value input = x->source;
  pir::Operation* flatten = is(anchor, "pd_op.matmul") ? flatten_feeding(*x) : nullptr;
  if (flatten) {
    input = flatten->operand_source(0);
    (*attrs)["flatten_start"] = flatten->attribute("start_axis");
    (*attrs)["flatten_stop"] = flatten->attribute("stop_axis");
  }
  replace_by_engine(anchor, {input, w->source, x->scale, w->scale}, *attrs);
  anchor->Erase();
  // a quantized activation may feed other ops too: its pair stays for them
  for (pir::Operation* op : {x->dequantize, x->quantize, w->dequantize, w->quantize}) erase_if_unused(op);
  if (flatten) erase_if_unused(flatten);
  return true;
}

// The pairs of an add's or concat's operands when each is an activation behind its own pair (per
// tensor, one qmax for all), or nullopt. (One pair read twice, x + x, is refused: its ops would be
// erased twice.)
std::optional<std::vector<Qdq>> quantized_operands(const std::vector<pir::Value>& operands) {
  std::vector<Qdq> xs;
  for (pir::Value v : operands) {
    const std::optional<Qdq> x = qdq_feeding(v);
    if (!x || x->axis != -1 || is_parameter(x->source) || (!xs.empty() && x->qmax != xs[0].qmax)) return std::nullopt;
    for (const Qdq& seen : xs)
      if (seen.dequantize == x->dequantize) return std::nullopt;
    xs.push_back(*x);
  }
  return xs;
}

// `op` (an add or concat) becomes an engine op on [x1..xn, s1..sn]; then the ops that fed it
// (`feeders`: a concat's combine and axis), and its operands' pairs, are erased where nothing else
// reads them, in that order (a pair still read by a feeder would be left behind, and a later pass
// crashes on a dequantize_linear without readers).
void replace_operands_by_engine(pir::Operation* op, const std::vector<Qdq>& xs, const pir::AttributeMap& attrs,
                                std::initializer_list<pir::Operation*> feeders = {}) {
  std::vector<pir::Value> operands;
  for (const Qdq& x : xs) operands.push_back(x.source);
  for (const Qdq& x : xs) operands.push_back(x.scale);
  replace_by_engine(op, operands, attrs);
  op->Erase();
  for (pir::Operation* feeder : feeders) erase_if_unused(feeder);
  for (const Qdq& x : xs)
    for (pir::Operation* pair_op : {x.dequantize, x.quantize}) erase_if_unused(pair_op);
}

// A residual add of two activations of one shape, each behind its own pair (per tensor): an engine op
// on [a, b, sa, sb] that adds their integers, each rescaled once (add_int8).
bool hand_add_to_engine(pir::Operation* add) {
  const std::optional<std::vector<Qdq>> xs = quantized_operands({add->operand_source(0), add->operand_source(1)});
  if (!xs) return false;
  // one static shape, no broadcasting (the engine checks it again at run time)
  const auto ta = add->operand_source(0).type().dyn_cast<pir::DenseTensorType>();
  const auto tb = add->operand_source(1).type().dyn_cast<pir::DenseTensorType>();
  if (!ta || !tb || ta.dims() != tb.dims() || common::contain_unknown_dim(ta.dims())) return false;
  pir::AttributeMap attrs = activation_attributes("add", add->name(), (*xs)[0]);
  attrs["b_round_type"] = pir::Int32Attribute::get(pir::IrContext::Instance(), (*xs)[1].round_type);
  replace_operands_by_engine(add, *xs, attrs);
  return true;
}

// A concat along a constant axis of activations each behind its own pair (per tensor, one qmax and
// rounding): an engine op on [x1..xn, s1..sn] that writes each one's integers, rescaled by its own
// scale, into its slice (concat_int8).
bool hand_concat_to_engine(pir::Operation* concat) {
  pir::Operation* combine = producer(concat->operand_source(0));
  pir::Operation* full = producer(concat->operand_source(1));
  if (combine == nullptr || !combine->isa<pir::CombineOp>() || !combine->result(0).HasOneUse()) return false;
  const std::optional<pir::DoubleAttribute> value = is(full, "pd_op.full") ? typed<pir::DoubleAttribute>(full, "value")
                                                                           : std::nullopt;
  if (!value) return false;
  const auto out = concat->result(0).type().dyn_cast<pir::DenseTensorType>();
  if (!out || common::contain_unknown_dim(out.dims())) return false;
  const int rank = out.dims().size();
  const double given = value->data();
  if (!(given >= -rank && given < rank) || given != static_cast<int>(given)) return false;
  const int axis = static_cast<int>(given) < 0 ? static_cast<int>(given) + rank : static_cast<int>(given);
  if (axis < 0 || axis >= rank || combine->num_operands() == 0) return false;
  const std::optional<std::vector<Qdq>> xs = quantized_operands(combine->operands_source());
  if (!xs) return false;
  for (const Qdq& x : *xs)
    if (x.round_type != (*xs)[0].round_type) return false;  // (the engine quantizes them all one way)
  pir::AttributeMap attrs = activation_attributes("concat", concat->name(), (*xs)[0]);
  attrs["axis"] = pir::Int32Attribute::get(pir::IrContext::Instance(), axis);
  replace_operands_by_engine(concat, *xs, attrs, {combine, full});
  return true;
}

// A pair of an activation (per tensor) no conv, matmul, add or concat took: x on its int8 grid, in the engine,
// with the relu, pooling or softmax that alone reads it.
bool hand_activation_to_engine(pir::Operation* dequantize) {
  const std::optional<Qdq> x = qdq_feeding(dequantize->result(0));
  if (!x || x->axis != -1 || is_parameter(x->source) || dequantize->result(0).use_empty()) return false;
  pir::Operation* reader = only_reader(dequantize->result(0));
  std::optional<pir::AttributeMap> attrs;
  if (is(reader, "pd_op.relu") || is(reader, "pd_op.relu_")) {
    attrs = activation_attributes("relu", reader->name(), *x);
  } else if (is(reader, "pd_op.pool2d")) {
    attrs = pool_attributes(reader, *x);
  } else if (is(reader, "pd_op.softmax") && axis_problem(reader, "axis", dims_of(x->source).size()).empty()) {
    attrs = activation_attributes("softmax", reader->name(), *x);
    (*attrs)["axis"] = reader->attribute("axis");
  }
  if (attrs) {
    replace_by_engine(reader, {x->source, x->scale}, *attrs);
    reader->Erase();
  } else {
    replace_by_engine(dequantize, {x->source, x->scale}, activation_attributes("activation", "quantize_linear", *x));
  }
  for (pir::Operation* op : {x->dequantize, x->quantize}) erase_if_unused(op);
  return true;
}

// The ops of `block` named one of `names`, collected before a rewrite changes the block.
std::vector<pir::Operation*> ops_named(pir::Block& block, std::initializer_list<const char*> names) {
  std::vector<pir::Operation*> found;
  for (pir::Operation& op : block)
    for (const char* name : names)
      if (is(&op, name)) found.push_back(&op);
  return found;
}

class Int8EnginePass : public pir::Pass {
 public:
  // opt_level 0: it runs at every optimization level a predictor is given (a model the engine
  // computes must not silently become a float one)
  Int8EnginePass() : pir::Pass("{{ p }}_int8_engine_pass", 0) {}

  bool CanApplyOn(pir::Operation* op) const override { return op->isa<pir::ModuleOp>() && op->num_regions() > 0; }

  void Run(pir::Operation* op) override {
    pir::Block& block = op->dyn_cast<pir::ModuleOp>().block();
    // (no AddStatistics: Paddle keeps the count in a std::any, which on aarch64 builds of Paddle
    // does not take a value from another library: "Invalid type for attribute __match_count__")
    for (pir::Operation* anchor : ops_named(block, {"pd_op.conv2d", "pd_op.depthwise_conv2d", "pd_op.matmul"}))
      hand_to_engine(anchor);
    for (pir::Operation* add : ops_named(block, {"pd_op.add", "pd_op.add_"})) hand_add_to_engine(add);
    for (pir::Operation* concat : ops_named(block, {"pd_op.concat"})) hand_concat_to_engine(concat);
    // (what the convolutions, matmuls, adds and concats left)
    const std::vector<pir::Operation*> pairs = ops_named(block, {"pd_op.dequantize_linear"});
    for (pir::Operation* dequantize : pairs) hand_activation_to_engine(dequantize);
  }
};

}  // namespace
}  // namespace {{ p }}_engine

REGISTER_IR_PASS({{ p }}_int8_engine_pass, {{ p }}_engine::Int8EnginePass);
