// shardwise/detail/fixed_string.hpp: a string literal usable as a template argument.
//
// Axis names are part of types (Axis<"x", 2>, Split<"x">), so they must be
// structural values. fixed_string stores the characters of a literal; two names
// compare by their text, whatever their lengths.
#pragma once

#include <cstddef>
#include <string_view>

namespace shardwise::detail {

template <std::size_t N>
struct fixed_string {
  char chars[N]{};

  // Implicit on purpose: it is what lets users write Axis<"x", 2>.
  constexpr fixed_string(const char (&literal)[N]) {  // NOLINT(google-explicit-constructor)
    for (std::size_t i = 0; i < N; ++i) chars[i] = literal[i];
  }

  [[nodiscard]] constexpr std::string_view view() const { return {chars, N - 1}; }
  [[nodiscard]] static constexpr std::size_t size() { return N - 1; }

  template <std::size_t M>
  constexpr bool operator==(const fixed_string<M>& other) const {
    return view() == other.view();
  }
};

}  // namespace shardwise::detail
