// shardwise/detail/diagnostic_note.hpp: a short computed text that a compile error shows.
//
// A static_assert message must be a string literal, so what a plan computes (an index letter,
// an axis name) cannot go into it. It can go into a template argument of the class whose
// static_assert fails: g++ and clang++ print that argument, text included, right beside the
// message. clang++ cuts a text after about 34 characters, so notes stay shorter than that,
// and prints it as a string only from an exact_note (below).
#pragma once

#include <cstddef>
#include <string_view>

namespace shardwise::detail {

/// A short text usable as a template argument (a structural type).
struct diagnostic_note {
  char text[40]{};

  constexpr diagnostic_note() = default;
  constexpr explicit diagnostic_note(std::string_view s) { add(s); }

  /// Appends `s`, cut at the capacity (one character stays a terminating zero).
  constexpr diagnostic_note& add(std::string_view s) {
    std::size_t n = 0;
    while (n < sizeof(text) && text[n] != '\0') ++n;
    for (char c : s)
      if (n + 1 < sizeof(text)) text[n++] = c;
    return *this;
  }
  constexpr diagnostic_note& add(char c) { return add(std::string_view(&c, 1)); }
  constexpr diagnostic_note& add_number(long long value) {
    if (value < 0) {
      add('-');
      value = -value;
    }
    char digits[20]{};
    int count = 0;
    do {
      digits[count++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value > 0);
    while (count > 0) add(digits[--count]);
    return *this;
  }
  [[nodiscard]] constexpr std::string_view view() const {
    std::size_t n = 0;
    while (n < sizeof(text) && text[n] != '\0') ++n;
    return {text, n};
  }
};

/// A note of exactly N - 1 characters and its terminating zero, every character written: clang
/// prints such an array as a string (with zeros after the text it would print numbers).
template <std::size_t N>
struct exact_note {
  char text[N];
};
template <std::size_t N>
constexpr exact_note<N> exact_note_of(const diagnostic_note& note) {
  exact_note<N> result{};
  for (std::size_t i = 0; i < N; ++i) result.text[i] = i + 1 < N ? note.text[i] : '\0';
  return result;
}

/// Never true: the condition of a static_assert that shows `Notes` (exact_notes) beside its
/// message.
template <auto... Notes>
inline constexpr bool named_beside = false;

}  // namespace shardwise::detail
