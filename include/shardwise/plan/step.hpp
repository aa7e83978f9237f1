// shardwise/plan/step.hpp: the one vocabulary every schedule is written in.
//
// A schedule is a short constexpr list of steps over the operands of one operation: A and B
// (the inputs of a contraction) and C (its result, or the one tensor of a reshard). A step
// is a collective along one dimension of an operand over mesh axes (AllGather, ReduceScatter,
// AllReduce), a slice (each rank keeps its part of a dimension along axes that did not split
// it: a local copy, no communication), the local contraction (a batched GEMM), or the local
// contraction fused with the one collective next to it (ring and SUMMA variants). The planners (contraction.hpp,
// reshard.hpp) write schedules; the cost model (cost.hpp), describe() (describe.hpp) and the
// executor (kernels/executor.hpp) read them, so they cannot disagree.
//
// Each step changes the sharding of its operand in a fixed way (apply_step): a gather drops
// the minor axes it names from the dimension, a slice appends them, a ReduceScatter appends
// them and takes them out of the pending sum, an AllReduce takes them out of the pending sum.
// Pure compile-time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "shardwise/detail/static_vector.hpp"
#include "shardwise/layout.hpp"

namespace shardwise {

/// What one step of a schedule does.
enum class StepKind : unsigned char {
  all_gather,                ///< AllGather `operand` along `dim` over `axes` (the minor axes of that dimension)
  reduce_scatter,            ///< ReduceScatter C along `dim` over `axes` (pending axes become minor split axes)
  all_reduce,                ///< AllReduce C over `axes` (pending axes)
  local_gemm,                ///< C (or a partial C) = the local contraction of A and B
  ring_all_gather_gemm,      ///< ring AllGather of `operand` along `dim` over `axes`, a GEMM per block in hand
  ring_gemm_reduce_scatter,  ///< GEMM chunk by chunk while a ring ReduceScatters C along `dim` over `axes`
  summa_gemm,                ///< broadcast A panels over `axes`, B panels over `b_axes`, a GEMM per panel
                             ///< (2.5D: each layer over `layers` takes its own share of the panels)
  slice,                     ///< keep this rank's part of `operand` along `dim` over `axes` (appended as
                             ///< minor axes; none of them may split the operand yet): local, 0 bytes
};

/// The operands of one operation: the inputs A and B of a contraction and its result C (C is
/// also the one tensor a reshard works on).
enum class Operand : unsigned char {
  A,  ///< The first input.
  B,  ///< The second input.
  C   ///< The result (of a reshard: its one tensor).
};

/// One step. `dim` is a dimension of `operand` (for a matmul, A[m, k]: 1 is k; B[k, n]: 0 is
/// k; C[m, n]: 0 is m). `axes` are the mesh axes (indices, major first) the step works over;
/// a step that moves pieces of both A and B (SUMMA) moves A's over `axes` and B's over `b_axes`.
/// 2.5D SUMMA runs on layers: the ranks along `layers` (over which A and B are replicated)
/// each take a contiguous 1/c of k, so C leaves the step with a pending sum over them.
struct Step {
  StepKind kind{};               ///< What the step does.
  Operand operand = Operand::C;  ///< The operand it works on.
  int dim = -1;                  ///< The dimension of `operand` it works along; -1 for none.
  detail::axis_list axes{};      ///< The mesh axes it works over (SUMMA: A's), major first.
  detail::axis_list b_axes{};    ///< SUMMA: the mesh axes B's panels move over.
  detail::axis_list layers{};    ///< 2.5D SUMMA: the layer axes, each taking its share of k.
  /// Same kind, operand, dimension and axes.
  friend constexpr bool operator==(const Step&, const Step&) = default;
};

/// A schedule: the steps of one operation, in order.
using Schedule = detail::static_vector<Step, 12>;

namespace detail {

constexpr std::size_t index_of(Operand op) { return static_cast<std::size_t>(op); }

/// The shardings of A, B and C while a schedule runs. A plan starts from A and B as given
/// and C as the local contraction leaves it (a reshard: C as given).
struct operand_axes {
  std::array<tensor_axes, 3> of{};
  constexpr tensor_axes& operator[](Operand op) { return of[index_of(op)]; }
  constexpr const tensor_axes& operator[](Operand op) const { return of[index_of(op)]; }
};

/// Whether the step runs the local contraction (possibly fused with a collective).
constexpr bool contracts(StepKind kind) {
  return kind == StepKind::local_gemm || kind == StepKind::ring_all_gather_gemm ||
         kind == StepKind::ring_gemm_reduce_scatter || kind == StepKind::summa_gemm;
}

/// The shardings after `step` (see the top of this file). A step that contracts leaves C
/// as it is: a plan's starting state holds C as the local contraction leaves it.
[[gnu::noinline]] constexpr void apply_step(const Step& step, operand_axes& state) {
  tensor_axes& t = state[step.operand];
  switch (step.kind) {
    case StepKind::all_gather:
    case StepKind::ring_all_gather_gemm:
      t.dim(step.dim) = without_tail(t.dim(step.dim), step.axes.size());
      break;
    case StepKind::reduce_scatter:
    case StepKind::ring_gemm_reduce_scatter:
      t.dim(step.dim) = concat(t.dim(step.dim), step.axes);
      t.partial = without(t.partial, step.axes);
      break;
    case StepKind::slice:
      t.dim(step.dim) = concat(t.dim(step.dim), step.axes);
      break;
    case StepKind::all_reduce:
      t.partial = without(t.partial, step.axes);
      break;
    case StepKind::summa_gemm:
      // The panels cover k: A's and B's k dimensions are consumed whole (SUMMA is 2-D).
      state[Operand::A].dim(1) = {};
      state[Operand::B].dim(0) = {};
      break;
    case StepKind::local_gemm:
      break;
  }
}

/// Elements that group rank `g` (of the group over `group_axes`) holds in a collective along
/// `dim` of a tensor in state `t`: a block whose dimension `dim` is split over `kept ++
/// group_axes` (AllGather: `kept` is what stays split; ReduceScatter: what was split before)
/// and every other dimension is this rank's block.
[[gnu::noinline]] constexpr std::int64_t member_block(const tensor_axes& t, const tensor_extents& global, const block_geometry& geo,
                                    int dim, const axis_list& kept, const axis_list& group_axes, int g) {
  std::int64_t elements = geo.gathered_block(global[static_cast<std::size_t>(dim)], kept, group_axes, g);
  for (int d = 0; d < t.rank; ++d)
    if (d != dim) elements *= geo.extent(global[static_cast<std::size_t>(d)], t.dim(d));
  return elements;
}

/// The axes that stay split when `dim` of `t` is gathered over its last `gathered` axes.
constexpr axis_list kept_after_gather(const tensor_axes& t, int dim, std::size_t gathered) {
  return without_tail(t.dim(dim), gathered);
}

}  // namespace detail
}  // namespace shardwise
