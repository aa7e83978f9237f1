// shardwise/plan/evaluated_ranks.hpp: the ranks whose costs the planners evaluate. On a mesh of
// at most 64 ranks, every rank; beyond, the ranks whose coordinates are 0, 1, the middle or one
// of the last two on every axis (where extents divide evenly, every rank sends and holds as much
// as one of those). Used by the matmul planner (matmul_evaluation.hpp, matmul_search.hpp) and the
// reshard planner (cheapest_reshard, reshard.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>

#include "shardwise/detail/static_vector.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

namespace detail {

/// f(geometry), or f's verdict when it returns whether to go on (false: stop).
template <typename F>
constexpr bool visit_evaluated_rank(F& f, const block_geometry& geo) {
  if constexpr (std::is_same_v<decltype(f(geo)), bool>) return f(geo);
  else {
    f(geo);
    return true;
  }
}

/// Calls f(geometry) for the ranks the planner evaluates (see the top of this file), from the
/// last: where blocks differ, the last ones are the largest (partition.hpp), so a walk that
/// looks for the busiest rank meets it early. An f that returns bool stops the walk by
/// returning false.
template <typename F>
constexpr void for_each_evaluated_rank(const block_geometry& mesh, F&& f) {
  int size = 1;
  for (int a = 0; a < mesh.ndim; ++a) size *= mesh.extents[static_cast<std::size_t>(a)];
  std::array<static_vector<int, 5>, max_mesh_axes> picks{};
  if (size > 64)
    for (int a = 0; a < mesh.ndim; ++a) {
      const int e = mesh.extents[static_cast<std::size_t>(a)];
      auto& p = picks[static_cast<std::size_t>(a)];
      for (int i : {e - 1, e - 2, e / 2, 1, 0})  // decreasing for e >= 4; repeats skipped
        if (i >= 0 && i < e && !(p.size() > 0 && p.back() <= i)) p.push_back(i);
    }
  block_geometry geo = mesh;
  if (size <= 64) {
    for (int r = size; r-- > 0;) {
      int rest = r;
      for (int a = mesh.ndim; a-- > 0;) {
        geo.coordinate[static_cast<std::size_t>(a)] = rest % mesh.extents[static_cast<std::size_t>(a)];
        rest /= mesh.extents[static_cast<std::size_t>(a)];
      }
      if (!visit_evaluated_rank(f, geo)) return;
    }
    return;
  }
  std::array<std::size_t, max_mesh_axes> index{};
  for (;;) {
    for (int a = 0; a < mesh.ndim; ++a)
      geo.coordinate[static_cast<std::size_t>(a)] = picks[static_cast<std::size_t>(a)][index[static_cast<std::size_t>(a)]];
    if (!visit_evaluated_rank(f, geo)) return;
    int a = mesh.ndim - 1;
    for (; a >= 0; --a) {
      if (++index[static_cast<std::size_t>(a)] < picks[static_cast<std::size_t>(a)].size()) break;
      index[static_cast<std::size_t>(a)] = 0;
    }
    if (a < 0) return;
  }
}

}  // namespace detail

}  // namespace shardwise
