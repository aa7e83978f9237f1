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
  /// No problem recorded.
  LocalProblem() = default;
  /// Records `text` unless a problem is already recorded (the first one is reported).
  void set(std::string text) {
    if (text_.empty()) text_ = std::move(text);
  }
  /// True once a problem has been recorded.
  [[nodiscard]] bool found() const noexcept { return !text_.empty(); }
  /// The recorded problem; empty when none was.
  [[nodiscard]] const std::string& text() const noexcept { return text_; }

 private:
  std::string text_;
};

namespace detail {

/// The message of a failed agreement: the first rank's own problem, or the values that differ.
[[noreturn, gnu::cold, gnu::noinline]] SHARDWISE_DECL void throw_disagreement(std::string_view operation,
                                                                             std::string_view what, std::size_t index,
                                                                             std::int64_t low, std::int64_t high)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  fail({operation, ": ", what, " differ across ranks (every rank must pass the same); value ", index, " ranges from ",
        low, " to ", high});
}
#else
;
#endif

/// The first rank with a problem (`first`) tells everyone what it is, and every rank throws it:
/// the same text everywhere. (The communicators move numbers, so the characters travel as ints;
/// this is the error path.) Collective over `comm`.
[[noreturn, gnu::cold, gnu::noinline]] SHARDWISE_DECL void throw_first_problem(AnyCommunicator& comm, int first,
                                                                              const LocalProblem& problem,
                                                                              std::string_view operation)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  std::int64_t length = comm.rank() == first ? static_cast<std::int64_t>(problem.text().size()) : 0;
  comm.broadcast(std::span<std::int64_t>(&length, 1), first);
  std::vector<int> chars(static_cast<std::size_t>(length));
  if (comm.rank() == first) std::copy(problem.text().begin(), problem.text().end(), chars.begin());
  comm.broadcast(std::span<int>(chars), first);
  fail({operation, ": ", std::string(chars.begin(), chars.end()), " (on rank ", first, ")"});
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
/// ("the shapes of A and B").
[[gnu::noinline]] SHARDWISE_DECL void agree_on_all_ranks(AnyCommunicator& comm, std::span<const std::int64_t> values,
                                                       const LocalProblem& problem, std::string_view operation,
                                                       std::string_view what)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  if (check_level().load(std::memory_order_relaxed) == CheckLevel::local) {
    if (problem.found()) detail::fail({operation, ": ", problem.text()});
    return;
  }
  // One max-reduction finds both the largest and (negated) the smallest of each value, and the
  // lowest rank with a problem (as -rank; "none" is the lowest possible value).
  constexpr std::size_t most = 16;
  if (values.size() > most) throw std::logic_error("shardwise::agree_on_all_ranks: at most 16 values");
  std::int64_t all[2 * most + 1];
  const std::size_t n = values.size();
  for (std::size_t i = 0; i < n; ++i) {
    all[i] = values[i];
    all[n + i] = -values[i];
  }
  all[2 * n] = problem.found() ? -std::int64_t{comm.rank()} : std::numeric_limits<std::int64_t>::min();
  comm.all_reduce(std::span<std::int64_t>(all, 2 * n + 1), ReduceOp::max);
  if (all[2 * n] != std::numeric_limits<std::int64_t>::min())
    detail::throw_first_problem(comm, static_cast<int>(-all[2 * n]), problem, operation);
  for (std::size_t i = 0; i < n; ++i)
    if (all[i] != -all[n + i]) detail::throw_disagreement(operation, what, i, -all[n + i], all[i]);
}
#else
;
#endif

/// The same over a group that `group_of()` gives, looked up (and so perhaps created) only
/// when the check communicates; without a group (nullptr: a group of one) only a rank's own
/// problem can be reported.
template <typename GroupOf>
void agree_within(GroupOf&& group_of, std::span<const std::int64_t> values, const LocalProblem& problem,
                  std::string_view operation, std::string_view what) {
  AnyCommunicator* group = check_level().load(std::memory_order_relaxed) == CheckLevel::local ? nullptr : group_of();
  if (group != nullptr) return agree_on_all_ranks(*group, values, problem, operation, what);
  if (problem.found()) detail::fail({operation, ": ", problem.text()});
}

}  // namespace shardwise
