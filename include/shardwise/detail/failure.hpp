// shardwise/detail/failure.hpp: throwing an error whose message is built from pieces.
//
//   detail::fail({"shardwise::matmul: C is ", rows, " x ", cols, " but A * B is ", m, " x ", n});
//
// A message is built only on the error path, so the code that builds it should cost the
// caller nothing but a call: the pieces (texts and integers) go in a small array, and one
// out-of-line, cold function turns them into the string and throws. Every throw site of every
// operation shares that one function, instead of inlining string concatenations (the bulk of
// the code a translation unit would otherwise compile for its error paths).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

#include "shardwise/detail/separate_compilation.hpp"

namespace shardwise::detail {

/// One piece of a message: a text or an integer.
class message_piece {
 public:
  message_piece(const char* text) : text_(text), is_number_(false) {}              // NOLINT: implicit on purpose
  message_piece(std::string_view text) : text_(text), is_number_(false) {}         // NOLINT
  message_piece(const std::string& text) : text_(text), is_number_(false) {}       // NOLINT
  message_piece(long long number) : number_(number), is_number_(true) {}           // NOLINT
  message_piece(long number) : number_(number), is_number_(true) {}                // NOLINT
  message_piece(int number) : number_(number), is_number_(true) {}                 // NOLINT
  message_piece(unsigned long number) : number_(static_cast<long long>(number)), is_number_(true) {}  // NOLINT

  void append_to(std::string& out) const {
    if (is_number_) out += std::to_string(number_);
    else out.append(text_);
  }

 private:
  std::string_view text_{};
  long long number_ = 0;
  bool is_number_;
};

/// The pieces joined.
[[gnu::noinline]] SHARDWISE_DECL std::string message(std::initializer_list<message_piece> pieces)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  std::string text;
  for (const message_piece& p : pieces) p.append_to(text);
  return text;
}
#else
;
#endif

/// Throws E (std::invalid_argument by default) with the pieces joined as its message.
template <typename E = std::invalid_argument>
[[noreturn, gnu::cold, gnu::noinline]] void fail(std::initializer_list<message_piece> pieces) {
  throw E(message(pieces));
}

/// What is wrong with an array that was moved from or released: `kind` is "matrix" or
/// "tensor", `role` what the operation calls it ("A"), without the operation's name.
[[gnu::cold, gnu::noinline]] SHARDWISE_DECL std::string unusable_text(const char* role, const char* kind, bool released)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  if (released)
    return message({role, " was released (release() moved its block out); build a new ", kind,
                    " from the block with from_local, or assign one to it"});
  return message({role, " was moved from (it no longer holds a block); use the ", kind, " it was moved into"});
}
#else
;
#endif

/// The std::logic_error for an array that was moved from or released, after "operation: ".
[[noreturn, gnu::cold, gnu::noinline]] SHARDWISE_DECL void throw_unusable(const char* operation, const char* role,
                                                                         const char* kind, bool released)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  fail<std::logic_error>({operation, ": ", unusable_text(role, kind, released)});
}
#else
;
#endif

}  // namespace shardwise::detail
