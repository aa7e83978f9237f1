// Block-cyclic arrays on the virtual cluster: tests/scalapack/block_cyclic_cases.hpp on every rows x
// columns mesh of 1 to 6 ranks (1 x P, P x 1 and the 2-D ones), each rank's failures reported.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "block_cyclic_cases.hpp"
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
