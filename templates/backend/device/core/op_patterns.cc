#include "op_patterns.h"

#include <cstdio>
#include <sstream>

namespace {{ p }}::core {

OpPatterns::OpPatterns(const std::string& list, const char* source) {
  std::stringstream items(list);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.empty()) continue;
    try {
      patterns_.emplace_back(item);
    } catch (const std::regex_error&) {
      std::fprintf(stderr, "[{{ NAME }}] %s: ignoring invalid regex '%s'\n", source, item.c_str());
    }
  }
}

bool OpPatterns::matches(const std::string& name) const {
  for (const std::regex& re : patterns_)
    if (std::regex_match(name, re)) return true;
  return false;
}

}  // namespace {{ p }}::core
