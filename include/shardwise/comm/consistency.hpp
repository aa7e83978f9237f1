// shardwise/comm/consistency.hpp: the same error on every rank, never a hang.
//
// Under MPI a mistake made on one rank only (a shape that differs, a block of the wrong
// size) would make that rank throw while the others wait in the next collective forever, or
// make the ranks exchange messages of different sizes. So every user-level operation first
// agrees, in one small collective over the ranks it involves, on the values that must be the
// same everywhere (global shapes) and on whether any rank found a problem with its own input
// (KaMPIng's is_same_on_all_ranks, folded into one all-reduce). Then every rank throws the
// same exception, with the same text, or none does.
//
// Levels (KaMPIng calls them assertion levels): CheckLevel::cross_rank, the default, pays that
// one all-reduce of a few integers per call (overhead_bench measures it); CheckLevel::local
// checks only what a rank can see alone, as a program known to be correct may choose for
// its tight loops. A problem a rank finds alone is still reported at that level, but only
// by that rank.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "shardwise/comm/any_communicator.hpp"
#include "shardwise/detail/failure.hpp"
#include "shardwise/detail/separate_compilation.hpp"

namespace shardwise {

/// How much the library checks before it communicates.
enum class CheckLevel {
  local,       ///< only what each rank can check alone
  cross_rank,  ///< also that the ranks agree (one small all-reduce per operation): the default
};

/// The level every operation checks at. Every rank must check at the same level, so set it
/// where no communication is going on (between barriers, or before a virtual cluster runs:
/// its rank threads share it).
inline std::atomic<CheckLevel>& check_level() {
  static std::atomic<CheckLevel> level{CheckLevel::cross_rank};
  return level;
}

/// The problem with this rank's own input that an operation found, or none. Built only on the
/// error path, so a call that goes well allocates nothing.
class LocalProblem {
 public:
  /// The exception a problem is reported with: a bad value (std::invalid_argument), or a
  /// misuse of an object (std::logic_error: an array moved from or released).
  enum class Kind { invalid_argument, logic_error };
  /// No problem recorded.
  LocalProblem() = default;
  /// Records `text` unless a problem is already recorded (the first one is reported).
  void set(std::string text, Kind kind = Kind::invalid_argument) {
    if (!text_.empty()) return;
    text_ = std::move(text);
    kind_ = kind;
  }
  /// The kind of the recorded problem.
  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  /// True once a problem has been recorded.
  [[nodiscard]] bool found() const noexcept { return !text_.empty(); }
  /// The recorded problem; empty when none was.
  [[nodiscard]] const std::string& text() const noexcept { return text_; }

 private:
  std::string text_;
  Kind kind_ = Kind::invalid_argument;
};

namespace detail {

/// The most values one agreement compares (an operation's extents, fingerprint, budget).
inline constexpr std::size_t most_agreed_values = 16;

/// Throws `problem` after "operation: ", as the exception its kind names.
[[noreturn, gnu::cold, gnu::noinline]] SHARDWISE_DECL void throw_problem(std::string_view operation,
                                                                        const std::string& text,
                                                                        LocalProblem::Kind kind)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  if (kind == LocalProblem::Kind::logic_error) fail<std::logic_error>({operation, ": ", text});
  fail({operation, ": ", text});
}
#else
;
#endif

/// The note of a disagreement on the shape of arrays that already exist: where it came from.
inline constexpr std::string_view constructed_locally =
    "an array's shape is set where each rank constructs it, with no communication; the first collective "
    "operation on it compares them";

/// The name of agreed value `index` from `names`: entries separated by '|', each "text" (one
/// value) or "N*text" (N values, '#' in the text standing for 0..N-1); "value <index>" past
/// the last entry. E.g. "rows of A|columns of A" or "3*extent # of A|2*extent # of B".
[[gnu::cold, gnu::noinline]] SHARDWISE_DECL std::string value_name(std::string_view names, std::size_t index)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  std::size_t first = 0;  // the index of the first value the current entry names
  while (!names.empty()) {
    const std::size_t bar = names.find('|');
    std::string_view entry = names.substr(0, bar);
    names = bar == std::string_view::npos ? std::string_view{} : names.substr(bar + 1);
    std::size_t count = 1;
    if (const std::size_t star = entry.find('*'); star != std::string_view::npos && star > 0 &&
        entry.substr(0, star).find_first_not_of("0123456789") == std::string_view::npos) {
      count = 0;
      for (char c : entry.substr(0, star)) count = 10 * count + static_cast<std::size_t>(c - '0');
      entry.remove_prefix(star + 1);
    }
    if (index < first + count) {
      std::string name(entry);
      if (const std::size_t hash = name.find('#'); hash != std::string::npos)
        name.replace(hash, 1, std::to_string(index - first));
      return name;
    }
    first += count;
  }
  return std::string("value ").append(std::to_string(index));
}
#else
;
#endif

/// "rank 3", "ranks 0–2", "ranks 0 and 2–3", "ranks 0–2 and 5 and 7–9 and 4 more": sorted ranks as
/// ranges, at most a few listed.
[[gnu::cold, gnu::noinline]] SHARDWISE_DECL std::string rank_ranges(std::vector<std::int64_t> ranks)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  std::sort(ranks.begin(), ranks.end());
  constexpr std::size_t most_ranges = 3;
  std::string text(ranks.size() == 1 ? "rank " : "ranks ");
  std::size_t i = 0, ranges = 0;
  while (i < ranks.size() && ranges < most_ranges) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (ranges > 0) text.append(" and ");  // not ", ": the values of one quantity are separated by commas
    text.append(std::to_string(ranks[i]));
    if (j > i) text.append("\u2013").append(std::to_string(ranks[j]));  // an en dash: 0–2
    i = j + 1;
    ++ranges;
  }
  if (i < ranks.size()) text.append(" and ").append(std::to_string(ranks.size() - i)).append(" more");
  return text;
}
#else
;
#endif

/// The message of a failed agreement, naming each value that differs, its values and the ranks
/// holding each: "rows of A: 3000 on ranks 0–2, 3001 on rank 3". Collective over `comm` (every
/// rank knows the agreement failed, so every rank comes here): one all-gather of every rank's
/// values, and of its world rank (`world_rank`, or its rank in `comm` when negative).
[[noreturn, gnu::cold, gnu::noinline]] SHARDWISE_DECL void throw_disagreement(
    AnyCommunicator& comm, std::span<const std::int64_t> values, int world_rank, std::string_view operation,
    std::string_view what, std::string_view names, std::string_view note)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  // Fixed-size records (rank, count, values padded): a rank that agrees on another number of
  // values (other operand types) still sends what the others expect.
  const std::size_t n = values.size(), stride = most_agreed_values + 2, size = static_cast<std::size_t>(comm.size());
  std::vector<std::int64_t> mine(stride), all(stride * size);
  mine[0] = world_rank >= 0 ? world_rank : comm.rank();
  mine[1] = static_cast<std::int64_t>(n);
  std::copy(values.begin(), values.end(), mine.begin() + 2);
  comm.all_gather(std::span<const std::int64_t>(mine), std::span<std::int64_t>(all));
  std::string text(operation);
  text.append(": ").append(what).append(" differ across ranks (every rank must pass the same)");
  const char* separator = ": ";
  std::vector<std::int64_t> counts;  // the distinct numbers of values, in the order of the first rank holding each
  for (std::size_t r = 0; r < size; ++r)
    if (std::find(counts.begin(), counts.end(), all[r * stride + 1]) == counts.end()) counts.push_back(all[r * stride + 1]);
  if (counts.size() > 1) {
    text.append(": the operands have other types or dimensions on some ranks (the call agrees on ");
    for (std::size_t v = 0; v < counts.size(); ++v) {
      std::vector<std::int64_t> holders;
      for (std::size_t r = 0; r < size; ++r)
        if (all[r * stride + 1] == counts[v]) holders.push_back(all[r * stride]);
      text.append(v == 0 ? "" : ", ").append(std::to_string(counts[v])).append(v == 0 ? " values on " : " on ");
      text.append(rank_ranges(std::move(holders)));
    }
    throw std::invalid_argument(text.append(")"));
  }
  for (std::size_t i = 0; i < n; ++i) {
    // The distinct values of value i, in the order of the first rank holding each.
    std::vector<std::int64_t> distinct;
    for (std::size_t r = 0; r < size; ++r)
      if (std::find(distinct.begin(), distinct.end(), all[r * stride + 2 + i]) == distinct.end())
        distinct.push_back(all[r * stride + 2 + i]);
    if (distinct.size() < 2) continue;
    text.append(separator).append(value_name(names, i)).append(": ");
    separator = "; ";
    constexpr std::size_t most_values = 4;
    for (std::size_t v = 0; v < distinct.size() && v < most_values; ++v) {
      std::vector<std::int64_t> holders;
      for (std::size_t r = 0; r < size; ++r)
        if (all[r * stride + 2 + i] == distinct[v]) holders.push_back(all[r * stride]);
      text.append(v == 0 ? "" : ", ").append(std::to_string(distinct[v])).append(" on ");
      text.append(rank_ranges(std::move(holders)));
    }
    if (distinct.size() > most_values)
      text.append(" and ").append(std::to_string(distinct.size() - most_values)).append(" other values");
  }
  if (!note.empty()) text.append(" (").append(note).append(")");
  throw std::invalid_argument(text);
}
#else
;
#endif

/// The first rank with a problem (`first`, its rank in `comm`) tells everyone what it is:
/// returns its text followed by " (on rank R)", R that rank's world rank (`world_rank` on each
/// rank, or its rank in `comm` when negative), the same on every rank, and sets `kind` to its
/// kind. (The communicators move numbers, so the characters travel as ints; this is the error
/// path.) Collective over `comm`.
[[gnu::cold, gnu::noinline]] SHARDWISE_DECL std::string first_problem_text(AnyCommunicator& comm, int first,
                                                                          const LocalProblem& problem, int world_rank,
                                                                          LocalProblem::Kind& kind)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  const bool me = comm.rank() == first;
  std::int64_t header[3] = {me ? static_cast<std::int64_t>(problem.text().size()) : 0,
                            me ? (world_rank >= 0 ? world_rank : first) : 0,
                            me ? static_cast<std::int64_t>(problem.kind()) : 0};
  comm.broadcast(std::span<std::int64_t>(header, 3), first);
  kind = static_cast<LocalProblem::Kind>(header[2]);
  std::vector<int> chars(static_cast<std::size_t>(header[0]));
  if (me) std::copy(problem.text().begin(), problem.text().end(), chars.begin());
  comm.broadcast(std::span<int>(chars), first);
  return message({std::string(chars.begin(), chars.end()), " (on rank ", static_cast<long long>(header[1]), ")"});
}
#else
;
#endif

/// The same, thrown after "operation: " on every rank as the exception its kind names.
[[noreturn, gnu::cold, gnu::noinline]] SHARDWISE_DECL void throw_first_problem(AnyCommunicator& comm, int first,
                                                                              const LocalProblem& problem,
                                                                              std::string_view operation,
                                                                              int world_rank)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  LocalProblem::Kind kind{};
  const std::string text = first_problem_text(comm, first, problem, world_rank, kind);
  throw_problem(operation, text, kind);
}
#else
;
#endif

}  // namespace detail

/// Collective over `comm`: every rank passes the same number of `values`, which must be equal
/// on all ranks, and the problem it found with its own input, if any. When the ranks disagree
/// or one found a problem, every rank throws the same std::invalid_argument; otherwise none
/// does. At CheckLevel::local no communication happens and only a rank's own problem is
/// thrown, on that rank. `operation` names the call ("shardwise::matmul"), `what` the values
/// together ("the shapes of A and B"), `names` each of them for the message of a disagreement
/// (entries separated by '|': "rows of A|columns of A", or "2*extent # of A" for two values
/// numbered from 0; see detail::value_name), `note` a hint added to that message, and
/// `world_rank` this rank's rank in the world when `comm` is a smaller group (messages then
/// name world ranks).
[[gnu::noinline]] SHARDWISE_DECL void agree_on_all_ranks(AnyCommunicator& comm, std::span<const std::int64_t> values,
                                                       const LocalProblem& problem, std::string_view operation,
                                                       std::string_view what, std::string_view names = {},
                                                       std::string_view note = {}, int world_rank = -1)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  if (check_level().load(std::memory_order_relaxed) == CheckLevel::local) {
    if (problem.found()) detail::throw_problem(operation, problem.text(), problem.kind());
    return;
  }
  // One max-reduction finds both the largest and (negated) the smallest of each value, and the
  // lowest rank with a problem (as -rank; "none" is the lowest possible value). Its size is
  // fixed, the number of values one of them: a rank whose operands have other types or
  // dimensions (so another number of values) is a disagreement, not a mismatched collective.
  constexpr std::size_t most = detail::most_agreed_values, width = most + 1;
  if (values.size() > most) throw std::logic_error("shardwise::agree_on_all_ranks: at most 16 values");
  std::int64_t all[2 * width + 1] = {};
  const std::size_t n = values.size();
  for (std::size_t i = 0; i < n; ++i) {
    all[i] = values[i];
    all[width + i] = -values[i];
  }
  all[most] = static_cast<std::int64_t>(n);
  all[width + most] = -static_cast<std::int64_t>(n);
  all[2 * width] = problem.found() ? -std::int64_t{comm.rank()} : std::numeric_limits<std::int64_t>::min();
  comm.all_reduce(std::span<std::int64_t>(all, 2 * width + 1), ReduceOp::max);
  if (all[2 * width] != std::numeric_limits<std::int64_t>::min())
    detail::throw_first_problem(comm, static_cast<int>(-all[2 * width]), problem, operation, world_rank);
  for (std::size_t i = 0; i < width; ++i)
    if (all[i] != -all[width + i]) detail::throw_disagreement(comm, values, world_rank, operation, what, names, note);
}
#else
;
#endif

/// What the agreement of an operation needs of one of its operands, whatever its type.
struct OperandFacts {
  const char* role = "A";                ///< what the operation calls it: "A", "x", "C"
  const char* noun = "matrix";           ///< "matrix", "tensor", "vector"
  const void* groups = nullptr;          ///< the group state it is bound to (null: none)
  AnyCommunicator* world = nullptr;      ///< its mesh's world (null: none)
  bool usable = true;                    ///< false once moved from or released
  bool released = false;                 ///< release() moved its block out
};

/// The one agreement of an operation on `operands`: what each rank finds wrong with its own
/// operands (one moved from or released, operands bound to different ProcessGroupMesh objects)
/// joins `problem`, and `values` (extents, a fingerprint of the operation's types, ...) must be
/// equal on every rank; then every rank throws the same exception, or none does (see
/// agree_on_all_ranks; collective over the first operand's world). Only where no operand has a
/// world at all (nothing to agree over) does a rank throw alone.
[[gnu::noinline]] SHARDWISE_DECL void agree_on_operands(std::span<const OperandFacts> operands,
                                                       std::span<const std::int64_t> values, LocalProblem problem,
                                                       std::string_view operation, std::string_view what,
                                                       std::string_view names, std::string_view note = {})
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  AnyCommunicator* world = nullptr;
  const void* groups = nullptr;
  for (const OperandFacts& operand : operands) {
    if (!operand.usable)
      problem.set(detail::unusable_text(operand.role, operand.noun, operand.released), LocalProblem::Kind::logic_error);
    if (world == nullptr && operand.world != nullptr) {
      world = operand.world;
      groups = operand.groups;
    }
  }
  for (const OperandFacts& operand : operands)
    if (operand.groups != nullptr && operand.groups != groups)
      problem.set(operands.size() == 2
                      ? "the operands are bound to different ProcessGroupMesh objects; build both from the same one"
                      : "the operands are bound to different ProcessGroupMesh objects; build all from the same one");
  if (world == nullptr) {
    if (problem.found()) detail::throw_problem(operation, problem.text(), problem.kind());
    throw std::logic_error(std::string(operation).append(": no operand is bound to a ProcessGroupMesh"));
  }
  agree_on_all_ranks(*world, values, problem, operation, what, names, note);
}
#else
;
#endif

/// The same over a group that `group_of()` gives, looked up (and so perhaps created) only
/// when the check communicates; without a group (nullptr: a group of one) only a rank's own
/// problem can be reported.
template <typename GroupOf>
void agree_within(GroupOf&& group_of, std::span<const std::int64_t> values, const LocalProblem& problem,
                  std::string_view operation, std::string_view what, std::string_view names = {},
                  std::string_view note = {}, int world_rank = -1) {
  AnyCommunicator* group = check_level().load(std::memory_order_relaxed) == CheckLevel::local ? nullptr : group_of();
  if (group != nullptr) return agree_on_all_ranks(*group, values, problem, operation, what, names, note, world_rank);
  if (problem.found()) detail::throw_problem(operation, problem.text(), problem.kind());
}

}  // namespace shardwise
