// The int8 engine's op, custom_engine.{{ p }}_int8_engine: one quantized conv2d, depthwise_conv2d,
// matmul, residual add or activation whose quantize/dequantize pairs the engine computes in int8
// arithmetic. int8_engine_pass.cc puts it in a program, int8_engine.cc lowers, builds and runs it.
//
// Its one operand is a builtin.combine of [x, w, x_scale, w_scale] (the float activation and
// weight, and the abs-max scales their quantize_linear ops had; an add's [a, b, a_scale, b_scale],
// an activation's [x, x_scale]); its one result, a vector of the
// output tensor, is taken apart by a builtin.split (what Paddle's executor requires of an engine
// op). Every attribute the engine needs is on the op itself: its region stays empty, so nothing
// inside it is lowered or constant-folded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "paddle/fluid/pir/dialect/operator/interface/op_yaml_info.h"
#include "paddle/pir/include/core/builtin_attribute.h"
#include "paddle/pir/include/core/builder.h"
#include "paddle/pir/include/core/builtin_type.h"
#include "paddle/pir/include/core/op_base.h"
#include "paddle/pir/include/core/operation_utils.h"

namespace {{ p }}_engine {

class Int8EngineOp : public pir::Op<Int8EngineOp, paddle::dialect::OpYamlInfoInterface> {
 public:
  using Op::Op;
  // "custom_engine" in the name is how Paddle tells an engine op (op_dialect.h: IsCustomEngineOp)
  static const char* name() { return "custom_engine.{{ p }}_int8_engine"; }
  static constexpr uint32_t attributes_num = 0;  // (its attributes are free-form, read by the engine)
  static constexpr const char** attributes_name = nullptr;
  static OpInfoTuple GetOpInfo();
  static void Build(pir::Builder& builder, pir::OperationArgument& argument, pir::Value inputs,  // NOLINT
                    const std::vector<pir::Type>& output_types, const pir::AttributeMap& attributes);
  void VerifySig();
  pir::Value inputs() { return operand_source(0); }
  pir::Value out() { return result(0); }
};

// Registers the op in Paddle's custom_engine dialect (the engine's register_custom_engine_op).
void RegisterInt8EngineOp();

// The integers of an array attribute whose elements are int32 or int64 (conv2d's strides hold
// int32, pool2d's and full_int_array's int64); nullopt when an element is neither.
inline std::optional<std::vector<int64_t>> ints_of(const pir::ArrayAttribute& array) {
  std::vector<int64_t> values;
  for (const pir::Attribute& a : array.AsVector()) {
    if (a.isa<pir::Int64Attribute>()) {
      values.push_back(a.dyn_cast<pir::Int64Attribute>().data());
    } else if (a.isa<pir::Int32Attribute>()) {
      values.push_back(a.dyn_cast<pir::Int32Attribute>().data());
    } else {
      return std::nullopt;
    }
  }
  return values;
}

inline bool is_pool_kind(const std::string& kind) { return kind == "max_pool2d" || kind == "avg_pool2d"; }

// Whether an engine op of this kind takes an activation [x, x_scale] and puts it on its int8 grid
// (with the relu, pooling or softmax that reads it), rather than a conv2d or matmul [x, w, x_scale, w_scale].
inline bool is_activation_kind(const std::string& kind) {
  return kind == "activation" || kind == "relu" || kind == "softmax" || is_pool_kind(kind);
}

}  // namespace {{ p }}_engine

IR_DECLARE_EXPLICIT_TYPE_ID({{ p }}_engine::Int8EngineOp)
