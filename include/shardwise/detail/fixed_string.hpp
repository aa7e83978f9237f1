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

/// "N*text": the names of N values that comm/consistency.hpp's messages number from 0 ('#' in
/// the text); e.g. repeated_name<3, "extent #">. N is at most 9 (a tensor's rank).
template <std::size_t Count, fixed_string Text>
inline constexpr auto repeated_name = [] {
  static_assert(Count < 10, "shardwise: repeated_name counts at most 9 values");
  char text[Text.size() + 3]{};
  text[0] = static_cast<char>('0' + Count);
  text[1] = '*';
  for (std::size_t i = 0; i < Text.size(); ++i) text[i + 2] = Text.chars[i];
  return fixed_string<Text.size() + 3>(text);
}();

/// Two lists of names as one ("a|b").
template <std::size_t N, std::size_t M>
constexpr fixed_string<N + M> join_names(const fixed_string<N>& first, const fixed_string<M>& second) {
  char text[N + M]{};
  for (std::size_t i = 0; i + 1 < N; ++i) text[i] = first.chars[i];
  text[N - 1] = '|';
  for (std::size_t i = 0; i < M; ++i) text[N + i] = second.chars[i];
  return fixed_string<N + M>(text);
}

}  // namespace shardwise::detail
