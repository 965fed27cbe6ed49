// Debugging switches of the {{ NAME }} device library (read once from the environment):
//   {{ NAME }}_DUMP_OP_ARGS=1|2|3  print each op: 1 its name (and the Paddle kernel that
//                               called it), 2 plus arguments (shapes, dtypes, attributes),
//                               3 plus tensor values (first {{ NAME }}_DUMP_MAX_VALUES, default 16)
//   {{ NAME }}_AUTOCOMPARE=1       re-run ops that have a reference implementation
//                               (debug.cc) and print every mismatch with the op, shapes
//                               and max difference; tolerances {{ NAME }}_AUTOCOMPARE_RTOL/_ATOL
#pragma once

#include <cstdint>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "{{ p }}_device.h"

namespace {{ p }} {
namespace debug {

struct Settings {
  int dump = 0;
  bool autocompare = false;
  double rtol = 1e-4;
  double atol = 1e-5;
  int64_t max_values = 16;
};

const Settings& settings();

// The Paddle kernel on whose behalf ops run on this thread ("-" outside kernels).
const char* current_kernel();

// One op's record, printed when it goes out of scope, i.e. after the op ran, so
// level 3 shows outputs as well as inputs.
class Trace {
 public:
  explicit Trace(const char* op) : op_(op), on_(settings().dump > 0) {}
  ~Trace();
  const char* op() const { return op_; }
  // Attributes are printed from dump level 2: a caller skips work that only feeds attr().
  bool wants_attrs() const { return on_ && settings().dump >= 2; }
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  template <typename V>
  Trace& attr(const char* name, V value) {
    if (wants_attrs()) {
      std::ostringstream s;
      s << ' ' << name << '=' << value;
      attrs_ += s.str();
    }
    return *this;
  }
  Trace& tensor(const char* name, const void* data, {{ p }}_dtype_t dtype, const {{ p }}_shape_t* shape);
  Trace& tensor(const char* name, const void* data, {{ p }}_dtype_t dtype, std::initializer_list<int64_t> dims);

 private:
  struct Tensor {
    std::string name;
    const void* data;
    {{ p }}_dtype_t dtype;
    std::vector<int64_t> dims;
  };
  const char* op_;
  bool on_;
  std::string attrs_;
  std::vector<Tensor> tensors_;
};

// Autocompare one float output of `op` against the reference result.
void compare(const char* op, const char* output, const float* got, const float* want, int64_t n,
             const std::string& shape);

std::string shape_string(const {{ p }}_shape_t& shape);
std::string dims_string(const std::vector<int64_t>& dims);

}  // namespace debug

// Straightforward reference implementations, independent of the optimized paths
// in the *_ops.cc files (no blocking, no im2col, no flat fast paths).
namespace reference {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, const float* c_in, float* c,
          int64_t ldc);
void conv2d_forward(const {{ p }}_conv2d_params_t& p, const float* x, const float* w, float* y);
// Arithmetic binary ops (not comparisons) with numpy broadcasting.
void binary({{ p }}_binary_op_t op, const float* x, const {{ p }}_shape_t& xs, const float* y,
            const {{ p }}_shape_t& ys, float* out, const {{ p }}_shape_t& os);
void softmax_forward(const float* x, float* y, int64_t outer, int64_t axis, int64_t inner);
void reduce({{ p }}_reduce_op_t op, const float* x, const {{ p }}_shape_t& xs, const int* mask, float* out);

}  // namespace reference
}  // namespace {{ p }}
