// shardwise/scalapack/process_assignment.hpp: which process plays which rank of a plan, so that
// the most data stays where it is (COSTA's relabeling): the assignment of largest total weight,
// by the Hungarian algorithm. Pure C++: no MPI, no Eigen.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace shardwise::scalapack::detail {

/// The permutation `plays` (plays[i]: the column given to row i) of largest total
/// weight[i * n + j] over an n x n matrix, in O(n^3): the Hungarian algorithm on the costs
/// (largest weight - weight), rows added one by one with potentials (the e-maxx form). Every
/// process that computes it from the same weights gets the same permutation.
inline std::vector<int> heaviest_assignment(const std::vector<std::int64_t>& weight, int n) {
  std::vector<int> plays(static_cast<std::size_t>(n > 0 ? n : 0));
  if (n <= 0) return plays;
  std::int64_t heaviest = 0;
  for (const std::int64_t w : weight) heaviest = w > heaviest ? w : heaviest;
  const auto cost = [&](int i, int j) {  // 1-based, as the algorithm's arrays
    return heaviest - weight[static_cast<std::size_t>(i - 1) * static_cast<std::size_t>(n) + static_cast<std::size_t>(j - 1)];
  };
  constexpr std::int64_t infinite = std::numeric_limits<std::int64_t>::max() / 4;
  const auto size = static_cast<std::size_t>(n) + 1;
  std::vector<std::int64_t> u(size, 0), v(size, 0), least(size);
  std::vector<int> row_of(size, 0), previous(size, 0);  // row_of[j]: the row column j is given to
  std::vector<char> used(size);
  for (int i = 1; i <= n; ++i) {
    row_of[0] = i;
    int column = 0;
    std::fill(least.begin(), least.end(), infinite);
    std::fill(used.begin(), used.end(), 0);
    do {
      used[static_cast<std::size_t>(column)] = 1;
      const int row = row_of[static_cast<std::size_t>(column)];
      std::int64_t delta = infinite;
      int next = 0;
      for (int j = 1; j <= n; ++j) {
        const auto js = static_cast<std::size_t>(j);
        if (used[js]) continue;
        const std::int64_t reduced = cost(row, j) - u[static_cast<std::size_t>(row)] - v[js];
        if (reduced < least[js]) least[js] = reduced, previous[js] = column;
        if (least[js] < delta) delta = least[js], next = j;
      }
      for (int j = 0; j <= n; ++j) {
        const auto js = static_cast<std::size_t>(j);
        if (used[js]) u[static_cast<std::size_t>(row_of[js])] += delta, v[js] -= delta;
        else least[js] -= delta;
      }
      column = next;
    } while (row_of[static_cast<std::size_t>(column)] != 0);
    do {
      const int before = previous[static_cast<std::size_t>(column)];
      row_of[static_cast<std::size_t>(column)] = row_of[static_cast<std::size_t>(before)];
      column = before;
    } while (column != 0);
  }
  for (int j = 1; j <= n; ++j) plays[static_cast<std::size_t>(row_of[static_cast<std::size_t>(j)] - 1)] = j - 1;
  return plays;
}

}  // namespace shardwise::scalapack::detail
