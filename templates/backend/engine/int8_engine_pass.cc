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
// per input channel) is left as it was: the folding passes after it run that part in float.
#include <optional>
#include <string>
#include <vector>

#include "int8_engine_op.h"
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
  return ints_of(op->attribute<pir::ArrayAttribute>("value"));
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
  if (!q->attribute<pir::BoolAttribute>("is_test").data() || q->attribute<pir::BoolAttribute>("only_observer").data())
    return std::nullopt;
  const int32_t qmax = int_attr(q, "qmax");
  if (qmax < 1 || qmax > 127 || int_attr(dq, "qmax") != qmax || int_attr(dq, "quant_axis") != int_attr(q, "quant_axis"))
    return std::nullopt;
  return Qdq{q, dq, q->operand_source(0), q->operand_source(1), int_attr(q, "quant_axis"), qmax, int_attr(q, "round_type")};
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

// The attributes of the engine op for `anchor` with its quantized operands, or nullopt when the
// engine does not take it.
std::optional<pir::AttributeMap> engine_attributes(pir::Operation* anchor, const Qdq& x, const Qdq& w) {
  pir::IrContext* ctx = pir::IrContext::Instance();
  const std::string& kind = anchor->name();
  pir::AttributeMap attrs = activation_attributes(kind == "pd_op.matmul" ? "matmul" : "conv2d", kind, x);
  if (x.axis != -1 || !is_parameter(w.source)) return std::nullopt;  // activations: one scale
  if (kind == "pd_op.matmul") {
    // x [..., K] times a [K, N] weight; its scales per tensor or per output column
    if (anchor->attribute<pir::BoolAttribute>("transpose_x").data()) return std::nullopt;
    const bool trans_w = anchor->attribute<pir::BoolAttribute>("transpose_y").data();
    if (w.axis != -1 && w.axis != (trans_w ? 0 : 1)) return std::nullopt;
    attrs["transpose_y"] = anchor->attribute("transpose_y");
  } else {
    // NCHW convolutions; weight scales per tensor or per output channel (OIHW axis 0)
    const std::string layout = anchor->attribute<pir::StrAttribute>("data_format").AsString();
    if ((layout != "NCHW" && layout != "AnyLayout") || (w.axis != -1 && w.axis != 0)) return std::nullopt;
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
  auto text = [&](const char* name) { return pool->attribute<pir::StrAttribute>(name).AsString(); };
  const std::string type = text("pooling_type"), layout = text("data_format"), padding = text("padding_algorithm");
  if ((type != "max" && type != "avg") || (layout != "NCHW" && layout != "AnyLayout")) return std::nullopt;
  if (padding != "EXPLICIT" && padding != "VALID") return std::nullopt;
  const std::optional<std::vector<int64_t>> kernel = constant_ints(pool->operand_source(1));
  if (!kernel || kernel->size() != 2) return std::nullopt;
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
  return input && input.dims().size() >= 1 ? flatten : nullptr;
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

// A residual add of two activations of one shape, each behind its own pair (per tensor): an engine op
// on [a, b, sa, sb] that adds their integers, each rescaled once (add_int8).
bool hand_add_to_engine(pir::Operation* add) {
  const std::optional<Qdq> a = qdq_feeding(add->operand_source(0));
  const std::optional<Qdq> b = qdq_feeding(add->operand_source(1));
  if (!a || !b || a->axis != -1 || b->axis != -1 || a->qmax != b->qmax) return false;
  // (x + x through one pair stays float: its ops would be erased twice below)
  if (a->dequantize == b->dequantize || is_parameter(a->source) || is_parameter(b->source)) return false;
  // one static shape, no broadcasting (the engine checks it again at run time)
  const auto ta = add->operand_source(0).type().dyn_cast<pir::DenseTensorType>();
  const auto tb = add->operand_source(1).type().dyn_cast<pir::DenseTensorType>();
  if (!ta || !tb || ta.dims() != tb.dims() || common::contain_unknown_dim(ta.dims())) return false;
  pir::AttributeMap attrs = activation_attributes("add", add->name(), *a);
  attrs["b_round_type"] = pir::Int32Attribute::get(pir::IrContext::Instance(), b->round_type);
  replace_by_engine(add, {a->source, b->source, a->scale, b->scale}, attrs);
  add->Erase();
  for (pir::Operation* op : {a->dequantize, a->quantize, b->dequantize, b->quantize}) erase_if_unused(op);
  return true;
}

// A concat along a constant axis of activations each behind its own pair (per tensor, one qmax and
// rounding): an engine op on [x1..xn, s1..sn] that writes each one's integers, rescaled by its own
// scale, into its slice (concat_int8).
bool hand_concat_to_engine(pir::Operation* concat) {
  pir::Operation* combine = producer(concat->operand_source(0));
  pir::Operation* full = producer(concat->operand_source(1));
  if (combine == nullptr || !combine->isa<pir::CombineOp>() || !combine->result(0).HasOneUse()) return false;
  if (!is(full, "pd_op.full") || !full->attribute("value").isa<pir::DoubleAttribute>()) return false;
  const auto out = concat->result(0).type().dyn_cast<pir::DenseTensorType>();
  if (!out || common::contain_unknown_dim(out.dims())) return false;
  const int rank = out.dims().size();
  int axis = static_cast<int>(full->attribute<pir::DoubleAttribute>("value").data());
  axis = axis < 0 ? axis + rank : axis;
  if (axis < 0 || axis >= rank || combine->num_operands() == 0) return false;
  std::vector<Qdq> xs;
  for (uint32_t i = 0; i < combine->num_operands(); ++i) {
    const std::optional<Qdq> x = qdq_feeding(combine->operand_source(i));
    if (!x || x->axis != -1 || is_parameter(x->source)) return false;
    if (!xs.empty() && (x->qmax != xs[0].qmax || x->round_type != xs[0].round_type)) return false;
    for (const Qdq& seen : xs)
      if (seen.dequantize == x->dequantize) return false;  // (one pair twice: its ops would be erased twice)
    xs.push_back(*x);
  }
  pir::AttributeMap attrs = activation_attributes("concat", concat->name(), xs[0]);
  attrs["axis"] = pir::Int32Attribute::get(pir::IrContext::Instance(), axis);
  std::vector<pir::Value> operands;
  for (const Qdq& x : xs) operands.push_back(x.source);
  for (const Qdq& x : xs) operands.push_back(x.scale);
  replace_by_engine(concat, operands, attrs);
  concat->Erase();
  erase_if_unused(combine);
  erase_if_unused(full);
  for (const Qdq& x : xs)
    for (pir::Operation* op : {x.dequantize, x.quantize}) erase_if_unused(op);
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
  } else if (is(reader, "pd_op.softmax")) {
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

class Int8EnginePass : public pir::Pass {
 public:
  // opt_level 0: it runs at every optimization level a predictor is given (a model the engine
  // computes must not silently become a float one)
  Int8EnginePass() : pir::Pass("{{ p }}_int8_engine_pass", 0) {}

  bool CanApplyOn(pir::Operation* op) const override { return op->isa<pir::ModuleOp>() && op->num_regions() > 0; }

  void Run(pir::Operation* op) override {
    pir::Block& block = op->dyn_cast<pir::ModuleOp>().block();
    std::vector<pir::Operation*> anchors;  // (collected first: the rewrite changes the block)
    for (pir::Operation& candidate : block)
      if (is(&candidate, "pd_op.conv2d") || is(&candidate, "pd_op.depthwise_conv2d") || is(&candidate, "pd_op.matmul"))
        anchors.push_back(&candidate);
    // (no AddStatistics: Paddle keeps the count in a std::any, which on aarch64 builds of Paddle
    // does not take a value from another library: "Invalid type for attribute __match_count__")
    for (pir::Operation* anchor : anchors) hand_to_engine(anchor);
    std::vector<pir::Operation*> adds;
    for (pir::Operation& candidate : block)
      if (is(&candidate, "pd_op.add") || is(&candidate, "pd_op.add_")) adds.push_back(&candidate);
    for (pir::Operation* add : adds) hand_add_to_engine(add);
    std::vector<pir::Operation*> concats;
    for (pir::Operation& candidate : block)
      if (is(&candidate, "pd_op.concat")) concats.push_back(&candidate);
    for (pir::Operation* concat : concats) hand_concat_to_engine(concat);
    std::vector<pir::Operation*> pairs;  // (what the convolutions, matmuls, adds and concats left)
    for (pir::Operation& candidate : block)
      if (is(&candidate, "pd_op.dequantize_linear")) pairs.push_back(&candidate);
    for (pir::Operation* dequantize : pairs) hand_activation_to_engine(dequantize);
  }
};

}  // namespace
}  // namespace {{ p }}_engine

REGISTER_IR_PASS({{ p }}_int8_engine_pass, {{ p }}_engine::Int8EnginePass);
