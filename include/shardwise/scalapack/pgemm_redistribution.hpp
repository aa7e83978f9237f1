// shardwise/scalapack/pgemm_redistribution.hpp: p?gemm's general way: op(sub(A)) and op(sub(B))
// redistributed from their block-cyclic layout to where the planner's cheapest plan over the
// grid's P ranks starts (one all-to-all each), the plan run by the one executor, and the product
// back to sub(C)'s block-cyclic owners, which apply alpha and beta; the plans cached per shape,
// their process groups kept with the grid's communicator; the redistribution's traffic model.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "shardwise/comm/mpi.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/sharding_planner.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/scalapack/pair_exchange.hpp"
#include "shardwise/scalapack/pgemm_call.hpp"
#include "shardwise/scalapack/process_assignment.hpp"

namespace shardwise::scalapack::detail {

using Cube = Mesh<Axis<"x", dynamic_extent>, Axis<"y", dynamic_extent>, Axis<"z", dynamic_extent>>;

/// A plan for one (P, m, n, k, scalar size): its mesh, its lowered program, and where A, B
/// and C start and end (each rank's rectangle of op(sub(A)), op(sub(B)) and the product).
struct cached_plan {
  MeshedMatmulChoice planned;
  shardwise::detail::program program;
  Cube cube{1, 1, 1};
  std::vector<Rect> rect_a, rect_b, rect_c;
};

inline std::vector<Rect> rectangles(const shardwise::detail::tensor_axes& t, std::int64_t rows, std::int64_t cols,
                                    const Cube& cube);

/// The process groups of the plans' meshes over one grid's communicator. Kept as an MPI
/// attribute of that communicator, so that they are made on every rank of the grid at the
/// same call (a new communicator has none on any rank) and freed with it (BLACS_GRIDEXIT): a
/// handle is a per-process value that MPI may reuse, never a key.
struct grid_meshes {
  std::map<std::array<int, 3>, std::unique_ptr<ProcessGroupMesh<Cube>>> meshes;
  /// A plan's mesh with its ranks played by other processes (relabeling::key).
  std::map<std::vector<int>, std::unique_ptr<ProcessGroupMesh<Cube>>> relabeled;
};

inline grid_meshes& meshes_of_grid(MPI_Comm comm) { return owned_attribute<grid_meshes>(comm); }

/// The exchange both redistributions make (pair_exchange.hpp): w.send_elements[d] elements to
/// rank d, packed by pack(w.send.data()) in rank order; w.receive_elements[s] from rank s land
/// in w.receive; this process's own share is copied while the messages travel.
template <typename Scalar, typename Pack>
void exchange(const Grid& grid, pgemm_workspace<Scalar>& w, Pack&& pack) {
  const int me = grid.row * grid.cols + grid.col;
  std::int64_t send_total = 0, receive_total = 0;
  for (std::int64_t e : w.send_elements) send_total += e;
  for (std::int64_t e : w.receive_elements) receive_total += e;
  set_counts(w.send_elements, w.send_counts, w.send_offsets);
  set_counts(w.receive_elements, w.receive_counts, w.receive_offsets);
  w.send.resize(static_cast<std::size_t>(std::max<std::int64_t>(send_total, 1)));
  w.receive.resize(static_cast<std::size_t>(std::max<std::int64_t>(receive_total, 1)));
  pack(w.send.data());
  const auto own = static_cast<std::size_t>(me);
  exchange_pairs<Scalar>(grid.comm, me, {w.send.data(), w.send_counts, w.send_offsets},
                         {w.receive.data(), w.receive_counts, w.receive_offsets}, w.requests, [&] {
                           std::copy_n(w.send.data() + w.send_offsets[own], w.send_counts[own],
                                       w.receive.data() + w.receive_offsets[own]);
                         });
  stats().redistributed_bytes += static_cast<std::int64_t>(sizeof(Scalar)) * (send_total - w.send_elements[own]);
}

inline std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, int, std::int64_t>,
                std::unique_ptr<cached_plan>>&
plan_cache() {
  static std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t, int, std::int64_t>,
                  std::unique_ptr<cached_plan>>
      cache;
  return cache;
}

/// Bytes per rank the plan may hold: by default four times the rank's share of A, B and C
/// plus 16 MiB (room for the replicas a 2.5D or 3-D plan keeps); SHARDWISE_PGEMM_BUDGET_MIB
/// overrides it (a negative value counts as 0: no plan fits, ScaLAPACK computes every call that
/// needs one; the local calls need none). The variable is read once, at the first call: a
/// tiny call should not spend its time in getenv.
inline std::int64_t budget_bytes(int ranks, std::int64_t m, std::int64_t n, std::int64_t k, int scalar_bytes) {
  static const std::optional<std::int64_t> fixed = []() -> std::optional<std::int64_t> {
    if (const char* env = std::getenv("SHARDWISE_PGEMM_BUDGET_MIB"); env != nullptr && *env != '\0')
      return std::max<std::int64_t>(0, std::atoll(env)) << 20;
    return std::nullopt;
  }();
  if (fixed) return *fixed;
  return 4 * scalar_bytes * ((m * k + k * n + m * n) / ranks + 1) + (std::int64_t{16} << 20);
}

/// The machine SHARDWISE_PGEMM_MACHINE describes, if it is set: "GEMM_FLOPS,LINK_BYTES,LINK_LATENCY"
/// (one rank's GEMM rate in flop/s, a link's bandwidth in bytes/s and latency in seconds, on a
/// fat tree: what `simulation/simulate machine` prints for this machine), or "simulated_fat_tree"
/// or "simulated_torus" (sw::machines). The redistributed way then runs the plan of least
/// predicted time on it (AnyMeshOptions::machine) instead of the plan of fewest bytes. Read once;
/// a value that is none of these is reported once on stderr and plans stay by bytes.
inline const std::optional<Machine>& drop_in_machine() {
  static const std::optional<Machine> machine = []() -> std::optional<Machine> {
    const char* env = std::getenv("SHARDWISE_PGEMM_MACHINE");
    if (env == nullptr || *env == '\0') return std::nullopt;
    const std::string text = env;
    if (text == "simulated_fat_tree") return machines::simulated_fat_tree;
    if (text == "simulated_torus") return machines::simulated_torus;
    Machine described{};
    char rest = 0;
    if (std::sscanf(env, "%lf,%lf,%lf%c", &described.gemm_flops_per_second, &described.link_bytes_per_second,
                    &described.link_latency_seconds, &rest) == 3 &&
        described.gemm_flops_per_second > 0 && described.link_bytes_per_second > 0 &&
        described.link_latency_seconds >= 0)
      return described;
    std::fprintf(stderr,
                 "shardwise p?gemm: SHARDWISE_PGEMM_MACHINE='%s' is neither GEMM_FLOPS,LINK_BYTES,LINK_LATENCY (each "
                 "above 0, the latency 0 or more) nor simulated_fat_tree or simulated_torus; plans are chosen by "
                 "bytes\n",
                 env);
    return std::nullopt;
  }();
  return machine;
}

/// The cached_plan of plan_for(), or null when no plan fits the budget.
inline std::unique_ptr<cached_plan> make_plan(int ranks, std::int64_t m, std::int64_t n, std::int64_t k,
                                              int scalar_bytes, std::int64_t budget) {
  auto entry = std::make_unique<cached_plan>();
  entry->planned =
      plan_matmul_any_mesh(ranks, {{.m = m, .k = k, .n = n}, scalar_bytes, budget}, {.machine = drop_in_machine()});
  if (!entry->planned.choice.found) return nullptr;
  const auto& choice = entry->planned.choice;
  const auto row_major = shardwise::detail::dim_order::row_major(2);
  entry->program = shardwise::detail::lower(choice.plan.steps, choice.plan.start, shardwise::detail::matmul_indices,
                                            choice.panel_width, row_major, row_major, {}, row_major);
  std::array<int, 3> extents{1, 1, 1};
  for (int a = 0; a < entry->planned.mesh.ndim; ++a)
    extents[static_cast<std::size_t>(a)] = entry->planned.mesh.extents[static_cast<std::size_t>(a)];
  entry->cube = Cube{extents[0], extents[1], extents[2]};
  entry->rect_a = rectangles(choice.plan.start[Operand::A], m, k, entry->cube);
  entry->rect_b = rectangles(choice.plan.start[Operand::B], k, n, entry->cube);
  entry->rect_c = rectangles(choice.c, m, n, entry->cube);
  return entry;
}

/// The plan for a call shape, made once per shape and budget; null when no plan fits.
inline const cached_plan* plan_for(int ranks, std::int64_t m, std::int64_t n, std::int64_t k, int scalar_bytes) {
  const std::int64_t budget = budget_bytes(ranks, m, n, k, scalar_bytes);
  const auto key = std::make_tuple(ranks, m, n, k, scalar_bytes, budget);
  // The last shape first (entries stay put: the cache is never cleared).
  static std::optional<std::pair<decltype(key), const cached_plan*>> last;
  if (last && last->first == key) return last->second;
  auto& cache = plan_cache();
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, make_plan(ranks, m, n, k, scalar_bytes, budget)).first;
  last.emplace(key, it->second.get());
  return it->second.get();
}

inline ProcessGroupMesh<Cube>& groups_for(MPI_Comm comm, const Cube& cube) {
  auto& meshes = meshes_of_grid(comm).meshes;
  const std::array<int, 3> key{cube.extent(0), cube.extent(1), cube.extent(2)};
  auto& slot = meshes[key];
  if (!slot) slot = std::make_unique<ProcessGroupMesh<Cube>>(MpiCommunicator(comm), cube);
  return *slot;
}

/// Which process plays which rank of a plan for one call (COSTA's relabeling), where that keeps
/// more of op(sub(A)), op(sub(B)) and the product where they lie than process d playing rank d:
/// the plan's rectangles by process, and the key of its process groups.
struct relabeling {
  std::vector<int> plays;                 ///< plays[d]: the plan rank process d plays
  std::vector<Rect> rect_a, rect_b, rect_c;  ///< by process: the rectangle of the rank it plays
  std::vector<int> key;                   ///< the mesh's extents, then plays (grid_meshes::relabeled)
  std::int64_t fingerprint = 0;           ///< agreed across the ranks with the arguments
};

/// Above this many ranks the plan's ranks stay with the processes of the same number: the
/// assignment takes O(P^3) once per call shape.
inline constexpr int largest_relabeled_grid = 256;

/// The relabeling of `plan` for a call, or null where process d playing rank d keeps as much:
/// the assignment of most elements kept (heaviest_assignment), each process weighing what it
/// holds of each rank's rectangles of op(sub(A)) and op(sub(B)) (not sent there) and of the
/// product (not sent back). Every rank computes the same from the same arguments.
template <typename Scalar>
std::unique_ptr<const relabeling> relabel(const cached_plan& plan, const BlockCyclicOperand<const Scalar*>& a,
                                          const BlockCyclicOperand<const Scalar*>& b,
                                          const BlockCyclicOperand<Scalar*>& c, const Grid& grid) {
  const int ranks = grid.rows * grid.cols;
  if (ranks <= 1 || ranks > largest_relabeled_grid) return nullptr;
  const auto n = static_cast<std::size_t>(ranks);
  std::vector<std::int64_t> kept(n * n);
  for (int d = 0; d < ranks; ++d) {
    const int p = d / grid.cols, q = d % grid.cols;
    for (std::size_t r = 0; r < n; ++r)
      kept[static_cast<std::size_t>(d) * n + r] = held_count(a.rows, a.cols, p, q, a.source(plan.rect_a[r])) +
                                                  held_count(b.rows, b.cols, p, q, b.source(plan.rect_b[r])) +
                                                  held_count(c.rows, c.cols, p, q, c.source(plan.rect_c[r]));
  }
  const std::vector<int> plays = heaviest_assignment(kept, ranks);
  std::int64_t as_is = 0, relabeled = 0;
  for (std::size_t d = 0; d < n; ++d)
    as_is += kept[d * n + d], relabeled += kept[d * n + static_cast<std::size_t>(plays[d])];
  if (relabeled <= as_is) return nullptr;
  auto r = std::make_unique<relabeling>();
  r->plays = plays;
  r->key = {plan.cube.extent(0), plan.cube.extent(1), plan.cube.extent(2)};
  for (std::size_t d = 0; d < n; ++d) {
    const auto rank = static_cast<std::size_t>(plays[d]);
    r->rect_a.push_back(plan.rect_a[rank]);
    r->rect_b.push_back(plan.rect_b[rank]);
    r->rect_c.push_back(plan.rect_c[rank]);
    r->key.push_back(plays[d]);
    r->fingerprint = r->fingerprint * 1000003 + plays[d] + 1;
  }
  return r;
}

/// The process groups of a plan's mesh whose ranks `r` relabels: made on every rank at the
/// same call (a collective MPI_Comm_split ordering the processes by the rank they play).
inline ProcessGroupMesh<Cube>& groups_for(MPI_Comm comm, const Cube& cube, const relabeling& r) {
  auto& meshes = meshes_of_grid(comm).relabeled;
  auto it = meshes.find(r.key);
  if (it == meshes.end()) {
    int me = 0;
    MPI_Comm_rank(comm, &me);
    MPI_Comm ordered = MPI_COMM_NULL;
    MPI_Comm_split(comm, 0, r.plays[static_cast<std::size_t>(me)], &ordered);
    auto groups = std::make_unique<ProcessGroupMesh<Cube>>(MpiCommunicator(ordered), cube);  // a duplicate
    MPI_Comm_free(&ordered);
    it = meshes.emplace(r.key, std::move(groups)).first;
  }
  return *it->second;
}

/// Each rank's rectangle of an m x n operand stored as `t` on the plan's mesh.
inline std::vector<Rect> rectangles(const shardwise::detail::tensor_axes& t, std::int64_t rows, std::int64_t cols, const Cube& cube) {
  std::vector<Rect> r(static_cast<std::size_t>(cube.size()));
  for (int rank = 0; rank < cube.size(); ++rank) {
    const shardwise::detail::block_geometry geo(cube, cube.unravel(rank));
    const shardwise::detail::tensor_extents local = shardwise::detail::local_extents(t, {rows, cols}, geo);
    r[static_cast<std::size_t>(rank)] = {geo.offset(rows, t.dim(0)), geo.offset(cols, t.dim(1)), local[0], local[1]};
  }
  return r;
}

/// One all-to-all over the grid: op(sub(X)) into each rank's rectangle `to`, row-major.
template <typename Scalar>
void block_cyclic_to_blocks(const BlockCyclicOperand<const Scalar*>& x, const Grid& grid,
                            const std::vector<Rect>& to, scratch_vector<Scalar>& out, pgemm_workspace<Scalar>& w) {
  const int ranks = grid.rows * grid.cols, me = grid.row * grid.cols + grid.col;
  const Rect mine = to[static_cast<std::size_t>(me)];
  w.send_elements.resize(static_cast<std::size_t>(ranks));
  w.receive_elements.resize(static_cast<std::size_t>(ranks));
  for (int d = 0; d < ranks; ++d) {
    w.send_elements[static_cast<std::size_t>(d)] =
        held_count(x.rows, x.cols, grid.row, grid.col, x.source(to[static_cast<std::size_t>(d)]));
    w.receive_elements[static_cast<std::size_t>(d)] =
        held_count(x.rows, x.cols, d / grid.cols, d % grid.cols, x.source(mine));
  }
  exchange(grid, w, [&](Scalar* packed) {
    for (int d = 0; d < ranks; ++d)
      for_each_held(x.rows, x.cols, grid.row, grid.col, x.source(to[static_cast<std::size_t>(d)]), x.ld,
                    [&](std::int64_t, std::int64_t, std::int64_t offset) { *packed++ = x.data[offset]; });
  });
  out.resize(static_cast<std::size_t>(std::max<std::int64_t>(mine.rows * mine.cols, 1)));
  const Rect source = x.source(mine);
  const Scalar* next = w.receive.data();
  for (int s = 0; s < ranks; ++s)
    for_each_held(x.rows, x.cols, s / grid.cols, s % grid.cols, source, x.ld,
                  [&](std::int64_t gr, std::int64_t gc, std::int64_t) {
                    const std::int64_t i = gr - source.row0, j = gc - source.col0;  // in the source rectangle
                    if (x.op == 0) out[static_cast<std::size_t>(i * mine.cols + j)] = *next++;
                    else if (x.op == 1) out[static_cast<std::size_t>(j * mine.cols + i)] = *next++;
                    else out[static_cast<std::size_t>(j * mine.cols + i)] = conjugated(*next++);
                  });
}

/// This rank's elements of `source` (a rectangle of C's index space) := alpha * (the next
/// values, in for_each_held's order) + beta * C, where the product lands; beta = 0 does not read C.
/// Returns the value after the last one read.
template <typename Scalar>
const Scalar* store_scaled(const Scalar* next, const BlockCyclicOperand<Scalar*>& c, const Grid& grid,
                           const Rect& source, Scalar alpha, Scalar beta) {
  const bool read_c = beta != Scalar(0);
  for_each_held(c.rows, c.cols, grid.row, grid.col, source, c.ld, [&](std::int64_t, std::int64_t, std::int64_t offset) {
    const Scalar v = alpha * *next++;
    c.data[offset] = read_c ? v + beta * c.data[offset] : v;
  });
  return next;
}

/// One all-to-all over the grid: each rank's rectangle `from` of the product (row-major in
/// `in`) to sub(C)'s block-cyclic owners, which store alpha * value + beta * C.
template <typename Scalar>
void blocks_to_block_cyclic(const scratch_vector<Scalar>& in, const std::vector<Rect>& from, const Grid& grid,
                            const BlockCyclicOperand<Scalar*>& c, Scalar alpha, Scalar beta,
                            pgemm_workspace<Scalar>& w) {
  const int ranks = grid.rows * grid.cols, me = grid.row * grid.cols + grid.col;
  const Rect mine = c.source(from[static_cast<std::size_t>(me)]);
  w.send_elements.resize(static_cast<std::size_t>(ranks));
  w.receive_elements.resize(static_cast<std::size_t>(ranks));
  for (int d = 0; d < ranks; ++d) {
    w.send_elements[static_cast<std::size_t>(d)] = held_count(c.rows, c.cols, d / grid.cols, d % grid.cols, mine);
    w.receive_elements[static_cast<std::size_t>(d)] =
        held_count(c.rows, c.cols, grid.row, grid.col, c.source(from[static_cast<std::size_t>(d)]));
  }
  exchange(grid, w, [&](Scalar* packed) {
    for (int d = 0; d < ranks; ++d)
      for_each_held(c.rows, c.cols, d / grid.cols, d % grid.cols, mine, c.ld,
                    [&](std::int64_t gr, std::int64_t gc, std::int64_t) {
                      *packed++ = in[static_cast<std::size_t>((gr - mine.row0) * mine.cols + (gc - mine.col0))];
                    });
  });
  const Scalar* next = w.receive.data();
  for (int s = 0; s < ranks; ++s) next = store_scaled(next, c, grid, c.source(from[static_cast<std::size_t>(s)]), alpha, beta);
}

/// sub(C) := beta sub(C) on this rank's elements (beta = 0: zeros, C not read).
template <typename Scalar>
void scale_local(const BlockCyclicOperand<Scalar*>& c, const Grid& grid, std::int64_t m, std::int64_t n, Scalar beta) {
  if (beta == Scalar(1)) return;
  for_each_held(c.rows, c.cols, grid.row, grid.col, Rect{c.row0, c.col0, m, n}, c.ld,
                [&](std::int64_t, std::int64_t, std::int64_t offset) {
                  c.data[offset] = beta == Scalar(0) ? Scalar(0) : beta * c.data[offset];
                });
}

/// What this rank sends to others (bytes, and the ranks it sends to) when op(sub(X)) goes to
/// the ranks' rectangles `to` (block_cyclic_to_blocks' exchange), or when the rectangles `from`
/// of a product go back to sub(C)'s owners (blocks_to_block_cyclic's): the model of the
/// redistribution's traffic.
inline Traffic sent_elements(std::int64_t elements, std::int64_t scalar_bytes) {
  return elements > 0 ? Traffic{elements * scalar_bytes, 1} : Traffic{};
}
template <typename Pointer>
Traffic sent_to_rectangles(const BlockCyclicOperand<Pointer>& x, const Grid& grid, const std::vector<Rect>& to,
                           std::int64_t scalar_bytes) {
  const int ranks = grid.rows * grid.cols, me = grid.row * grid.cols + grid.col;
  Traffic total;
  for (int d = 0; d < ranks; ++d)
    if (d != me)
      total += sent_elements(held_count(x.rows, x.cols, grid.row, grid.col, x.source(to[static_cast<std::size_t>(d)])),
                             scalar_bytes);
  return total;
}
template <typename Pointer>
Traffic sent_from_rectangles(const BlockCyclicOperand<Pointer>& c, const Grid& grid, const std::vector<Rect>& from,
                             std::int64_t scalar_bytes) {
  const int ranks = grid.rows * grid.cols, me = grid.row * grid.cols + grid.col;
  const Rect mine = c.source(from[static_cast<std::size_t>(me)]);
  Traffic total;
  for (int d = 0; d < ranks; ++d)
    if (d != me) total += sent_elements(held_count(c.rows, c.cols, d / grid.cols, d % grid.cols, mine), scalar_bytes);
  return total;
}

}  // namespace shardwise::scalapack::detail
