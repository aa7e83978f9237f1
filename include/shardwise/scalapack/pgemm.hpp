// shardwise/scalapack/pgemm.hpp: ScaLAPACK's p?gemm, computed by shardwise.
//
//   sub(C) := alpha op(sub(A)) op(sub(B)) + beta sub(C)
//
// with ScaLAPACK's arguments: TRANSA/TRANSB ('N', 'T', 'C'; either case), any M, N, K, the
// submatrices' first rows and columns (IA, JA, ...; 1-based) and descriptors with any MB/NB,
// RSRC/CSRC and LLD, on a BLACS grid in either order. The local arrays are ScaLAPACK's:
// column-major, leading dimension LLD.
//
// How: the operands' blocks are redistributed from their block-cyclic layout into the layout
// where the planner's cheapest plan over every mesh of the grid's P ranks starts
// (plan_matmul_any_mesh with every rank busy: a plan that idles ranks would need its own
// sub-communicator here; 1-D, 2-D SUMMA, 3-D, 2.5D, ...; op() and the submatrix offsets are
// applied while packing, so a transpose costs no extra pass), the plan runs through the one
// executor, and C's blocks go back to their block-cyclic owners, where alpha and beta are
// applied (beta = 0 never reads C, as in the BLAS). One all-to-all per operand, then the plan.
// This is COSMA's choice for pdgemm (redistribute, run the communication-optimal plan,
// redistribute back); its bytes are counted in PgemmStats. Which process plays which rank of
// the plan is chosen so that the most data stays where it lies (relabel(), COSTA's relabeling).
//
// Three ways move less, and are taken where their modeled traffic on the busiest rank (bytes,
// then messages) is below the redistribution's: SUMMA over the k blocks in place (ScaLAPACK's
// aligned case, op 'N' both; PgemmStats::in_place); where op(A) or op(B) is transposed and
// sub(A)'s and sub(B)'s k indices are dealt alike over the grid (CP2K's C^T S C on a P x 1
// grid), each process's partial product over the k indices it holds, summed onto sub(C)'s
// owners by one pairwise reduce-scatter (PgemmStats::reduced); and where op(A) is transposed,
// the k rows lie on one process row and sub(C)'s columns as sub(B)'s (the same product on a
// 1 x P grid), sub(A) gathered along that row, each process then computing its columns of
// sub(C) (PgemmStats::gathered). The models are cached per call shape, as the plans are.
//
// pgemm() is collective over the grid. Its arguments are checked on every rank and the
// verdicts combined, with the ways' modeled costs, in one small all-reduce, so every rank takes
// the same path: computed here, or refused with the same reason everywhere (the drop-in library
// then hands the call to ScaLAPACK's own routine, which reports invalid arguments as ScaLAPACK
// does). With SHARDWISE_PGEMM_AGREEMENT=once_per_shape (detail::agreement_mode) only a call
// shape's first call runs that all-reduce; its later calls take the way it chose, trusting
// every rank to pass the same arguments, as ScaLAPACK does.
//
// Except the calls that need no communication, which each rank recognizes from the arguments
// alone and answers without that all-reduce (ScaLAPACK requires the same arguments on every
// process and checks nothing across ranks either): no product (M, N or K = 0, alpha = 0:
// C := beta C where it lies), and sub(A), sub(B), sub(C) all held by one process (a 1 x 1 grid,
// or a product whose sub(C) is one block and whose op(sub(A)) rows and op(sub(B)) columns lie on
// the same process): that process runs the local GEMM on its arrays, the others return at once
// (PgemmStats::local). PDGEMM does no more on such a call.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "shardwise/scalapack/pgemm_call.hpp"
#include "shardwise/scalapack/pgemm_in_place.hpp"
#include "shardwise/scalapack/pgemm_redistribution.hpp"

namespace shardwise::scalapack {

namespace detail {

/// The ways pgemm() computes a call that needs communication.
enum class way : int { in_place, reduced, gathered, redistributed };

/// Each way's modeled traffic on this rank for one call (unavailable ways: `none`), and the
/// redistribution's plan alone (its figure in PgemmStats::plan_bytes).
struct way_costs {
  static constexpr Traffic none{INT64_MAX / 4, INT64_MAX / 4};
  std::array<Traffic, 4> of{none, none, none, none};
  Traffic plan;
  std::unique_ptr<const relabeling> relabeled;  ///< the redistributed way's relabeling (null: none)
  int agreed_way = -1;  ///< once_per_shape: the way this call shape's agreement chose (-1: none yet)
};

/// When the ranks agree on a call's arguments before they communicate.
enum class agreement : unsigned char {
  every_call,     ///< at every call that communicates: differing arguments are refused on every rank
  once_per_shape  ///< at a call shape's first call; its later calls reuse that agreement's way
};

/// SHARDWISE_PGEMM_AGREEMENT, read once: unset or "every_call" (the default), or
/// "once_per_shape". The latter saves a tiny call its all-reduce (0.3 to 0.45 us on 2 ranks
/// over shared memory) and is ScaLAPACK's own contract: every process passes the same
/// arguments, and a program that does not may hang, as it may with PDGEMM. Any other value is
/// reported once on stderr and counts as every_call.
inline agreement agreement_mode() {
  static const agreement mode = [] {
    const char* env = std::getenv("SHARDWISE_PGEMM_AGREEMENT");
    if (env == nullptr || *env == '\0' || std::string_view(env) == "every_call") return agreement::every_call;
    if (std::string_view(env) == "once_per_shape") return agreement::once_per_shape;
    std::fprintf(stderr,
                 "shardwise p?gemm: SHARDWISE_PGEMM_AGREEMENT='%s' is neither every_call nor once_per_shape; the "
                 "ranks agree at every call\n",
                 env);
    return agreement::every_call;
  }();
  return mode;
}

/// The costs, by the call's arguments (but LLD_ and the contexts) and its plan: a client calls
/// few shapes many times, and a tiny call should not spend its time modeling. Bounded. One
/// cache for every scalar type, and with it the last call's entry: a client repeats its last
/// shape (a loop of panel updates), which then costs one comparison, not a search. `last` is
/// set at every call, after any clearing, so it never outlives its entry.
struct way_cost_cache {
  using key_type = std::array<std::int64_t, 36>;
  std::map<key_type, way_costs> entries;
  key_type last_key{};
  way_costs* last = nullptr;  ///< entries' value at last_key
};
inline way_cost_cache& cost_cache() {
  static way_cost_cache cache;
  return cache;
}

}  // namespace detail

/// This process's counts since the start (or the last reset).
inline PgemmStats pgemm_stats() { return detail::stats(); }
/// Sets the counts back to zero.
inline void reset_pgemm_stats() { detail::stats() = {}; }

namespace detail {

/// pgemm() on operands as their Descriptors count them (Descriptor::row, col, origin): what
/// pgemm() runs once it has read the descriptors, and what psymm() and psyrk() call on theirs.
template <typename Scalar>
PgemmOutcome pgemm_described(char transa, char transb, int m, int n, int k, Scalar alpha, const Scalar* a, int ia,
                             int ja, const Descriptor& da, const Scalar* b, int ib, int jb, const Descriptor& db,
                             Scalar beta, Scalar* c, int ic, int jc, const Descriptor& dc, const Grid& grid) {
  ++stats().calls;
  const int opa = op_code(transa), opb = op_code(transb);
  const std::string problem = check_arguments(opa, opb, m, n, k, da, ia, ja, db, ib, jb, dc, ic, jc, grid, true);

  // The calls that need no communication, decided by each rank from the arguments alone, with
  // no agreement: ScaLAPACK requires every process to pass the same M, N, K, TRANSA/B,
  // alpha, beta, IA, JA, ..., and descriptors (but LLD_), and checks nothing across ranks
  // either; PDGEMM does the same local work on such a call. They are the calls without a
  // product (M, N or K = 0, alpha = 0: each process scales its own part of sub(C) by beta) and
  // those whose sub(A), sub(B) and sub(C) all lie on one process (pr, pc), as on a 1 x 1 grid
  // or when sub(C) is a single block: that process computes, the others return at once.
  // Arguments out of the rules take the agreement below, as they always have, unless the
  // only fault is this process's LLD_ (the one check a process cannot know the others'
  // verdict of): then the call is refused here alone, and the drop-in's ScaLAPACK reports it.
  if (problem.empty() ||
      check_arguments(opa, opb, m, n, k, da, ia, ja, db, ib, jb, dc, ic, jc, grid, false).empty()) {
    const bool no_product = m == 0 || n == 0 || k == 0 || alpha == Scalar(0);
    int pr = -1, pc = -1;
    bool one_process = false;
    if (!no_product) {
      pr = sole_owner(dc.row_dim(grid), ic - 1, m);
      pc = sole_owner(dc.col_dim(grid), jc - 1, n);
      one_process = pr >= 0 && pc >= 0 && sole_owner(da.row_dim(grid), ia - 1, opa == 0 ? m : k) == pr &&
                    sole_owner(da.col_dim(grid), ja - 1, opa == 0 ? k : m) == pc &&
                    sole_owner(db.row_dim(grid), ib - 1, opb == 0 ? k : n) == pr &&
                    sole_owner(db.col_dim(grid), jb - 1, opb == 0 ? n : k) == pc;
    }
    if (no_product || one_process) {
      if (!problem.empty()) {
        ++stats().not_covered;
        return {PgemmResult::not_covered, problem};
      }
      if (no_product) {
        if (m > 0 && n > 0)
          scale_local(BlockCyclicOperand<Scalar*>{c, dc.lld, ic - 1, jc - 1, dc.row_dim(grid), dc.col_dim(grid), 0},
                      grid, m, n, beta);
        ++stats().without_product;
        return {};
      }
      ++stats().local;
      if (grid.row == pr && grid.col == pc) {
        const auto at = [&](const Descriptor& d, int i, int j) {
          return d.row_dim(grid).local_index(i - 1) + d.col_dim(grid).local_index(j - 1) * d.lld;
        };
        local_pgemm<Scalar>(opa, opb, m, n, k, alpha, a + at(da, ia, ja), da.lld, b + at(db, ib, jb), db.lld, beta,
                            c + at(dc, ic, jc), dc.lld);
      }
      return {};
    }
  }

  // The ways to compute the call, each with its modeled traffic on this rank (bytes, messages):
  // SUMMA over the k blocks in place, PDGEMM's algorithm, where the operands are aligned; the
  // partial products over each process's k indices summed onto C's owners, where op(A) or
  // op(B) is transposed and their k indices are dealt alike; the redistribution into the
  // planner's plan and back, always. The cheapest on the busiest rank wins (fewest bytes, then
  // fewest messages; a tie goes to the one that moves no operand).
  const int ranks = grid.rows * grid.cols;
  const auto scalar_bytes = static_cast<std::int64_t>(sizeof(Scalar));
  const bool fits = std::max({std::int64_t{m} * k, std::int64_t{k} * n, std::int64_t{m} * n}) <= INT_MAX;
  const bool valid = problem.empty() && fits;  // then M, N, K > 0 and alpha != 0: no-product calls returned
  const cached_plan* plan = valid ? plan_for(ranks, m, n, k, static_cast<int>(scalar_bytes)) : nullptr;
  const bool in_place_possible = aligned(opa, opb, da, ia, ja, db, ib, jb, dc, ic, jc);
  const reduction_split split = valid ? split_over_k(opa, opb, m, n, da, ia, ja, db, ib, jb, grid) : reduction_split{};
  const int gather = valid ? gather_row(opa, opb, m, k, da, ia, db, ib, jb, dc, ic, jc, grid) : -1;
  const BlockCyclicOperand<Scalar*> sub_c{c, dc.lld, ic - 1, jc - 1, dc.row_dim(grid), dc.col_dim(grid), 0};
  const BlockCyclicOperand<const Scalar*> sub_a{a, da.lld, ia - 1, ja - 1, da.row_dim(grid), da.col_dim(grid), opa};
  const BlockCyclicOperand<const Scalar*> sub_b{b, db.lld, ib - 1, jb - 1, db.row_dim(grid), db.col_dim(grid), opb};
  const shardwise::detail::operand_extents global = shardwise::detail::matmul_extents({.m = m, .k = k, .n = n});
  auto& w = workspace<Scalar>();
  way_costs* entry = nullptr;  // this call shape's in cost_cache(): valid until the next call
  if (plan != nullptr) {
    const std::array<std::int64_t, 36> key{
        ranks, grid.rows, grid.cols, grid.row, grid.col, m, n, k, opa, opb, ia, ja, ib, jb, ic, jc, scalar_bytes,
        reinterpret_cast<std::intptr_t>(plan), da.m, da.n, da.mb, da.nb, da.rsrc, da.csrc, db.m, db.n, db.mb, db.nb,
        db.rsrc, db.csrc, dc.m, dc.n, dc.mb, dc.nb, dc.rsrc, dc.csrc};
    auto& cache = cost_cache();
    if (cache.last != nullptr && key == cache.last_key) {
      entry = cache.last;
    } else if (auto it = cache.entries.find(key); it != cache.entries.end()) {
      entry = &it->second;
    } else {
      way_costs costs;
      if (in_place_possible) {
        const auto rows = local_run(da.row_dim(grid), grid.row, ia - 1, m).second;
        const auto cols = local_run(db.col_dim(grid), grid.col, jb - 1, n).second;
        costs.of[0] = shardwise::detail::cyclic_summa_traffic(in_place_panels(k, da, ja, db, ib, grid), grid.row,
                                                              grid.col, rows, cols, scalar_bytes,
                                                              in_place_holders(da, ia, m, db, jb, n, grid, w));
      }
      if (split.possible)
        costs.of[1] = reduction_traffic(sub_c.rows, sub_c.cols, grid.row, grid.col, Rect{ic - 1, jc - 1, m, n}, ranks,
                                        scalar_bytes);
      if (gather >= 0)
        costs.of[2] = gather_traffic(sub_a.cols, ja - 1, m, k, gather, grid.row, grid.col, scalar_bytes);
      const MatmulChoice& choice = plan->planned.choice;
      costs.relabeled = relabel<Scalar>(*plan, sub_a, sub_b, sub_c, grid);
      const relabeling* r = costs.relabeled.get();
      const int me = grid.row * grid.cols + grid.col;
      // The geometry without the plan's process groups: their making is collective, and a rank
      // whose arguments are out of the rules models nothing.
      costs.plan = shardwise::detail::schedule_traffic(
          choice.plan.steps, choice.plan.start, global,
          shardwise::detail::block_geometry(plan->cube,
                                            plan->cube.unravel(r ? r->plays[static_cast<std::size_t>(me)] : me)),
          scalar_bytes, choice.panel_width);
      costs.of[3] = sent_to_rectangles(sub_a, grid, r ? r->rect_a : plan->rect_a, scalar_bytes) +
                    sent_to_rectangles(sub_b, grid, r ? r->rect_b : plan->rect_b, scalar_bytes) +
                    sent_from_rectangles(sub_c, grid, r ? r->rect_c : plan->rect_c, scalar_bytes) + costs.plan;
      if (cache.entries.size() >= 4096) cache.entries.clear();
      entry = &cache.entries.emplace(key, std::move(costs)).first->second;
    }
    cache.last_key = key, cache.last = entry;
  }
  // Read in place, not copied: a tiny call should not pay for copying its costs.
  static const way_costs no_costs;
  const way_costs& costs = entry != nullptr ? *entry : no_costs;

  way chosen = way::redistributed;
  if (entry != nullptr && entry->agreed_way >= 0 && agreement_mode() == agreement::once_per_shape) {
    // This call shape was agreed on before, and the mode trusts the ranks to repeat it.
    chosen = static_cast<way>(entry->agreed_way);
    ++stats().agreements_skipped;
  } else {
    // One all-reduce (minimum of x and of -x) makes every rank's verdict and arguments agree
    // (part of what they agree on: the descriptors' blocks and first processes decide the ways)
    // and gives each way's cost on the busiest rank.
    // The last value names the plan (its mesh and panel width): the same on every rank unless
    // SHARDWISE_PGEMM_MACHINE or SHARDWISE_PGEMM_BUDGET_MIB differ across them. The one before
    // it, the relabeling's, follows from the descriptors.
    constexpr std::size_t agreed = 19;
    const std::int64_t plan_name =
        plan == nullptr ? -1
                        : ((std::int64_t{plan->cube.extent(0)} * 65536 + plan->cube.extent(1)) * 65536 +
                           plan->cube.extent(2)) * 65536 + plan->planned.choice.panel_width;
    const std::array<std::int64_t, agreed> mine{problem.empty() ? 0 : 1, m, n, k, opa, opb, ia, ja, ib, jb, ic, jc,
                                                scalar_bytes, in_place_possible ? 1 : 0, split.possible ? 1 : 0,
                                                split.line, gather,
                                                costs.relabeled ? costs.relabeled->fingerprint : 0, plan_name};
    std::array<std::int64_t, 2 * agreed + 8> both{};
    for (std::size_t i = 0; i < agreed; ++i) both[i] = mine[i], both[i + agreed] = -mine[i];
    for (std::size_t w = 0; w < costs.of.size(); ++w)
      both[2 * agreed + 2 * w] = -costs.of[w].bytes, both[2 * agreed + 2 * w + 1] = -costs.of[w].messages;
    MPI_Allreduce(MPI_IN_PLACE, both.data(), static_cast<int>(both.size()), MPI_INT64_T, MPI_MIN, grid.comm);
    // The arguments themselves (1 to 12) must agree; what follows from them and the descriptors
    // (13 on) only where every rank found its arguments within the rules and so computed it.
    constexpr std::size_t derived = 13;
    const bool within_rules = -both[agreed] == 0;
    bool differ = false;
    for (std::size_t i = 1; i + 1 < agreed; ++i)
      differ = differ || ((i < derived || within_rules) && both[i] != -both[i + agreed]);
    if (-both[agreed] != 0 || differ) {
      ++stats().not_covered;
      if (differ) return {PgemmResult::not_covered, "the arguments differ across the ranks of the grid"};
      return {PgemmResult::not_covered, problem.empty() ? "another rank's arguments are out of ScaLAPACK's rules"
                                                        : problem};
    }
    if (both[agreed - 1] != -both[2 * agreed - 1]) {
      ++stats().not_covered;
      return {PgemmResult::not_covered,
              "the ranks chose different plans: SHARDWISE_PGEMM_MACHINE or SHARDWISE_PGEMM_BUDGET_MIB differ "
              "across them"};
    }

    // Every exchange then counts in int, as MPI's message counts do: each element of an operand is
    // sent once, so no rank sends or receives more than the largest operand.
    if (!fits) {
      ++stats().not_covered;
      return {PgemmResult::not_covered, "an operand has more than 2^31 - 1 elements"};
    }
    if (plan == nullptr) {
      ++stats().not_covered;
      return {PgemmResult::not_covered, "no plan fits the memory budget (SHARDWISE_PGEMM_BUDGET_MIB)"};
    }
    for (const way candidate : {way::gathered, way::reduced, way::in_place}) {
      const auto i = static_cast<std::size_t>(candidate), best = static_cast<std::size_t>(chosen);
      const Traffic busiest{-both[2 * agreed + 2 * i], -both[2 * agreed + 2 * i + 1]};
      const Traffic so_far{-both[2 * agreed + 2 * best], -both[2 * agreed + 2 * best + 1]};
      if (busiest.bytes == way_costs::none.bytes) continue;
      if (busiest.bytes < so_far.bytes || (busiest.bytes == so_far.bytes && busiest.messages <= so_far.messages))
        chosen = candidate;
    }
    entry->agreed_way = static_cast<int>(chosen);  // every rank's, as the agreement makes it
  }

  if (chosen == way::in_place) {
    const auto [row0, rows] = local_run(da.row_dim(grid), grid.row, ia - 1, m);
    const auto [col0, cols] = local_run(db.col_dim(grid), grid.col, jb - 1, n);
    w.c.resize(static_cast<std::size_t>(std::max<std::int64_t>(1, rows * cols)));
    shardwise::detail::cyclic_summa<Scalar>(groups_for(grid.comm, Cube{grid.rows, grid.cols, 1}).state(), {0}, {1},
                                            in_place_panels(k, da, ja, db, ib, grid), a + row0, da.lld,
                                            b + col0 * db.lld, db.lld, w.c.data(), rows, rows, cols, w.a, w.b,
                                            in_place_holders(da, ia, m, db, jb, n, grid, w));
    const bool read_c = beta != Scalar(0);
    for (std::int64_t j = 0; j < cols; ++j)
      for (std::int64_t i = 0; i < rows; ++i) {
        Scalar& into = c[(col0 + j) * dc.lld + row0 + i];
        const Scalar v = alpha * w.c[static_cast<std::size_t>(i + j * rows)];
        into = read_c ? v + beta * into : v;
      }
    stats().plan_bytes += costs.of[0].bytes;
    ++stats().in_place;
    ++stats().planned;
    return {};
  }
  if (chosen == way::gathered) {
    gathered_pgemm<Scalar>(m, n, k, alpha, sub_a, sub_b, beta, sub_c, grid, gather,
                           groups_for(grid.comm, Cube{grid.rows, grid.cols, 1}).state(), w);
    stats().plan_bytes += costs.of[2].bytes;
    ++stats().gathered;
    ++stats().planned;
    return {};
  }
  if (chosen == way::reduced) {
    reduced_pgemm<Scalar>(m, n, k, alpha, sub_a, sub_b, beta, sub_c, grid, split,
                          groups_for(grid.comm, Cube{grid.rows, grid.cols, 1}).state(), w);
    stats().plan_bytes += costs.of[1].bytes;
    ++stats().reduced;
    ++stats().planned;
    return {};
  }

  // Process d plays the plan's rank d, or the rank the relabeling gives it (relabel()).
  const relabeling* r = costs.relabeled.get();
  const std::vector<Rect>& rect_c = r ? r->rect_c : plan->rect_c;
  block_cyclic_to_blocks(sub_a, grid, r ? r->rect_a : plan->rect_a, w.a, w);
  block_cyclic_to_blocks(sub_b, grid, r ? r->rect_b : plan->rect_b, w.b, w);
  const Rect out = rect_c[static_cast<std::size_t>(grid.row * grid.cols + grid.col)];
  w.c.resize(static_cast<std::size_t>(std::max<std::int64_t>(out.rows * out.cols, 1)));
  ProcessGroupMesh<Cube>& groups = r ? groups_for(grid.comm, plan->cube, *r) : groups_for(grid.comm, plan->cube);
  shardwise::detail::executor<Scalar, true>(plan->program, groups.state(), global, {w.a.data(), w.b.data(), nullptr, w.c.data()})
      .run();
  stats().plan_bytes += costs.plan.bytes;
  blocks_to_block_cyclic(w.c, rect_c, grid, sub_c, alpha, beta, w);
  if (r != nullptr) ++stats().relabeled;
  ++stats().planned;
  return {};
}

}  // namespace detail

/// sub(C) := alpha op(sub(A)) op(sub(B)) + beta sub(C), collective over `grid` (see the top of
/// this file), but for the calls that need no communication (see "local" in
/// detail::pgemm_described). Descriptors of DTYPE 1 or 2 (Descriptor). Not covered (the same on
/// every rank, with the reason): arguments out of ScaLAPACK's rules, A, B and C on different
/// contexts, arguments that differ across ranks, no plan within the memory budget, and an
/// operand of more than 2^31 - 1 elements.
template <typename Scalar>
PgemmOutcome pgemm(char transa, char transb, int m, int n, int k, Scalar alpha, const Scalar* a, int ia, int ja,
                   const int* desca, const Scalar* b, int ib, int jb, const int* descb, Scalar beta, Scalar* c, int ic,
                   int jc, const int* descc, const Grid& grid) {
  static_assert(shardwise::detail::is_array_scalar_v<Scalar>,
                "shardwise::scalapack::pgemm: the scalar must be float, double, std::complex<float> or "
                "std::complex<double> (psgemm, pdgemm, pcgemm, pzgemm)");
  const Descriptor da = Descriptor::from(desca), db = Descriptor::from(descb), dc = Descriptor::from(descc);
  da.locate(a, ia, ja, grid);
  db.locate(b, ib, jb, grid);
  dc.locate(c, ic, jc, grid);
  return detail::pgemm_described<Scalar>(transa, transb, m, n, k, alpha, a, ia, ja, da, b, ib, jb, db, beta, c, ic, jc,
                                         dc, grid);
}

}  // namespace shardwise::scalapack
