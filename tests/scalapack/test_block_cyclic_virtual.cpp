// Block-cyclic arrays on the virtual cluster: tests/scalapack/block_cyclic_cases.hpp on every rows x
// columns mesh of 1 to 6 ranks (1 x P, P x 1 and the 2-D ones), each rank's failures reported.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "block_cyclic_cases.hpp"
#include "shardwise/scalapack/process_assignment.hpp"
#include "virtual_counted.hpp"

namespace sw = shardwise;
using namespace sw::testing;

TEST(BlockCyclicVirtual, LayoutsReshardsAndProducts) {
  for (const auto& [rows, cols] : std::vector<std::pair<int, int>>{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {1, 3}, {3, 1}, {2, 3}}) {
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
    const auto failures = run_counted_on_cluster(RowsCols{rows, cols}, [](auto& groups, auto& counters, auto& fail) {
      run_block_cyclic_cases(groups, counters, fail);
    });
    for (std::size_t r = 0; r < failures.size(); ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
  }
}

// The drop-in's relabeling (scalapack/process_assignment.hpp): the heaviest assignment is the
// heaviest of all n! permutations, on random weight matrices of 1 to 6 processes.
TEST(ProcessAssignment, HeaviestOfAllPermutations) {
  std::mt19937_64 rng(7);
  for (int n = 1; n <= 6; ++n)
    for (int draw = 0; draw < 40; ++draw) {
      std::vector<std::int64_t> weight(static_cast<std::size_t>(n * n));
      for (auto& w : weight) w = static_cast<std::int64_t>(rng() % (draw % 2 == 0 ? 4 : 1000));  // ties, and none
      const std::vector<int> plays = sw::scalapack::detail::heaviest_assignment(weight, n);
      auto total = [&](const std::vector<int>& p) {
        std::int64_t sum = 0;
        for (int i = 0; i < n; ++i) sum += weight[static_cast<std::size_t>(i * n + p[static_cast<std::size_t>(i)])];
        return sum;
      };
      std::vector<int> sorted = plays;
      std::sort(sorted.begin(), sorted.end());
      for (int i = 0; i < n; ++i) ASSERT_EQ(sorted[static_cast<std::size_t>(i)], i) << "not a permutation, n = " << n;
      std::vector<int> p(static_cast<std::size_t>(n));
      std::iota(p.begin(), p.end(), 0);
      std::int64_t heaviest = 0;
      do heaviest = std::max(heaviest, total(p));
      while (std::next_permutation(p.begin(), p.end()));
      EXPECT_EQ(total(plays), heaviest) << "n = " << n << ", draw " << draw;
    }
}
