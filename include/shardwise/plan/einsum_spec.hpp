// shardwise/plan/einsum_spec.hpp: an einsum's index letters, read at compile time.
//
//   "bsm,mh->bsh"    A[b, s, m] * B[m, h] summed over m = C[b, s, h]
//
// Each letter names one index and is one of (contraction.hpp):
//   batch        in A, B and C   ("bmk,bkn->bmn": b)
//   free         in one input and in C
//   contracted   in A and B, not in C (summed)
// A letter that is in one input only and not in C would be a sum within one operand, a
// letter of C in neither input has no source, and a letter twice in one operand is a
// diagonal: none of them is a contraction, and each is an error the plan reports with the
// letter beside its message. Spaces are allowed and ignored. Pure compile-time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string_view>

#include "shardwise/detail/diagnostic_note.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/plan/contraction.hpp"

namespace shardwise {

/// One index letter and its extent, for IndexExtents.
struct IndexExtent {
  char index = 0;           ///< The letter, a-z or A-Z.
  std::int64_t extent = 0;  ///< Its global extent.
};

/// The extents of an einsum's index letters: IndexExtents{{'b', 8}, {'s', 512}, {'m', 1024}}.
/// The cost models of einsum plans take one (the tensors' extents follow from it).
class IndexExtents {
 public:
  /// No extent set: every letter has extent 0.
  constexpr IndexExtents() = default;
  /// The listed letters with their extents (a letter listed twice keeps the last).
  constexpr IndexExtents(std::initializer_list<IndexExtent> list) {
    for (const IndexExtent& e : list) set(e.index, e.extent);
  }
  /// Sets the extent of `index` (a letter a-z or A-Z).
  constexpr void set(char index, std::int64_t extent) { extents_[slot(index)] = extent; }
  /// The extent of `index` (0 when never set).
  [[nodiscard]] constexpr std::int64_t operator[](char index) const { return extents_[slot(index)]; }

 private:
  static constexpr std::size_t slot(char c) {
    if (c >= 'a' && c <= 'z') return static_cast<std::size_t>(c - 'a');
    if (c >= 'A' && c <= 'Z') return static_cast<std::size_t>(26 + (c - 'A'));
    throw std::invalid_argument("shardwise::IndexExtents: an index is a letter a-z or A-Z");
  }
  std::array<std::int64_t, 52> extents_{};
};

namespace detail {

/// What is wrong with an einsum spec.
enum class EinsumSpecError {
  none,
  malformed,                    ///< not "<letters>,<letters>-><letters>"
  too_many_indices,             ///< an operand with more than max_tensor_rank letters
  repeated_index,               ///< a letter twice in one operand
  output_index_not_in_inputs,   ///< a letter of C in neither A nor B
  index_summed_within_operand,  ///< a letter in one input only, not in C
};

/// A parsed spec: the letters of A, B and C (as contraction.hpp reads them), or the error and
/// a note naming the letter.
struct einsum_spec {
  contraction_indices indices{};
  EinsumSpecError error = EinsumSpecError::none;
  diagnostic_note note{};
};

constexpr bool is_index_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/// Where `what` first occurs in `text` at or after `from`, or npos. Not string_view::find: its
/// null test on a pointer into the spec (a template parameter object) is not a constant
/// expression to g++ 12 under -fsanitize=undefined.
constexpr std::size_t find_in(std::string_view text, std::string_view what, std::size_t from = 0) {
  for (std::size_t i = from; i + what.size() <= text.size(); ++i) {
    std::size_t j = 0;
    while (j < what.size() && text[i + j] == what[j]) ++j;
    if (j == what.size()) return i;
  }
  return std::string_view::npos;
}

/// Reads "bsm,mh->bsh" (see the top of this file).
constexpr einsum_spec parse_einsum_spec(std::string_view spec) {
  einsum_spec result;
  result.indices.names.operands = {"A", "B", "C"};
  auto fail = [&](EinsumSpecError e, diagnostic_note note) {
    result.error = e;
    result.note = note;
    return result;
  };
  const std::size_t comma = find_in(spec, ","), arrow = find_in(spec, "->");
  if (comma == std::string_view::npos || arrow == std::string_view::npos || comma > arrow ||
      find_in(spec, ",", comma + 1) != std::string_view::npos || find_in(spec, "->", arrow + 2) != std::string_view::npos)
    return fail(EinsumSpecError::malformed, diagnostic_note("want \"ab,bc->ac\""));
  const std::string_view parts[3] = {spec.substr(0, comma), spec.substr(comma + 1, arrow - comma - 1),
                                     spec.substr(arrow + 2)};
  constexpr char operand_names[3] = {'A', 'B', 'C'};
  for (std::size_t op = 0; op < 3; ++op) {
    int n = 0;
    for (char c : parts[op]) {
      if (c == ' ') continue;
      if (!is_index_letter(c))
        return fail(EinsumSpecError::malformed, diagnostic_note("'").add(c).add("' is not an index letter"));
      if (n == static_cast<int>(max_tensor_rank))
        return fail(EinsumSpecError::too_many_indices, diagnostic_note("more than 6 indices in ").add(operand_names[op]));
      for (int d = 0; d < n; ++d)
        if (result.indices.names.dims[op][static_cast<std::size_t>(d)] == c)
          return fail(EinsumSpecError::repeated_index,
                      diagnostic_note("\"").add(c).add("\" twice in ").add(operand_names[op]));
      result.indices.names.dims[op][static_cast<std::size_t>(n++)] = c;
    }
    result.indices.ranks[op] = n;
  }
  const contraction_indices& ix = result.indices;
  for (int d = 0; d < ix.ranks[2]; ++d) {
    const char l = ix.letter(Operand::C, d);
    if (ix.dim_of(Operand::A, l) < 0 && ix.dim_of(Operand::B, l) < 0)
      return fail(EinsumSpecError::output_index_not_in_inputs,
                  diagnostic_note("\"").add(l).add("\" of C in neither A nor B"));
  }
  for (Operand op : {Operand::A, Operand::B}) {
    const Operand other = op == Operand::A ? Operand::B : Operand::A;
    for (int d = 0; d < ix.ranks[index_of(op)]; ++d) {
      const char l = ix.letter(op, d);
      if (ix.dim_of(other, l) < 0 && ix.dim_of(Operand::C, l) < 0)
        return fail(EinsumSpecError::index_summed_within_operand,
                    diagnostic_note("\"").add(l).add("\" only in ").add(operand_names[index_of(op)]));
    }
  }
  return result;
}

/// The global extents of A, B and C for index extents `e`.
constexpr operand_extents operand_extents_of(const contraction_indices& ix, const IndexExtents& e) {
  operand_extents result{};
  for (std::size_t op = 0; op < 3; ++op)
    for (int d = 0; d < ix.ranks[op]; ++d)
      result[op][static_cast<std::size_t>(d)] = e[ix.names.dims[op][static_cast<std::size_t>(d)]];
  return result;
}

}  // namespace detail
}  // namespace shardwise
