// Lists of op-name patterns: a comma-separated list of regular expressions, each matched
// against whole names ("matmul.*,conv2d_grad"; "aten::add.Tensor"). Both framework adapters
// read {{ NAME }}_FALLBACK_OPS and the kernels they leave unregistered through this.
#pragma once

#include <regex>
#include <string>
#include <vector>

namespace {{ p }}::core {

class OpPatterns {
 public:
  OpPatterns() = default;
  // An invalid expression is reported on stderr, naming `source`, and skipped.
  OpPatterns(const std::string& list, const char* source);

  bool empty() const { return patterns_.empty(); }
  bool matches(const std::string& name) const;

 private:
  std::vector<std::regex> patterns_;
};

}  // namespace {{ p }}::core
