// shardwise/plan/program.hpp: a schedule lowered to storage orders, ready for the executor.
//
// A schedule says what moves; a program also says in which storage order every block is
// when it moves, so that each collective sends contiguous pieces and each local contraction
// is a (batched) GEMM on strided matrices:
//   - a collective along dimension d needs d outermost (then every rank's block is one
//     contiguous piece of the result); an operand that is not packs first, into the same
//     order with d moved to the outside;
//   - a contraction needs each operand's batch, row and column dimensions each contiguous, in
//     the same order in A, B and C, and the innermost dimension a row or column one; an
//     operand that is not packs first, into [batch, rows, columns];
//   - a slice copies its part of a block in whatever order the block is in;
//   - the contraction writes C in the order the next collective wants (or the result's),
//     and the step that finishes C writes straight into the result when the orders agree.
// For matrices every order is a GEMM order, so a matmul packs only an operand about to be
// gathered along its inner dimension, as a person writing the kernel by hand would.
// The executor (kernels/executor.hpp) does exactly what the program says and decides
// nothing; the footprint model counts the packs from the same data. Pure compile-time.
#pragma once

#include <array>
#include <cstdint>

#include "shardwise/layout.hpp"
#include "shardwise/plan/contraction.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/plan/step.hpp"

namespace shardwise::detail {

/// The part a dimension plays in the local contraction's GEMM: batch, row or column.
enum class GemmRole : std::int8_t { batch, rows, cols };

/// What the executor needs to know about one step beyond the step itself.
struct lowered_step {
  dim_order operand_order{};  ///< the order the step's operand (A for a contraction) must be in first
  dim_order b_order{};        ///< contraction: the order B must be in first
  dim_order result_order{};   ///< the order of what the step produces (the gathered operand, or C)
  bool writes_output = false; ///< the step's result goes into the result's storage
};

/// A schedule with the storage orders of every block and the roles of every dimension in the
/// local contraction: everything the executor runs.
struct program {
  Schedule steps{};
  operand_axes start{};
  contraction_indices indices{};
  int panel_width = 0;
  std::array<dim_order, 3> initial_order{};  ///< A and B as given; C as given (a reshard's input)
  dim_order output_order{};                  ///< the result's storage
  std::array<lowered_step, Schedule::capacity()> lowered{};
  dim_order final_order{};  ///< C after the last step; copied into the result when it differs
  std::array<std::array<GemmRole, max_tensor_rank>, 3> roles{};  ///< of each dimension of A, B, C
  /// Whether a step fuses the contraction with communication (ring, SUMMA): only the
  /// executors of such programs compile those kernels.
  bool fused = false;
};

namespace lowering {

constexpr GemmRole role_of(const contraction_indices& ix, Operand op, int dim) {
  const char l = ix.letter(op, dim);
  const bool in_a = ix.dim_of(Operand::A, l) >= 0, in_b = ix.dim_of(Operand::B, l) >= 0;
  if (in_a && in_b && ix.dim_of(Operand::C, l) >= 0) return GemmRole::batch;
  switch (op) {
    case Operand::A: return in_b ? GemmRole::cols : GemmRole::rows;  // contracted : free
    case Operand::B: return in_a ? GemmRole::rows : GemmRole::cols;  // contracted : free
    case Operand::C: return in_a ? GemmRole::rows : GemmRole::cols;  // from A : from B
  }
  return GemmRole::batch;
}

/// The letters of the dimensions of `op` with `role`, in the order `order` stores them.
constexpr static_vector<char, max_tensor_rank> letters_in_order(const contraction_indices& ix, Operand op,
                                                               const std::array<GemmRole, max_tensor_rank>& roles,
                                                               const dim_order& order, GemmRole role) {
  static_vector<char, max_tensor_rank> letters;
  for (int i = 0; i < order.rank; ++i)
    if (roles[static_cast<std::size_t>(order[i])] == role) letters.push_back(ix.letter(op, order[i]));
  return letters;
}

/// Whether `order` keeps each role's dimensions together, in the letter orders given, with a
/// row or column dimension innermost: then the block is a batch of strided matrices.
constexpr bool gemm_ready(const contraction_indices& ix, Operand op, const std::array<GemmRole, max_tensor_rank>& roles,
                          const dim_order& order, const static_vector<char, max_tensor_rank>& batch,
                          const static_vector<char, max_tensor_rank>& rows,
                          const static_vector<char, max_tensor_rank>& cols) {
  const GemmRole kinds[3] = {GemmRole::batch, GemmRole::rows, GemmRole::cols};
  const static_vector<char, max_tensor_rank>* wanted[3] = {&batch, &rows, &cols};
  for (int k = 0; k < 3; ++k) {
    if (!(letters_in_order(ix, op, roles, order, kinds[k]) == *wanted[k])) return false;
    int first = -1, last = -1;  // the group's dimensions must be adjacent
    for (int i = 0; i < order.rank; ++i)
      if (roles[static_cast<std::size_t>(order[i])] == kinds[k]) {
        if (first < 0) first = i;
        last = i;
      }
    if (first >= 0 && last - first + 1 != static_cast<int>(wanted[k]->size())) return false;
  }
  return order.rank == 0 || roles[static_cast<std::size_t>(order[order.rank - 1])] != GemmRole::batch;
}

/// [batch, rows, cols] with the letters in the orders given.
constexpr dim_order gemm_order(const contraction_indices& ix, Operand op,
                               const static_vector<char, max_tensor_rank>& batch,
                               const static_vector<char, max_tensor_rank>& rows,
                               const static_vector<char, max_tensor_rank>& cols) {
  dim_order order;
  order.rank = ix.ranks[index_of(op)];
  int next = 0;
  for (const auto* group : {&batch, &rows, &cols})
    for (char l : *group) order.outer_to_inner[static_cast<std::size_t>(next++)] = static_cast<std::int8_t>(ix.dim_of(op, l));
  return order;
}

/// The order a collective along `dim` needs: `dim` outermost.
constexpr dim_order for_collective(const dim_order& current, int dim) {
  return current.outermost() == dim ? current : current.with_outer(dim);
}

}  // namespace lowering

/// Lowers `steps` (from the shardings in `start`, for the contraction `indices`) for operands
/// stored in `a`, `b` and `c_in` and a result stored in `output`.
constexpr program lower(const Schedule& steps, const operand_axes& start, const contraction_indices& indices,
                        int panel_width, const dim_order& a, const dim_order& b, const dim_order& c_in,
                        const dim_order& output) {
  using namespace lowering;
  program p;
  p.steps = steps;
  p.start = start;
  p.indices = indices;
  p.panel_width = panel_width;
  p.initial_order = {a, b, c_in};
  p.output_order = output;
  for (int op = 0; op < 3; ++op)
    for (int d = 0; d < indices.ranks[static_cast<std::size_t>(op)]; ++d)
      p.roles[static_cast<std::size_t>(op)][static_cast<std::size_t>(d)] = role_of(indices, static_cast<Operand>(op), d);

  const std::size_t n = steps.size();
  // The step that finishes C: the last one that rewrites C, when only in-place AllReduces follow.
  for (std::size_t i = 0; i < n; ++i) {
    const Step& s = steps[i];
    bool last = (s.kind != StepKind::all_gather && s.kind != StepKind::slice) || s.operand == Operand::C;
    for (std::size_t j = i + 1; j < n; ++j)
      if (steps[j].kind != StepKind::all_reduce) last = false;
    p.lowered[i].writes_output = last && (s.kind != StepKind::all_reduce || i == 0 || !p.lowered[i - 1].writes_output);
  }
  // The order C should come out of step i in: what the next step that cares wants, else the result's.
  auto wanted_after = [&](std::size_t i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const Step& s = steps[j];
      if (s.kind == StepKind::all_reduce || s.kind == StepKind::slice) continue;  // keep the order they are given
      if ((s.kind == StepKind::all_gather && s.operand == Operand::C) || s.kind == StepKind::reduce_scatter)
        return dim_order::row_major(indices.ranks[2]).with_outer(s.dim);
      break;
    }
    return output;
  };

  std::array<dim_order, 3> current = {a, b, c_in};
  const auto ia = index_of(Operand::A), ib = index_of(Operand::B), ic = index_of(Operand::C);
  for (std::size_t i = 0; i < n; ++i) {
    const Step& s = steps[i];
    lowered_step& l = p.lowered[i];
    const auto op = index_of(s.operand);
    switch (s.kind) {
      case StepKind::all_gather:
      case StepKind::reduce_scatter:
        l.operand_order = for_collective(current[op], s.dim);
        l.result_order = s.operand == Operand::C && l.writes_output ? output : l.operand_order;
        current[op] = l.result_order;
        break;
      case StepKind::slice:  // reads any order; keeps it, unless it writes the result
        l.operand_order = current[op];
        l.result_order = s.operand == Operand::C && l.writes_output ? output : current[op];
        current[op] = l.result_order;
        break;
      case StepKind::all_reduce:
        l.operand_order = current[ic];
        l.result_order = l.writes_output ? output : current[ic];
        current[ic] = l.result_order;
        break;
      case StepKind::local_gemm:
      case StepKind::ring_all_gather_gemm:
      case StepKind::ring_gemm_reduce_scatter:
      case StepKind::summa_gemm: {
        // A's layout decides the letter order of each group; B and C follow it.
        dim_order oa = current[ia], ob = current[ib];
        if (s.kind == StepKind::ring_all_gather_gemm)
          (s.operand == Operand::A ? oa : ob) = for_collective(s.operand == Operand::A ? oa : ob, s.dim);
        const auto& ra = p.roles[ia];
        const auto& rb = p.roles[ib];
        const auto& rc = p.roles[ic];
        const auto batch = letters_in_order(indices, Operand::A, ra, oa, GemmRole::batch);
        const auto rows = letters_in_order(indices, Operand::A, ra, oa, GemmRole::rows);
        const auto inner = letters_in_order(indices, Operand::A, ra, oa, GemmRole::cols);
        if (!gemm_ready(indices, Operand::A, ra, oa, batch, rows, inner))
          oa = gemm_order(indices, Operand::A, batch, rows, inner);
        const auto cols = letters_in_order(indices, Operand::B, rb, ob, GemmRole::cols);
        if (!gemm_ready(indices, Operand::B, rb, ob, batch, inner, cols))
          ob = gemm_order(indices, Operand::B, batch, inner, cols);
        l.operand_order = oa;
        l.b_order = ob;
        current[ia] = oa;
        current[ib] = ob;
        dim_order oc = l.writes_output ? output : wanted_after(i);
        if (s.kind == StepKind::ring_gemm_reduce_scatter) oc = for_collective(oc, s.dim);
        if (!gemm_ready(indices, Operand::C, rc, oc, batch, rows, cols))
          oc = gemm_order(indices, Operand::C, batch, rows, cols);
        // A GEMM writes the result's storage only in the result's order; otherwise it writes
        // scratch, and the permutation at the end puts C in place.
        if (l.writes_output && !(oc == output)) l.writes_output = false;
        l.result_order = oc;
        current[ic] = oc;
        break;
      }
    }
  }
  p.final_order = current[ic];
  for (const Step& s : steps) p.fused = p.fused || (contracts(s.kind) && s.kind != StepKind::local_gemm);
  return p;
}

/// The index letters a reshard of a tensor of `rank` dimensions is described with; it has no
/// contraction, so only C's matter.
constexpr contraction_indices reshard_indices(int rank) { return {reshard_names(rank), {0, 0, rank}}; }

/// reshard_plan<M, From, To> lowered for a block stored in `FromOrder` and a result stored in `ToOrder`.
template <MeshType M, TensorShardingType From, TensorShardingType To, dim_order FromOrder, dim_order ToOrder>
inline constexpr program reshard_program =
    lower(reshard_plan<M, From, To>::schedule, reshard_plan<M, From, To>::initial_state(), reshard_indices(From::rank),
          0, {}, {}, FromOrder, ToOrder);

}  // namespace shardwise::detail
