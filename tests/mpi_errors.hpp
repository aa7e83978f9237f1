// "The same error on every rank, without a hang", as a GoogleTest check under mpiexec.
//
//   sw::testing::expect_same_error_on_every_rank<std::invalid_argument>(
//       MPI_COMM_WORLD, [&] { sw::ProcessGroupMesh<TooBig> groups(MPI_COMM_WORLD); }, "the mesh has 5 ranks");
//
// Every rank runs the callable and catches what it throws; then, collectively and only after
// every rank has returned from its call, the ranks exchange what happened (whether each threw,
// an exception of the expected type or not, and its what() text, as lengths then bytes), and
// every rank reaches the same verdict: every rank threw the expected type, all the texts are
// identical, and they contain the expected text. A rank that hangs in the callable (because
// another threw before a collective) hangs the test, which the test's timeout turns into a
// failure. The verdict is a pure function (same_error_verdict) so that it can be tested on
// made-up outcomes.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstddef>
#include <exception>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardwise::testing {

/// What one rank's call did.
struct RankOutcome {
  enum Kind : int { returned = 0, threw_expected = 1, threw_other = 2 };
  Kind kind = returned;
  std::string what;  // empty when it returned

  friend bool operator==(const RankOutcome&, const RankOutcome&) = default;
};

/// Runs f and records what it threw; an exception of type E is the expected kind.
template <typename E = std::exception, typename F>
RankOutcome run_and_catch(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return {RankOutcome::threw_expected, e.what()};
  } catch (const std::exception& e) {
    return {RankOutcome::threw_other, e.what()};
  } catch (...) {
    return {RankOutcome::threw_other, "(an exception not derived from std::exception)"};
  }
  return {};
}

/// Every rank's outcome, on every rank (collective over comm).
inline std::vector<RankOutcome> gather_outcomes(MPI_Comm comm, const RankOutcome& mine) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  const int header[2] = {static_cast<int>(mine.kind), static_cast<int>(mine.what.size())};
  std::vector<int> headers(2 * static_cast<std::size_t>(size));
  MPI_Allgather(header, 2, MPI_INT, headers.data(), 2, MPI_INT, comm);
  std::vector<int> lengths(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  int total = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    lengths[r] = headers[2 * r + 1];
    offsets[r] = total;
    total += lengths[r];
  }
  std::string bytes(static_cast<std::size_t>(total), '\0');
  MPI_Allgatherv(mine.what.data(), header[1], MPI_CHAR, bytes.data(), lengths.data(), offsets.data(), MPI_CHAR,
                 comm);
  std::vector<RankOutcome> all(static_cast<std::size_t>(size));
  for (std::size_t r = 0; r < all.size(); ++r)
    all[r] = {static_cast<RankOutcome::Kind>(headers[2 * r]),
              bytes.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(lengths[r]))};
  return all;
}

/// Empty when every rank threw the expected type with one and the same text containing
/// `expected`; otherwise what is wrong, then each rank's outcome.
inline std::string same_error_verdict(std::span<const RankOutcome> outcomes, std::string_view expected) {
  std::vector<std::string> problems;
  bool all_threw = true, all_expected_type = true, all_same = true;
  for (const RankOutcome& outcome : outcomes) {
    all_threw = all_threw && outcome.kind != RankOutcome::returned;
    all_expected_type = all_expected_type && outcome.kind == RankOutcome::threw_expected;
    all_same = all_same && outcome.what == outcomes.front().what;
  }
  if (outcomes.empty()) return "no rank reported";
  if (!all_threw) problems.emplace_back("not every rank threw");
  else if (!all_expected_type) problems.emplace_back("not every rank threw the expected exception type");
  if (all_threw && !all_same) problems.emplace_back("the ranks' texts differ");
  bool contains = true;
  for (const RankOutcome& outcome : outcomes)
    contains = contains && outcome.what.find(expected) != std::string::npos;
  if (all_threw && !contains)
    problems.push_back("not every rank's text contains \"" + std::string(expected) + "\"");
  if (problems.empty()) return "";
  std::string text = "not the same error on every rank: ";
  for (std::size_t i = 0; i < problems.size(); ++i) text += (i == 0 ? "" : "; ") + problems[i];
  for (std::size_t r = 0; r < outcomes.size(); ++r) {
    text += "\n  rank " + std::to_string(r) + ": ";
    switch (outcomes[r].kind) {
      case RankOutcome::returned: text += "returned without throwing"; break;
      case RankOutcome::threw_expected: text += "threw \"" + outcomes[r].what + "\""; break;
      case RankOutcome::threw_other: text += "threw another type: \"" + outcomes[r].what + "\""; break;
    }
  }
  return text;
}

/// The collective check, as a value: passes or fails the same way on every rank.
template <typename E = std::exception, typename F>
::testing::AssertionResult same_error_on_every_rank(MPI_Comm comm, F&& f, std::string_view expected) {
  const RankOutcome mine = run_and_catch<E>(std::forward<F>(f));
  const std::vector<RankOutcome> all = gather_outcomes(comm, mine);
  const std::string verdict = same_error_verdict(all, expected);
  if (verdict.empty()) return ::testing::AssertionSuccess() << "every rank threw \"" << mine.what << "\"";
  return ::testing::AssertionFailure() << verdict;
}

/// The collective check as a GoogleTest expectation at the caller's line. Returns whether it held.
template <typename E = std::exception, typename F>
bool expect_same_error_on_every_rank(MPI_Comm comm, F&& f, std::string_view expected,
                                     std::source_location where = std::source_location::current()) {
  const ::testing::AssertionResult result = same_error_on_every_rank<E>(comm, std::forward<F>(f), expected);
  if (!result) ADD_FAILURE_AT(where.file_name(), static_cast<int>(where.line())) << result.message();
  return static_cast<bool>(result);
}

}  // namespace shardwise::testing
