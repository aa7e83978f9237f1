// shardwise/plan/cost.hpp: what a schedule sends and holds, derived from its steps.
//
// Traffic is counted as traffic.hpp's ring convention has it (what CountingCommunicator and
// the virtual cluster count), per rank: the tests check the kernels against these numbers.
// Footprint is the elements a rank holds while the schedule runs. For the planner's search, a
// SUMMA step's busiest rank and one rank's bytes are also here in closed form (summa_busiest,
// summa_bytes_at), which the tests keep equal to step_traffic. Pure compile-time.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "shardwise/layout.hpp"
#include "shardwise/plan/step.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise::detail {

/// Global extents of A, B and C.
using operand_extents = std::array<tensor_extents, 3>;

/// One SUMMA panel: its range of k, and the group ranks that own it in A's and B's k split.
struct summa_panel {
  std::int64_t begin = 0, width = 0;
  int a_root = 0, b_root = 0;
};

/// Calls f(panel) for every panel of k in [first, last) (all of k by default): the common
/// refinement of A's k blocks (split in `a_parts`) and B's (in `b_parts`), cut to at most
/// `max_width`.
template <typename F>
constexpr void for_each_summa_panel(std::int64_t k, int a_parts, int b_parts, int max_width, F&& f,
                                    std::int64_t first = 0, std::int64_t last = -1) {
  if (last < 0) last = k;
  int a_block = 0, b_block = 0;
  for (std::int64_t begin = first; begin < last;) {
    while (block_begin(k, a_parts, a_block + 1) <= begin) ++a_block;
    while (block_begin(k, b_parts, b_block + 1) <= begin) ++b_block;
    std::int64_t end = std::min(begin + max_width, last);
    if (block_begin(k, a_parts, a_block + 1) < end) end = block_begin(k, a_parts, a_block + 1);
    if (block_begin(k, b_parts, b_block + 1) < end) end = block_begin(k, b_parts, b_block + 1);
    f(summa_panel{begin, end - begin, a_block, b_block});
    begin = end;
  }
}

/// The range of k that this rank's layer multiplies in a (2.5D) SUMMA step: all of k without
/// layers, else the layer's contiguous block of k.
struct k_range {
  std::int64_t first = 0, last = 0;
};
constexpr k_range layer_k_range(const Step& step, std::int64_t k, const block_geometry& geo) {
  if (step.layers.empty()) return {0, k};
  const int layers = geo.group_size(step.layers), layer = geo.group_rank(step.layers);
  return {block_begin(k, layers, layer), block_begin(k, layers, layer + 1)};
}

/// Which of the three counted kinds of collective a step is charged to, when it is one.
constexpr OpCount CommCounters::* collective_kind(StepKind kind) {
  switch (kind) {
    case StepKind::all_gather: return &CommCounters::all_gather;
    case StepKind::reduce_scatter: return &CommCounters::reduce_scatter;
    case StepKind::all_reduce: return &CommCounters::all_reduce;
    default: return nullptr;
  }
}

/// The elements a group of a collective along `dim` holds together: the members' blocks
/// (member_block over g) tile this rank's block over `kept` (partition.hpp: the cut nests), so
/// their sum is that block's extent times the other dimensions' (exactly; no loop over the group).
constexpr std::int64_t group_total(const tensor_axes& t, const tensor_extents& global, const block_geometry& geo,
                                   int dim, const axis_list& kept) {
  std::int64_t elements = geo.extent(global[static_cast<std::size_t>(dim)], kept);
  for (int d = 0; d < t.rank; ++d)
    if (d != dim) elements *= geo.extent(global[static_cast<std::size_t>(d)], t.dim(d));
  return elements;
}

/// Bytes and messages this rank sends in `step`, the shardings before it being `state`.
constexpr Traffic step_traffic(const Step& step, const operand_axes& state, const operand_extents& global,
                               const block_geometry& geo, std::int64_t scalar_bytes, int panel_width) {
  const tensor_axes& t = state[step.operand];
  const tensor_extents& extents = global[index_of(step.operand)];
  const int group = geo.group_size(step.axes), rank = geo.group_rank(step.axes);
  switch (step.kind) {
    case StepKind::all_gather:
    case StepKind::ring_all_gather_gemm: {
      if (group <= 1) return {};
      const axis_list kept = kept_after_gather(t, step.dim, step.axes.size());
      const std::int64_t next = member_block(t, extents, geo, step.dim, kept, step.axes, (rank + 1) % group);
      return ring_all_gather_traffic(group_total(t, extents, geo, step.dim, kept), next, group, scalar_bytes);
    }
    case StepKind::reduce_scatter:
    case StepKind::ring_gemm_reduce_scatter: {
      if (group <= 1) return {};
      const axis_list& kept = t.dim(step.dim);
      return ring_reduce_scatter_traffic(group_total(t, extents, geo, step.dim, kept),
                                         member_block(t, extents, geo, step.dim, kept, step.axes, rank), group,
                                         scalar_bytes);
    }
    case StepKind::all_reduce:
      return ring_all_reduce_traffic(element_count(local_extents(t, extents, geo), t.rank), group, rank, scalar_bytes);
    case StepKind::local_gemm:
    case StepKind::slice:  // a local copy: nothing is sent
      return {};
    case StepKind::summa_gemm: {
      // A[m, k] panels travel over `axes` (A's k split), B[k, n] panels over `b_axes` (B's k split).
      const tensor_axes &a = state[Operand::A], &b = state[Operand::B];
      const std::int64_t m_local = geo.extent(global[0][0], a.dim(0));
      const std::int64_t n_local = geo.extent(global[1][1], b.dim(1));
      const int b_group = geo.group_size(step.b_axes), b_rank = geo.group_rank(step.b_axes);
      const k_range range = layer_k_range(step, global[0][1], geo);
      Traffic total;
      for_each_summa_panel(
          global[0][1], group, b_group, panel_width,
          [&](const summa_panel& p) {
            total += chain_broadcast_traffic(m_local * p.width, group, rank, p.a_root, scalar_bytes);
            total += chain_broadcast_traffic(p.width * n_local, b_group, b_rank, p.b_root, scalar_bytes);
          },
          range.first, range.last);
      return total;
    }
  }
  return {};
}

/// What the busiest rank sends in a SUMMA step when blocks divide evenly: a rank's share of the
/// step is A's panels (by its group rank along A's panel axes and its layer) plus B's (by its
/// group rank along B's and its layer), three disjoint sets of axes, so the busiest rank is the
/// busiest A rank plus the busiest B rank of the busiest layer. A rank in a chain broadcast
/// sends every panel of its layer but those of the root after it (it is their last link).
constexpr Traffic summa_busiest(const Step& step, const operand_axes& state, const operand_extents& global,
                                const block_geometry& mesh, std::int64_t scalar_bytes, int panel_width) {
  const block_geometry& geo = mesh;  // coordinates 0: every block has the same extents
  const std::int64_t k = global[0][1];
  const std::int64_t m_local = geo.extent(global[0][0], state[Operand::A].dim(0));
  const std::int64_t n_local = geo.extent(global[1][1], state[Operand::B].dim(1));
  const int a_group = geo.group_size(step.axes), b_group = geo.group_size(step.b_axes);
  const int layers = step.layers.empty() ? 1 : geo.group_size(step.layers);
  // Per layer: for each side, the root whose panels weigh least (bytes, then count) is the one
  // whose predecessor sends most; a root with no panel in the layer weighs nothing.
  struct side {
    int group = 1, roots_seen = 0, current = -1;
    std::int64_t local = 0, width = 0, count = 0, least_width = 0, least_count = 0;
    constexpr void close() {
      if (current < 0) return;
      ++roots_seen;
      if (roots_seen == 1 || local * width < local * least_width ||
          (local * width == local * least_width && count < least_count)) {
        least_width = width;
        least_count = count;
      }
    }
    constexpr void add(int root, std::int64_t w) {
      if (root != current) {
        close();
        current = root;
        width = count = 0;
      }
      width += w;
      ++count;
    }
    constexpr Traffic busiest(std::int64_t range, std::int64_t panels, std::int64_t bytes) {
      if (group <= 1) return {};
      close();
      current = -1;
      if (roots_seen < group) least_width = least_count = 0;
      return {local * (range - least_width) * bytes, panels - least_count};
    }
  };
  Traffic worst;
  for (int layer = 0; layer < layers; ++layer) {
    const std::int64_t first = block_begin(k, layers, layer), last = block_begin(k, layers, layer + 1);
    side a{a_group, 0, -1, m_local}, b{b_group, 0, -1, n_local};
    std::int64_t panels = 0;
    for_each_summa_panel(
        k, a_group, b_group, panel_width,
        [&](const summa_panel& p) {
          a.add(p.a_root, p.width);
          b.add(p.b_root, p.width);
          ++panels;
        },
        first, last);
    const Traffic t = a.busiest(last - first, panels, scalar_bytes) + b.busiest(last - first, panels, scalar_bytes);
    if (layer == 0 || t > worst) worst = t;
  }
  return worst;
}

/// The bytes the rank at `geo` sends in a SUMMA step (what step_traffic counts, without its
/// loop over panels): in its layer's range of k, the rank sends its rows of A's panels but
/// those of the root after it in A's group, and its columns of B's but those of the root after
/// it in B's group (it is the last link of their chains).
constexpr std::int64_t summa_bytes_at(const Step& step, const operand_axes& state, const operand_extents& global,
                                      const block_geometry& geo, std::int64_t scalar_bytes) {
  const std::int64_t k = global[0][1];
  const k_range range = layer_k_range(step, k, geo);
  auto side = [&](const axis_list& axes, std::int64_t local) -> std::int64_t {
    const int g = geo.group_size(axes);
    if (g <= 1) return 0;
    const int skipped = (geo.group_rank(axes) + 1) % g;  // the root this rank is the last link of
    const std::int64_t first = std::max(range.first, block_begin(k, g, skipped));
    const std::int64_t last = std::min(range.last, block_begin(k, g, skipped + 1));
    return local * (range.last - range.first - std::max<std::int64_t>(0, last - first));
  };
  return scalar_bytes * (side(step.axes, geo.extent(global[0][0], state[Operand::A].dim(0))) +
                         side(step.b_axes, geo.extent(global[1][1], state[Operand::B].dim(1))));
}

/// What this rank sends to run `steps` from `state`, by kind: collectives as themselves (one
/// call each), the ring variants' messages as point-to-point, SUMMA's as broadcasts, as
/// CountingCommunicator counts them (calls are modeled for the collectives only).
constexpr CommCounters schedule_counters(const Schedule& steps, operand_axes state, const operand_extents& global,
                                         const block_geometry& geo, std::int64_t scalar_bytes, int panel_width) {
  CommCounters counts;
  for (const Step& step : steps) {
    const Traffic t = step_traffic(step, state, global, geo, scalar_bytes, panel_width);
    if (OpCount CommCounters::* kind = collective_kind(step.kind)) {
      counts.*kind += OpCount{t, 1};
    } else if (step.kind == StepKind::summa_gemm) {
      counts.broadcast.traffic += t;
    } else if (step.kind != StepKind::local_gemm && step.kind != StepKind::slice) {
      counts.point_to_point.traffic += t;
    }
    apply_step(step, state);
  }
  return counts;
}

/// What this rank sends to run `steps` from `state`, all kinds together.
constexpr Traffic schedule_traffic(const Schedule& steps, operand_axes state, const operand_extents& global,
                                   const block_geometry& geo, std::int64_t scalar_bytes, int panel_width) {
  Traffic total;
  for (const Step& step : steps) {
    total += step_traffic(step, state, global, geo, scalar_bytes, panel_width);
    apply_step(step, state);
  }
  return total;
}

/// Elements this rank holds while running `steps`: its blocks of A, B and the result (in
/// `output`), plus the buffers the schedule names: gathered operands, C between steps (two
/// buffers used in turn), ring chunks and SUMMA panels. Copies made only to change a storage
/// order are not counted.
constexpr std::int64_t schedule_footprint(const Schedule& steps, operand_axes state, const tensor_axes& output,
                                          const operand_extents& global, const block_geometry& geo, int panel_width) {
  auto elements = [&](Operand op, const tensor_axes& t) {
    return element_count(local_extents(t, global[index_of(op)], geo), t.rank);
  };
  std::int64_t total = elements(Operand::A, state[Operand::A]) + elements(Operand::B, state[Operand::B]) +
                       elements(Operand::C, output);
  std::int64_t c_buffers[2] = {0, 0};
  int next_c = 0;
  auto hold_c = [&](std::int64_t n) {
    c_buffers[next_c] = std::max(c_buffers[next_c], n);
    next_c = 1 - next_c;
  };
  std::int64_t ring = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    bool writes_output = true;  // only in-place AllReduces follow
    for (std::size_t j = i + 1; j < steps.size(); ++j)
      if (steps[j].kind != StepKind::all_reduce) writes_output = false;
    const operand_axes before = state;
    apply_step(step, state);
    const tensor_axes& c = state[Operand::C];
    switch (step.kind) {
      case StepKind::all_gather:
      case StepKind::slice:  // a new, gathered or smaller, block
        if (step.operand != Operand::C) total += elements(step.operand, state[step.operand]);
        else if (!writes_output) hold_c(elements(Operand::C, c));
        break;
      case StepKind::ring_all_gather_gemm: {
        // Two buffers of the group's widest block in flight: at most the ceiling of the
        // gathered dimension's share times this rank's other dimensions.
        const tensor_axes& t = before[step.operand];
        const tensor_extents& extents = global[index_of(step.operand)];
        const axis_list kept = kept_after_gather(t, step.dim, step.axes.size());
        const std::int64_t parts = std::int64_t{geo.group_size(kept)} * geo.group_size(step.axes);
        std::int64_t widest = (extents[static_cast<std::size_t>(step.dim)] + parts - 1) / parts;
        for (int d = 0; d < t.rank; ++d)
          if (d != step.dim) widest *= geo.extent(extents[static_cast<std::size_t>(d)], t.dim(d));
        ring = std::max(ring, 2 * widest);
        if (!writes_output) hold_c(elements(Operand::C, c));
        break;
      }
      case StepKind::ring_gemm_reduce_scatter: {
        const std::int64_t whole = elements(Operand::C, before[Operand::C]);
        ring = std::max(ring, 3 * (whole / geo.group_size(step.axes) + global[2][0] + global[2][1]));
        if (!writes_output) hold_c(elements(Operand::C, c));
        break;
      }
      case StepKind::reduce_scatter:
      case StepKind::local_gemm:
        if (!writes_output) hold_c(elements(Operand::C, c));
        break;
      case StepKind::summa_gemm:
        ring = std::max(ring, std::int64_t{panel_width} * (geo.extent(global[0][0], before[Operand::A].dim(0)) +
                                                           geo.extent(global[1][1], before[Operand::B].dim(1))));
        if (!writes_output) hold_c(elements(Operand::C, c));
        break;
      case StepKind::all_reduce:
        break;
    }
  }
  return total + c_buffers[0] + c_buffers[1] + ring;
}

/// The dimension of a matrix block stored outermost, as ShardedMatrix stores it: the rows when
/// only they are split (row-major), else the columns (column-major).
constexpr int matrix_outermost(const tensor_axes& t) { return !t.dim(0).empty() && t.dim(1).empty() ? 0 : 1; }

/// schedule_footprint of a matmul whose result is stored as ShardedMatrix stores it: when the
/// last step is a collective on C along the dimension that is not the result's outermost, its
/// block lands in a buffer of its own first (the executor then puts it in the result's order).
constexpr std::int64_t matmul_footprint(const Schedule& steps, const operand_axes& state, const tensor_axes& output,
                                        const operand_extents& global, const block_geometry& geo, int panel_width) {
  std::int64_t total = schedule_footprint(steps, state, output, global, geo, panel_width);
  if (steps.empty()) return total;
  const Step& last = steps[steps.size() - 1];
  const bool collective = last.kind == StepKind::reduce_scatter || last.kind == StepKind::ring_gemm_reduce_scatter ||
                          last.kind == StepKind::all_gather;
  if (collective && last.operand == Operand::C && last.dim != matrix_outermost(output))
    total += element_count(local_extents(output, global[index_of(Operand::C)], geo), output.rank);
  return total;
}

/// The largest value of `traffic_of(coordinate)` over all ranks of `mesh` (the busiest rank).
template <MeshType M, typename F>
constexpr Traffic max_over_ranks(const M& mesh, F&& traffic_of) {
  Traffic worst;
  for (int rank = 0; rank < mesh.size(); ++rank) {
    const Traffic t = traffic_of(mesh.unravel(rank));
    worst = std::max(worst, t);
  }
  return worst;
}

/// One of two schedules for the same operation, each from its own start.
struct schedule_choice {
  const Schedule& steps;
  const operand_axes& start;
};

/// Whether `other` runs instead of `first` for the global extents `global`: when its busiest
/// rank sends fewer bytes, or as many in no more messages (ties go to `other`). Every rank
/// agrees on the extents before an operation runs, so every rank chooses the same.
template <MeshType M>
constexpr bool prefer_other(const M& mesh, const schedule_choice& first, const schedule_choice& other,
                            const operand_extents& global, std::int64_t scalar_bytes, int panel_width) {
  auto busiest = [&](const schedule_choice& s) {
    return max_over_ranks(mesh, [&](const auto& c) {
      return schedule_traffic(s.steps, s.start, global, block_geometry(mesh, c), scalar_bytes, panel_width);
    });
  };
  const Traffic f = busiest(first), o = busiest(other);
  return o <= f;
}

}  // namespace shardwise::detail

namespace shardwise {

namespace detail {

/// sqrt(x) for x >= 0 in a constant expression (Newton's iteration from above: exact to the
/// last bit or one below).
constexpr double constexpr_sqrt(double x) {
  if (x <= 0) return 0;
  double r = x > 1 ? x : 1;
  for (;;) {
    const double next = 0.5 * (r + x / r);
    if (next >= r) return r;
    r = next;
  }
}

/// The cube root of x >= 0 in a constant expression (Newton's iteration from above).
constexpr double constexpr_cbrt(double x) {
  if (x <= 0) return 0;
  double r = x > 1 ? x : 1;
  for (;;) {
    const double next = (2 * r + x / (r * r)) / 3;
    if (next >= r) return r;
    r = next;
  }
}

}  // namespace detail

/// The memory-independent communication lower bound of C[m, n] = A[m, k] B[k, n] on `ranks`
/// processors, and which of its three regimes holds.
struct MatmulLowerBound {
  double words = 0;  ///< What some processor must receive (and what a balanced plan sends).
  int regime = 0;    ///< 1: P <= d1/d2; 2: up to d1 d2 / d3^2; 3: beyond.
};

/// The tight memory-independent lower bound of Al Daas, Ballard, Grigori, Kumar and Rouse
/// ("Tight memory-independent parallel matrix multiplication communication lower bounds",
/// SPAA 2022, the main theorem), for any shape. With the extents sorted d1 >= d2 >= d3 and P
/// processors, each of the P shares of the d1 d2 d3 products needs at least D words of the three
/// matrices (Loomis-Whitney, and each element of a matrix takes part in as many products as the
/// extent it lacks):
///   P <= d1/d2                  D = d2 d3 + (d1 d2 + d1 d3) / P      (1-D: the smallest matrix whole)
///   d1/d2 <= P <= d1 d2 / d3^2  D = 2 sqrt(d1 d2 d3^2 / P) + d1 d2 / P   (2-D)
///   P >= d1 d2 / d3^2           D = 3 (d1 d2 d3 / P)^(2/3)             (3-D)
/// and a processor that starts with its share of one copy of the inputs and ends with its share
/// of one copy of C (the setting of the planner's plans) must receive at least
/// D - (m k + k n + m n) / P of them. For m = n = k the 3-D case holds at every P.
constexpr MatmulLowerBound matmul_lower_bound(std::int64_t m, std::int64_t k, std::int64_t n, std::int64_t ranks) {
  double d[3] = {static_cast<double>(m), static_cast<double>(k), static_cast<double>(n)};
  for (int i = 0; i < 2; ++i)  // sort decreasing
    for (int j = 0; j < 2 - i; ++j)
      if (d[j] < d[j + 1]) {
        const double t = d[j];
        d[j] = d[j + 1];
        d[j + 1] = t;
      }
  const double d1 = d[0], d2 = d[1], d3 = d[2], p = static_cast<double>(ranks);
  const double held = (d1 * d2 + d1 * d3 + d2 * d3) / p;
  MatmulLowerBound bound;
  double accessed = 0;
  if (p * d2 <= d1) {
    bound.regime = 1;
    accessed = d2 * d3 + (d1 * d2 + d1 * d3) / p;
  } else if (p * d3 * d3 <= d1 * d2) {
    bound.regime = 2;
    accessed = 2 * detail::constexpr_sqrt(d1 * d2 * d3 * d3 / p) + d1 * d2 / p;
  } else {
    bound.regime = 3;
    const double root = detail::constexpr_cbrt(d1 * d2 * d3 / p);
    accessed = 3 * root * root;
  }
  bound.words = accessed > held ? accessed - held : 0;
  return bound;
}

}  // namespace shardwise
