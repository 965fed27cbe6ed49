// custom_engine.{{ p }}_int8_engine: its op info and registration (see int8_engine_op.h).
#include "int8_engine_op.h"

#include "paddle/common/enforce.h"
#include "paddle/fluid/pir/dialect/operator/ir/op_dialect.h"
#include "paddle/pir/include/core/builtin_dialect.h"
#include "paddle/pir/include/core/builtin_op.h"
#include "paddle/pir/include/core/ir_context.h"

namespace {{ p }}_engine {

OpInfoTuple Int8EngineOp::GetOpInfo() {
  using paddle::dialect::OpInputInfo;
  using paddle::dialect::OpOutputInfo;
  using paddle::dialect::OpRunTimeInfo;
  const char* tensors = "pir::VectorType<paddle::dialect::DenseTensorType>";
  std::vector<OpInputInfo> inputs = {OpInputInfo("inputs", tensors, false, false, false, false)};
  std::vector<OpOutputInfo> outputs = {OpOutputInfo("out", tensors, false, false)};
  // No kernel and no kernel parameters: the engine runs it (an empty parameter name would be
  // looked up as an attribute by Paddle's executor).
  OpRunTimeInfo run_time("", {}, "", {}, {}, {}, {}, {});
  return std::make_tuple(inputs, std::vector<paddle::dialect::OpAttributeInfo>{}, outputs, run_time,
                         "{{ p }}_int8_engine");
}

void Int8EngineOp::Build(pir::Builder& builder, pir::OperationArgument& argument, pir::Value inputs,
                         const std::vector<pir::Type>& output_types, const pir::AttributeMap& attributes) {
  argument.AddInput(inputs);
  argument.AddAttributes(attributes);
  argument.AddOutput(pir::VectorType::get(pir::IrContext::Instance(), output_types));
  argument.AddRegion(nullptr);
  pir::PassStopGradientsDefaultly(argument);
}

void Int8EngineOp::VerifySig() {
  PADDLE_ENFORCE_EQ(num_operands() == 1 && num_results() == 1, true,
                    common::errors::PreconditionNotMet("%s takes one vector of tensors and gives one", name()));
  PADDLE_ENFORCE_EQ(operand_source(0).type().isa<pir::VectorType>() && result(0).type().isa<pir::VectorType>(), true,
                    common::errors::PreconditionNotMet("%s's operand and result are vectors of tensors", name()));
}

void RegisterInt8EngineOp() {
  pir::IrContext* ctx = pir::IrContext::Instance();
  ctx->GetOrRegisterDialect<pir::BuiltinDialect>();
  ctx->GetOrRegisterDialect<paddle::dialect::OperatorDialect>();
  pir::Dialect* dialect = ctx->GetOrRegisterDialect<paddle::dialect::CustomEngineDialect>();
  ctx->RegisterOpInfo(dialect, pir::TypeId::get<Int8EngineOp>(), Int8EngineOp::name(), Int8EngineOp::interface_set(),
                      Int8EngineOp::GetTraitSet(), Int8EngineOp::attributes_num, Int8EngineOp::attributes_name,
                      Int8EngineOp::VerifySigInvariants, Int8EngineOp::VerifyRegionInvariants);
}

}  // namespace {{ p }}_engine

IR_DEFINE_EXPLICIT_TYPE_ID({{ p }}_engine::Int8EngineOp)
