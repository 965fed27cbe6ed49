// What the int8 engine takes of an op's attributes, checked as Paddle's InferMeta checks them
// (conv2d's and pool2d's strides, paddings, dilations and groups; the axes of a softmax, concat and
// flatten). The pass leaves an op whose attributes fail a check as it was (Paddle's own kernels then
// run or refuse it); the engine refuses an engine op that fails one when it is built (an
// InvalidArgument). Every check returns what is wrong, naming the op, the attribute and its value
// ("" when nothing is); no attribute is read before its presence and its type are checked.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "int8_engine_op.h"
#include "paddle/common/ddim.h"

namespace {{ p }}_engine {

// An attribute of `op` as T, or nullopt when it is missing or of another type.
template <typename T>
std::optional<T> typed(pir::Operation* op, const char* name) {
  const pir::Attribute a = op->attribute(name);
  if (!a || !a.isa<T>()) return std::nullopt;
  return a.dyn_cast<T>();
}

inline std::optional<int32_t> int32_of(pir::Operation* op, const char* name) {
  const auto a = typed<pir::Int32Attribute>(op, name);
  return a ? std::optional<int32_t>(a->data()) : std::nullopt;
}

inline std::optional<bool> bool_of(pir::Operation* op, const char* name) {
  const auto a = typed<pir::BoolAttribute>(op, name);
  return a ? std::optional<bool>(a->data()) : std::nullopt;
}

inline std::optional<std::string> str_of(pir::Operation* op, const char* name) {
  const auto a = typed<pir::StrAttribute>(op, name);
  return a ? std::optional<std::string>(a->AsString()) : std::nullopt;
}

// The integers of an int array attribute (ints_of), or nullopt when it is missing or not one.
inline std::optional<std::vector<int64_t>> int_list_of(pir::Operation* op, const char* name) {
  const auto a = typed<pir::ArrayAttribute>(op, name);
  return a ? ints_of(*a) : std::nullopt;
}

// How an op names itself in an error: an engine op by the op it took ("pd_op.conv2d in the int8 engine").
inline std::string op_called(pir::Operation* op) {
  const std::optional<std::string> taken = str_of(op, "quantized_op");
  return taken ? *taken + " in the int8 engine" : op->name();
}

// "<op>'s attribute <name> is <value>, where <due>"
inline std::string wrong(pir::Operation* op, const char* name, const std::string& due) {
  std::ostringstream said;
  said << op_called(op) << "'s attribute " << name << " is ";
  const pir::Attribute a = op->attribute(name);
  if (a) {
    said << a;
  } else {
    said << "missing";
  }
  said << ", where " << due << " is due";
  return said.str();
}

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

// `count` (or, with `or_count`, that many) ints of an array attribute, each in [low, kIntMax].
inline std::string ints_problem(pir::Operation* op, const char* name, size_t count, size_t or_count, int64_t low,
                                const char* due) {
  const std::optional<std::vector<int64_t>> v = int_list_of(op, name);
  bool fits = v && (v->size() == count || v->size() == or_count);
  for (size_t i = 0; fits && i < v->size(); ++i) fits = (*v)[i] >= low && (*v)[i] <= kIntMax;
  return fits ? "" : wrong(op, name, due);
}

inline std::string int32_problem(pir::Operation* op, const char* name, int64_t low, const char* due) {
  const std::optional<int32_t> v = int32_of(op, name);
  return v && *v >= low ? "" : wrong(op, name, due);
}

inline std::string bool_problem(pir::Operation* op, const char* name) {
  return bool_of(op, name) ? "" : wrong(op, name, "a bool");
}

// The first of `problems` ("" when none).
inline std::string first_of(std::initializer_list<std::string> problems) {
  for (const std::string& p : problems)
    if (!p.empty()) return p;
  return "";
}

inline std::string algorithm_problem(pir::Operation* op, std::initializer_list<const char*> known, const char* due) {
  const std::optional<std::string> v = str_of(op, "padding_algorithm");
  if (v)
    for (const char* name : known)
      if (*v == name) return "";
  return wrong(op, "padding_algorithm", due);
}

// A conv2d's or depthwise_conv2d's (or its engine op's) attributes.
inline std::string conv_problem(pir::Operation* op) {
  return first_of({ints_problem(op, "strides", 2, 2, 1, "2 ints > 0"),
                   ints_problem(op, "paddings", 2, 4, 0, "2 or 4 ints >= 0"),
                   ints_problem(op, "dilations", 2, 2, 1, "2 ints > 0"),
                   algorithm_problem(op, {"EXPLICIT", "SAME", "VALID"}, "EXPLICIT, SAME or VALID"),
                   int32_problem(op, "groups", 1, "an int32 >= 1")});
}

// A pool2d's (or its engine op's) attributes (its kernel is checked apart: an operand of a pool2d).
inline std::string pool_problem(pir::Operation* op) {
  return first_of({ints_problem(op, "strides", 2, 2, 1, "2 ints > 0"),
                   ints_problem(op, "paddings", 2, 4, 0, "2 or 4 ints >= 0"),
                   algorithm_problem(op, {"EXPLICIT", "VALID"}, "EXPLICIT or VALID (the engine's)"),
                   bool_problem(op, "ceil_mode"), bool_problem(op, "exclusive"), bool_problem(op, "adaptive"),
                   bool_problem(op, "global_pooling")});
}

// An axis attribute of a tensor of `rank` dims: an int32 in [-rank, rank) ([-1, 1) for a 0-d one).
inline std::string axis_problem(pir::Operation* op, const char* name, int64_t rank) {
  const std::optional<int32_t> v = int32_of(op, name);
  const int64_t n = std::max<int64_t>(rank, 1);
  if (v && *v >= -n && *v < n) return "";
  return wrong(op, name, "an int32 axis in [" + std::to_string(-n) + ", " + std::to_string(n) + ")");
}

// A flatten's start and stop axes (start_axis/stop_axis on a pd_op.flatten, flatten_start/stop on
// the engine op) of an input of `rank` dims: in range, the start not after the stop.
inline std::string flatten_problem(pir::Operation* op, const char* start, const char* stop, int64_t rank) {
  const std::string in_range = first_of({axis_problem(op, start, rank), axis_problem(op, stop, rank)});
  if (!in_range.empty()) return in_range;
  const int64_t n = std::max<int64_t>(rank, 1);
  const int64_t a = *int32_of(op, start), b = *int32_of(op, stop);
  return (a < 0 ? a + n : a) <= (b < 0 ? b + n : b) ? "" : wrong(op, stop, std::string("an axis not before ") + start);
}

// x [N, C, H, W] and w [O, C / groups, kh, kw] as Paddle's conv2d takes them (a dim the program
// does not know, -1, passes: the engine checks the tensors at run time).
inline std::string conv_shapes_problem(const std::string& called, const common::DDim& x, const common::DDim& w,
                                       int64_t groups) {
  const std::string shapes = " of input " + x.to_str() + " and weight " + w.to_str();
  if (x.size() != 4 || w.size() != 4) return called + shapes + ": a 4-d (NCHW) input and weight are due";
  if (w[0] % groups != 0 || w[1] < 1 || w[2] < 1 || w[3] < 1)
    return called + shapes + " with groups " + std::to_string(groups) +
           ": a weight of output channels a multiple of groups is due";
  if (x[1] >= 0 && x[1] != w[1] * groups)
    return called + shapes + ": an input of " + std::to_string(w[1] * groups) + " channels (the weight's " +
           std::to_string(w[1]) + " x groups " + std::to_string(groups) + ") is due, not " + std::to_string(x[1]);
  return "";
}

}  // namespace {{ p }}_engine
