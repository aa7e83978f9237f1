// shardwise/detail/text.hpp: building the readable strings (describe(), to_string()).
//
// Everything goes through std::string::append: GCC 12 at -O3 warns (-Wrestrict, a false
// positive) on `const char* + std::string&&`.
#pragma once

#include <string>
#include <string_view>

namespace shardwise::detail {

/// The parts one after the other.
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::string text;
  (text.append(std::string_view(parts)), ...);
  return text;
}

/// Axis names: "-" for none, "x" for one, "(x,y)" for several.
template <typename Names>
std::string axes_text(const Names& names) {
  if (names.size() == 0) return "-";
  std::string text;
  if (names.size() > 1) text.append("(");
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) text.append(",");
    text.append(std::string_view(names[i]));
  }
  if (names.size() > 1) text.append(")");
  return text;
}

}  // namespace shardwise::detail
