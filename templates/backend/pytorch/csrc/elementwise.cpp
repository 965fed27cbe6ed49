// Element-wise kernels: add/sub/mul/div with numpy broadcasting and type promotion,
// comparisons, neg, reciprocal, and the compound updates optimizers use
// (addcmul_, addcdiv_, lerp_). Each is a composition of device-library ops. A result takes
// the memory format torch gives it (channels_last when its operand of the result's shape is).
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>

#include "common.h"

namespace torch_{{ p }} {
namespace elementwise {

// A binary operand as a device tensor of `type`: CPU 0-dim tensors (Python numbers,
// `x * 2.0`) become device scalars; device tensors are cast and made contiguous.
at::Tensor operand(const at::Tensor& t, at::ScalarType type, const at::Device& device) {
  if (t.device().type() == at::kCPU) {
    TORCH_CHECK(t.dim() == 0, "expected a {{ device_type }} tensor or a CPU scalar, got a CPU tensor of shape ", t.sizes());
    return scalar_on_device(t.item(), type, device);
  }
  TORCH_CHECK(t.device() == device, "Expected all tensors to be on the same device, but found at least two devices, ",
              device, " and ", t.device(), "!");
  return contiguous_as(t, type);
}

// out = x * scale (x a dense device tensor, out of its strides: x itself, or new)
at::Tensor scaled(const at::Tensor& x, double scale, const at::Tensor& into = at::Tensor()) {
  at::Tensor out = into.defined() ? into : empty_device_like(x, x.scalar_type());
  if (x.numel() > 0)
    check({{ p }}_scale(current_stream(), device_dtype(x.scalar_type()), x.const_data_ptr(), out.data_ptr(), x.numel(),
                     scale, 0.0, 1),
          "scale");
  return out;
}

// The device tensor among the operands (one may be a CPU scalar).
const at::Tensor& device_side(const at::Tensor& a, const at::Tensor& b) { return a.device().type() == at::kCPU ? b : a; }

// result = a (op) b, both already of `compute` dtype (device, contiguous), broadcast; written
// into `into` when given (an in-place op's self, already checked by in_place_target).
at::Tensor apply(const at::Tensor& a, const at::Tensor& b, {{ p }}_binary_op_t op, at::ScalarType compute,
                 const at::Tensor& into = at::Tensor()) {
  const auto sizes = at::infer_size(a.sizes(), b.sizes());
  const bool compare = op >= {{ NAME }}_BINARY_EQUAL;
  at::Tensor out = into.defined() ? into : empty_device(sizes, a.options().dtype(compare ? at::kBool : compute));
  if (out.numel() == 0) return out;
  {{ p }}_shape_t as = shape_of(a.sizes()), bs = shape_of(b.sizes()), os = shape_of(sizes);
  check({{ p }}_binary(current_stream(), op, device_dtype(compute), a.const_data_ptr(), &as, b.const_data_ptr(), &bs,
                    out.data_ptr(), &os),
        "binary");
  return out;
}

// An in-place op (self = self (op) other) writes straight into self, without a temporary and
// a copy, when self is a contiguous device tensor of the result's dtype and shape that other
// does not partly overlap (an element read after it was written).
bool in_place_target(const at::Tensor& self, const at::Tensor& other, at::ScalarType compute) {
  if (self.device().type() != c10::DeviceType::PrivateUse1 || self.scalar_type() != compute || !self.is_contiguous())
    return false;
  if (other.device().type() == c10::DeviceType::PrivateUse1) {
    const at::MemOverlapStatus overlap = at::get_overlap_status(self, other);
    if (overlap == at::MemOverlapStatus::Partial || overlap == at::MemOverlapStatus::TooHard) return false;
  }
  return at::infer_size(self.sizes(), other.sizes()) == self.sizes();
}

// The element-wise result in the layout torch's TensorIterator picks: the order of the strides of
// the first operand of the result's shape (a broadcast one has no say), so x * bias, x + 1 and
// bias + x are channels_last when x is, and so is a strided view's result in its dims' order.
at::Tensor in_result_layout(const at::Tensor& out, const at::Tensor& self, const at::Tensor& other) {
  for (const at::Tensor* t : {&self, &other})
    if (t->sizes() == out.sizes()) return in_layout_of(out, *t);
  return out;
}

bool is_one(const at::Scalar& alpha) {
  return (alpha.isIntegral(true) && alpha.toLong() == 1) || (alpha.isFloatingPoint() && alpha.toDouble() == 1.0);
}

// The computation all add/sub/mul/div/eq variants share. nullopt: the device library has
// no kernel for the promoted dtype, the caller runs the op on the CPU instead.
// With in_place, the result goes into self when in_place_target allows (the caller checks
// whether it got self back).
std::optional<at::Tensor> binary(const at::Tensor& self, const at::Tensor& other, {{ p }}_binary_op_t op,
                                 const at::Scalar& alpha = 1, bool in_place = false) {
  at::ScalarType compute = at::result_type(self, other);
  if (op == {{ NAME }}_BINARY_DIV && at::isIntegralType(compute, /*includeBool=*/true))
    compute = c10::typeMetaToScalarType(c10::get_default_dtype());  // true division
  if (!is_device_dtype(compute)) return std::nullopt;
  TORCH_CHECK(!(op == {{ NAME }}_BINARY_SUB && compute == at::kBool),
              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.");
  const at::Device device = device_side(self, other).device();
  const c10::DeviceGuard guard(device);
  at::Tensor a = operand(self, compute, device), b = operand(other, compute, device);
  if (!is_one(alpha)) b = scaled(b, alpha.toDouble());
  const bool direct = in_place && op < {{ NAME }}_BINARY_EQUAL && in_place_target(self, other, compute);
  at::Tensor out = apply(a, b, op, compute, direct ? self : at::Tensor());
  return in_place ? out : in_result_layout(out, self, other);
}

// Stores an in-place op's result into self unless it was written there already.
at::Tensor& store_in_place(const at::Tensor& result, at::Tensor& self) {
  if (result.is_same(self)) return self;
  TORCH_CHECK(result.sizes() == self.sizes(), "output with shape ", self.sizes(), " doesn't match the broadcast shape ",
              result.sizes());
  return store(result, self);
}

#define {{ NAME }}_ARITH(fn, opname, OP)                                                                     \
  at::Tensor fn(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {              \
    KernelName k("aten::" #opname ".Tensor");                                                           \
    auto r = binary(self, other, OP, alpha);                                                            \
    return r ? *r : run_on_cpu<ATEN_OP2(opname, Tensor)>(self, other, alpha);                           \
  }                                                                                                     \
  at::Tensor& fn##_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {               \
    KernelName k("aten::" #opname "_.Tensor");                                                          \
    auto r = binary(self, other, OP, alpha, /*in_place=*/true);                                         \
    return r ? store_in_place(*r, self) : run_on_cpu<ATEN_OP2(opname##_, Tensor)>(self, other, alpha);  \
  }                                                                                                     \
  at::Tensor& fn##_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha,        \
                       at::Tensor& out) {                                                               \
    KernelName k("aten::" #opname ".out");                                                              \
    auto r = binary(self, other, OP, alpha);                                                            \
    return r ? store(*r, out) : run_on_cpu<ATEN_OP2(opname, out)>(self, other, alpha, out);             \
  }

{{ NAME }}_ARITH(add, add, {{ NAME }}_BINARY_ADD)
{{ NAME }}_ARITH(sub, sub, {{ NAME }}_BINARY_SUB)

#define {{ NAME }}_ARITH_NO_ALPHA(fn, opname, OP)                                                            \
  at::Tensor fn(const at::Tensor& self, const at::Tensor& other) {                                      \
    KernelName k("aten::" #opname ".Tensor");                                                           \
    auto r = binary(self, other, OP);                                                                   \
    return r ? *r : run_on_cpu<ATEN_OP2(opname, Tensor)>(self, other);                                  \
  }                                                                                                     \
  at::Tensor& fn##_(at::Tensor& self, const at::Tensor& other) {                                        \
    KernelName k("aten::" #opname "_.Tensor");                                                          \
    auto r = binary(self, other, OP, 1, /*in_place=*/true);                                             \
    return r ? store_in_place(*r, self) : run_on_cpu<ATEN_OP2(opname##_, Tensor)>(self, other);         \
  }                                                                                                     \
  at::Tensor& fn##_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {              \
    KernelName k("aten::" #opname ".out");                                                              \
    auto r = binary(self, other, OP);                                                                   \
    return r ? store(*r, out) : run_on_cpu<ATEN_OP2(opname, out)>(self, other, out);                    \
  }

{{ NAME }}_ARITH_NO_ALPHA(mul, mul, {{ NAME }}_BINARY_MUL)
{{ NAME }}_ARITH_NO_ALPHA(div, div, {{ NAME }}_BINARY_DIV)

at::Tensor eq_tensor(const at::Tensor& self, const at::Tensor& other) {
  KernelName k("aten::eq.Tensor");
  auto r = binary(self, other, {{ NAME }}_BINARY_EQUAL);
  return r ? *r : run_on_cpu<ATEN_OP2(eq, Tensor)>(self, other);
}

at::Tensor eq_scalar(const at::Tensor& self, const at::Scalar& other) {
  KernelName k("aten::eq.Scalar");
  at::Tensor wrapped = c10::scalar_to_tensor(other);  // promotes like a Python number
  wrapped.unsafeGetTensorImpl()->set_wrapped_number(true);
  auto r = binary(self, wrapped, {{ NAME }}_BINARY_EQUAL);
  return r ? *r : run_on_cpu<ATEN_OP2(eq, Scalar)>(self, other);
}

at::Tensor& eq_tensor_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  KernelName k("aten::eq.Tensor_out");
  auto r = binary(self, other, {{ NAME }}_BINARY_EQUAL);
  return r ? store(*r, out) : run_on_cpu<ATEN_OP2(eq, Tensor_out)>(self, other, out);
}

// ---- negation ------------------------------------------------------------------------
// -self (sub's backward): a device scale by -1.
std::optional<at::Tensor> negated(const at::Tensor& self) {
  if (!is_device_dtype(self.scalar_type()) || self.scalar_type() == at::kBool) return std::nullopt;
  const c10::DeviceGuard guard(self.device());
  return scaled(dense(self), -1.0);
}

at::Tensor neg(const at::Tensor& self) {
  KernelName k("aten::neg");
  auto r = negated(self);
  return r ? *r : run_on_cpu<ATEN_OP(neg)>(self);
}

at::Tensor& neg_out(const at::Tensor& self, at::Tensor& out) {
  KernelName k("aten::neg.out");
  auto r = negated(self);
  return r ? store(*r, out) : run_on_cpu<ATEN_OP2(neg, out)>(self, out);
}

// ---- reciprocal --------------------------------------------------------------------------
// 1 / self (torch.amp.GradScaler's inverse scale, taken in float64): a device division of a
// device one.
std::optional<at::Tensor> reciprocal_of(const at::Tensor& self) {
  if (!is_device_dtype(self.scalar_type()) || !at::isFloatingType(self.scalar_type())) return std::nullopt;
  const c10::DeviceGuard guard(self.device());
  return binary(scalar_on_device(1.0, self.scalar_type(), self.device()), self, {{ NAME }}_BINARY_DIV);
}

at::Tensor reciprocal(const at::Tensor& self) {
  KernelName k("aten::reciprocal");
  auto r = reciprocal_of(self);
  return r ? *r : run_on_cpu<ATEN_OP(reciprocal)>(self);
}

at::Tensor& reciprocal_out(const at::Tensor& self, at::Tensor& out) {
  KernelName k("aten::reciprocal.out");
  auto r = reciprocal_of(self);
  return r ? store(*r, out) : run_on_cpu<ATEN_OP2(reciprocal, out)>(self, out);
}

// ---- optimizer updates -----------------------------------------------------------------
bool float_device(std::initializer_list<const at::Tensor*> ts) {
  for (const at::Tensor* t : ts)
    if (t->scalar_type() != at::kFloat && t->scalar_type() != at::kDouble) return false;
  at::ScalarType first = (*ts.begin())->scalar_type();
  for (const at::Tensor* t : ts)
    if (t->scalar_type() != first || t->device().type() != c10::DeviceType::PrivateUse1) return false;
  return true;
}

at::Tensor checked(std::optional<at::Tensor> r) {
  TORCH_INTERNAL_ASSERT(r.has_value());
  return *r;
}

// self += value * t1 (op) t2: the product is a temporary of ours, scaled in place.
at::Tensor& addc_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value,
                  {{ p }}_binary_op_t op) {
  at::Tensor prod = checked(binary(t1, t2, op));
  if (!is_one(value) && prod.scalar_type() == self.scalar_type()) {
    prod = scaled(prod, value.toDouble(), prod);
    return store_in_place(checked(binary(self, prod, {{ NAME }}_BINARY_ADD, 1, true)), self);
  }
  return store_in_place(checked(binary(self, prod, {{ NAME }}_BINARY_ADD, value, true)), self);
}

at::Tensor& addcmul_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value) {
  KernelName k("aten::addcmul_");
  if (!float_device({&self, &t1, &t2})) return run_on_cpu<ATEN_OP(addcmul_)>(self, t1, t2, value);
  return addc_(self, t1, t2, value, {{ NAME }}_BINARY_MUL);
}

at::Tensor& addcdiv_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value) {
  KernelName k("aten::addcdiv_");
  if (!float_device({&self, &t1, &t2})) return run_on_cpu<ATEN_OP(addcdiv_)>(self, t1, t2, value);
  return addc_(self, t1, t2, value, {{ NAME }}_BINARY_DIV);
}

// self += weight * (end - self)
at::Tensor& lerp_scalar_(at::Tensor& self, const at::Tensor& end, const at::Scalar& weight) {
  KernelName k("aten::lerp_.Scalar");
  if (!float_device({&self, &end})) return run_on_cpu<ATEN_OP2(lerp_, Scalar)>(self, end, weight);
  at::Tensor diff = checked(binary(end, self, {{ NAME }}_BINARY_SUB));
  diff = scaled(diff, weight.toDouble(), diff);  // a temporary of ours, scaled in place
  return store_in_place(checked(binary(self, diff, {{ NAME }}_BINARY_ADD, 1, true)), self);
}

}  // namespace elementwise

}  // namespace torch_{{ p }}
