// shardwise/matmul.hpp: C = A * B on sharded matrices.
//
// matmul_plan (plan/matmul_plan.hpp) picks the policy and writes its schedule at compile
// time; the program (plan/program.hpp) fixes the storage order of every block for the
// operands' orders; the one executor (kernels/executor.hpp) runs it. So the kernel, the cost
// model and describe() cannot disagree, and a new plan adds no code.
//
//   auto C  = sw::matmul(A, B);                         // natural output [am, bn]
//   auto Cr = sw::matmul<sw::TensorSharding<sw::Replicated, sw::Replicated>>(A, B);
//   auto Cp = sw::matmul<Sharding with Partial<...>>(A, B);   // skip the reduction;
//   auto Cs = sw::reduce(Cp);                                  // ... finish it later
//   sw::matmul(A, B, sw::ring);  sw::matmul(A, B, sw::summa);  // variants, per call
//   sw::matmul_into(C, A, B);                           // reuse C's storage (no allocation)
//   sw::matmul_into(sw::view<C_t>(groups, {m, n}, p, {1, ldc}, {m_local, n}), A, B);  // the caller's memory
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "shardwise/detail/separate_compilation.hpp"
#include "shardwise/detail/type_fingerprint.hpp"
#include "shardwise/kernels/cyclic_summa.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/kernels/redistribute.hpp"
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/plan/memory_budget.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/reshard.hpp"
#include "shardwise/sharded_matrix.hpp"

namespace shardwise {

namespace detail {

/// The plan lowered for operands stored in OA, OB and a result in OC.
template <typename Plan, int OA, int OB, int OC>
inline constexpr program matmul_program = lower(Plan::schedule, Plan::initial_state(), matmul_indices,
                                                Plan::summa_panel_width, matrix_order(OA), matrix_order(OB), {},
                                                matrix_order(OC));
/// Its alternative schedule (matmul_plan::has_alternative) lowered the same way.
template <typename Plan, int OA, int OB, int OC>
inline constexpr program matmul_alternative_program =
    lower(Plan::alternative_schedule, Plan::alternative_state(), matmul_indices, Plan::summa_panel_width,
          matrix_order(OA), matrix_order(OB), {}, matrix_order(OC));

/// The names of the values a matmul's ranks agree on (check_matmul_operands).
inline constexpr std::string_view matmul_agreed_names =
    "rows of A|columns of A|rows of B|columns of B|rows of C|columns of C|the call's types (a fingerprint of the "
    "scalar, mesh, shardings, storage orders and variant: every rank must call with the same types)|the memory "
    "budget's m|the memory budget's k|the memory budget's n";

/// The checks of matmul, matmul_into and gemm (C's facts absent for matmul): one agreement
/// (agree_on_operands) on the operands' usability and groups, their shapes (`shapes`: A's,
/// B's and C's rows and columns, C's 0 when absent), the call's type `fingerprint` and the
/// shape a memory budget was checked for (`budget`, or null); then the shapes must fit
/// together. Out of line and independent of the operands' types: compiled once.
[[gnu::noinline]] SHARDWISE_DECL void check_matmul_operands(const char* operation,
                                                            std::span<const OperandFacts> operands,
                                                            const std::int64_t* shapes, std::int64_t fingerprint,
                                                            const MatmulShape* budget)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  const bool with_c = operands.size() > 2;
  const std::int64_t values[] = {shapes[0], shapes[1], shapes[2], shapes[3], shapes[4], shapes[5], fingerprint,
                                 budget ? budget->m : 0, budget ? budget->k : 0, budget ? budget->n : 0};
  agree_on_operands(operands, values, {}, operation,
                    with_c ? "the shapes of A, B and C" : "the shapes of A and B",
                    matmul_agreed_names, constructed_locally);
  const std::int64_t m = shapes[0], k = shapes[1], kb = shapes[2], n = shapes[3];
  if (k != kb) fail({operation, ": the inner dimensions disagree: A is ", m, " x ", k, " but B is ", kb, " x ", n});
  if (with_c && (shapes[4] != m || shapes[5] != n))
    fail({operation, ": C is ", shapes[4], " x ", shapes[5], " but A * B is ", m, " x ", n});
  if (budget && (m != budget->m || k != budget->k || n != budget->n))
    fail({operation, ": the memory budget was checked for m = ", budget->m, ", k = ", budget->k, ", n = ", budget->n,
          " but A is ", m, " x ", k, " and B is ", kb, " x ", n});
}
#else
;
#endif

/// The result type of a call that does not compile (only its static_asserts are reported).
struct invalid_matmul {};

/// check_matmul_operands for operands of these types (c null for matmul); `Call` adds what else
/// tells the call's types apart (the plan: its requested output and variant). A memory budget's
/// shape is agreed as values (`budget`).
template <typename Call = void, typename A, typename B, typename C>
void check_operands(const char* operation, const A& a, const B& b, const C* c, const MatmulShape* budget = nullptr) {
  const OperandFacts facts[] = {a.facts("A"), b.facts("B"), c ? c->facts("C") : OperandFacts{}};
  const std::int64_t shapes[] = {a.rows(), a.cols(), b.rows(), b.cols(), c ? c->rows() : 0, c ? c->cols() : 0};
  check_matmul_operands(operation, std::span<const OperandFacts>(facts, c ? 3 : 2), shapes,
                        type_fingerprint<A, B, C, Call>, budget);
}

/// Whether the memory of this rank's blocks of x and y overlaps (an empty block overlaps
/// nothing): then a product into one of them reads the other through a temporary.
template <typename X, typename Y>
bool blocks_overlap(const X& x, const Y& y) {
  const auto span_of = [](const auto& z) -> std::pair<const char*, const char*> {
    const char* first = reinterpret_cast<const char*>(z.data());
    std::int64_t last = 0;  // the largest element offset (strides are checked non-negative)
    for (std::size_t d = 0; d < std::remove_cvref_t<decltype(z)>::rank; ++d) {
      if (z.local_extents()[d] == 0) return {first, first};
      last += (z.local_extents()[d] - 1) * z.local_strides()[d];
    }
    using S = typename std::remove_cvref_t<decltype(z)>::scalar_type;
    return {first, first + (last + 1) * static_cast<std::int64_t>(sizeof(S))};
  };
  const auto [x0, x1] = span_of(x);
  const auto [y0, y1] = span_of(y);
  return x0 != x1 && y0 != y1 && x0 < y1 && y0 < x1;
}

/// Runs the plan into `out`, this rank's block of C, contiguous in the storage order OC.
template <typename Plan, int OC, typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB,
          int OB, typename WB>
void run_matmul_into(Scalar* out, const ShardedMatrix<Scalar, M, ShA, OA, WA>& a,
                     const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, Scalar alpha = Scalar(1),
                     Scalar beta = Scalar(0)) {
  // A view's block is handed over where it lies, with its strides: the executor reads it in
  // place or packs it where the program's step needs contiguous data.
  const MatmulShape shape{.m = a.rows(), .k = a.cols(), .n = b.cols()};
  const operation_io<Scalar> io{.a = a.data(), .b = b.data(), .out = out, .alpha = alpha,
                                .beta = beta, .strides = {block_strides(a), block_strides(b), nullptr}};
  // A plan that slices an input has a gathering alternative: the one that sends fewer bytes
  // for these shapes runs (the same choice on every rank: the shapes were agreed first).
  if constexpr (Plan::has_alternative) {
    if (Plan::uses_alternative(a.groups().mesh(), shape, static_cast<std::int64_t>(sizeof(Scalar))))
      return execute<matmul_alternative_program<Plan, OA, OB, OC>, Scalar>(a.groups().state("matmul"),
                                                                          matmul_extents(shape), io);
  }
  execute<matmul_program<Plan, OA, OB, OC>, Scalar>(a.groups().state("matmul"), matmul_extents(shape), io);
}

template <typename Plan, typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB, int OB,
          typename WB, typename ShC, int OC>
void run_matmul(ShardedMatrix<Scalar, M, ShC, OC>& c, const ShardedMatrix<Scalar, M, ShA, OA, WA>& a,
                const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, Scalar alpha = Scalar(1), Scalar beta = Scalar(0)) {
  run_matmul_into<Plan, OC>(c.local().data(), a, b, alpha, beta);
}

}  // namespace detail

namespace detail {

/// A dimension's sharding as blocks: BlockCyclic<axis, NB, First> becomes Split<axis>.
template <typename D>
struct as_blocks {
  using type = D;
};
template <fixed_string N, std::int64_t B, int F>
struct as_blocks<BlockCyclic<N, B, F>> {
  using type = Split<N>;
};
template <fixed_string... N>
struct as_blocks<SplitFirstLarger<N...>> {
  using type = Split<N...>;
};
/// A sharding with its block-cyclic dimensions as blocks over the same axes (NaturalOutput stays).
template <typename Sh>
struct blocks_of {
  using type = Sh;
};
template <typename... P>
struct blocks_of<TensorSharding<P...>> {
  using type = TensorSharding<typename as_blocks<P>::type...>;
};
template <typename Sh>
using blocks_of_t = typename blocks_of<Sh>::type;

/// A block dimension back to an operand's block-cyclic one when it is split over that one's axis.
template <typename Block, typename Cyclic>
struct back_to_cyclic {
  using type = Block;
};
template <fixed_string N, std::int64_t B, int F>
struct back_to_cyclic<Split<N>, BlockCyclic<N, B, F>> {
  using type = BlockCyclic<N, B, F>;
};
template <fixed_string... N>
struct back_to_cyclic<Split<N...>, SplitFirstLarger<N...>> {
  using type = SplitFirstLarger<N...>;
};
/// The natural output of a product of block-cyclic operands: the block plan's natural output,
/// its rows block-cyclic as A's rows where they keep A's row axis, its columns as B's columns.
template <typename Natural, typename ShA, typename ShB>
struct cyclic_natural_output {
  using type = Natural;  // a pending sum stays in blocks
};
template <typename D0, typename D1, typename ShA, typename ShB>
struct cyclic_natural_output<TensorSharding<D0, D1>, ShA, ShB> {
  using type = TensorSharding<typename back_to_cyclic<D0, typename ShA::template dim<0>>::type,
                              typename back_to_cyclic<D1, typename ShB::template dim<1>>::type>;
};

/// Where an array of sharding Sh on M has its elements, for the redistribution kernel.
template <MeshType M, typename Sh>
constexpr placement placement_of() {
  placement p;
  p.axes = tensor_axes::of(resolve_sharding<M, Sh>());
  for (std::size_t d = 0; d < Sh::rank; ++d) {
    p.cycles.block[d] = Sh::dim_cycle[d];
    p.cycles.first[d] = Sh::dim_first[d];
  }
  return p;
}

}  // namespace detail

namespace detail {

/// Whether A[ShA] B[ShB] -> C[ShC] is ScaLAPACK's aligned case, which SUMMA over the k blocks
/// computes where the operands lie: A = [r cyclic MB, c cyclic KB], B = [r cyclic KB, c cyclic
/// NB], C = [r cyclic MB (A's first row block), c cyclic NB (B's first column block)].
template <typename ShA, typename ShB, typename ShC>
constexpr bool aligned_block_cyclic() {
  if constexpr (!has_redistributed_v<ShA> || !has_redistributed_v<ShB> || !is_tensor_sharding_v<ShC>) {
    return false;
  } else if constexpr (ShA::rank != 2 || ShB::rank != 2 || ShC::rank != 2 || ShC::is_partial) {
    return false;
  } else {
    const bool cyclic = ShA::dim_cycle[0] > 0 && ShA::dim_cycle[1] > 0 && ShB::dim_cycle[0] > 0 &&
                        ShB::dim_cycle[1] > 0 && ShC::dim_cycle[0] > 0 && ShC::dim_cycle[1] > 0;
    return cyclic && ShA::dim_axes[0] == ShB::dim_axes[0] && ShA::dim_axes[1] == ShB::dim_axes[1] &&
           !(ShA::dim_axes[0] == ShA::dim_axes[1]) && ShA::dim_cycle[1] == ShB::dim_cycle[0] &&
           ShC::dim_axes[0] == ShA::dim_axes[0] && ShC::dim_cycle[0] == ShA::dim_cycle[0] &&
           ShC::dim_first[0] == ShA::dim_first[0] && ShC::dim_axes[1] == ShB::dim_axes[1] &&
           ShC::dim_cycle[1] == ShB::dim_cycle[1] && ShC::dim_first[1] == ShB::dim_first[1];
  }
}

}  // namespace detail

/// C = A * B for block-cyclic operands (ScaLAPACK's layout, BlockCyclic<axis, NB>), as planned
/// steps. Two ways, each with its bytes in traffic():
///   - in place, in ScaLAPACK's aligned case (see detail::aligned_block_cyclic; the standard
///     variant): SUMMA over the k blocks, PDGEMM's algorithm (kernels/cyclic_summa.hpp);
///   - redistributed: A and B to the blocks over the same axes (kernels/redistribute.hpp), the
///     block plan of matmul_plan (any variant: SUMMA, ring, 2.5D), C to the requested sharding,
///     or to the natural one: the block plan's, block-cyclic again where it keeps A's row axis
///     or B's column axis.
/// Where both apply, each call takes the one whose modeled bytes are fewer for its shape (on the
/// first and the last rank: the same choice on every rank).
template <MeshType M, TensorShardingType ShA, TensorShardingType ShB, typename ShC = NaturalOutput,
          detail::MatmulVariant Variant = variant::Standard>
struct block_cyclic_matmul_plan {
  /// A's sharding as blocks: what the block plan starts from.
  using block_a = detail::blocks_of_t<ShA>;
  /// B's sharding as blocks.
  using block_b = detail::blocks_of_t<ShB>;
  /// The plan of the product itself, once redistributed.
  using block_plan = matmul_plan<M, block_a, block_b, detail::blocks_of_t<ShC>, Variant>;
  /// C's sharding.
  using output_sharding =
      std::conditional_t<std::is_same_v<ShC, NaturalOutput>,
                         typename detail::cyclic_natural_output<typename block_plan::output_sharding, ShA, ShB>::type,
                         ShC>;
  /// Whether SUMMA over the k blocks can run in place (see above).
  static constexpr bool has_in_place = std::is_same_v<Variant, variant::Standard> &&
                                       detail::aligned_block_cyclic<ShA, ShB, output_sharding>();

  /// The k panels of the in-place SUMMA on `mesh` for `shape`.
  static detail::cyclic_panels panels(const M& mesh, MatmulShape shape) {
    if constexpr (has_in_place) {
      constexpr detail::axis_list rows = detail::resolve_names<M>(ShA::dim_axes[0]);
      constexpr detail::axis_list columns = detail::resolve_names<M>(ShA::dim_axes[1]);
      return {shape.k, ShA::dim_cycle[1], ShA::dim_first[1], ShB::dim_first[0],
              mesh.extent(static_cast<std::size_t>(columns[0])), mesh.extent(static_cast<std::size_t>(rows[0]))};
    } else {
      return {};
    }
  }

  /// Bytes and messages the rank at `coordinate` sends in the redistributed way.
  static Traffic redistributed_traffic(const M& mesh, const typename M::coordinate_type& coordinate, MatmulShape shape,
                                       std::int64_t scalar_bytes) {
    const detail::block_geometry geo(mesh, coordinate);
    Traffic t = block_plan::traffic(mesh, coordinate, shape, scalar_bytes);
    if constexpr (!std::is_same_v<ShA, block_a>)
      t += detail::redistribution_traffic(detail::placement_of<M, ShA>(), detail::placement_of<M, block_a>(),
                                          {shape.m, shape.k}, geo, scalar_bytes);
    if constexpr (!std::is_same_v<ShB, block_b>)
      t += detail::redistribution_traffic(detail::placement_of<M, ShB>(), detail::placement_of<M, block_b>(),
                                          {shape.k, shape.n}, geo, scalar_bytes);
    if constexpr (!std::is_same_v<output_sharding, typename block_plan::output_sharding>)
      t += detail::redistribution_traffic(detail::placement_of<M, typename block_plan::output_sharding>(),
                                          detail::placement_of<M, output_sharding>(), {shape.m, shape.n}, geo,
                                          scalar_bytes);
    return t;
  }
  /// Bytes and messages the rank at `coordinate` sends in the in-place SUMMA (none without one).
  static Traffic in_place_traffic(const M& mesh, const typename M::coordinate_type& coordinate, MatmulShape shape,
                                  std::int64_t scalar_bytes) {
    if constexpr (has_in_place) {
      const detail::block_geometry geo(mesh, coordinate);
      const detail::placement c = detail::placement_of<M, output_sharding>();
      const detail::cyclic_panels p = panels(mesh, shape);
      return detail::cyclic_summa_traffic(p, geo.group_rank(c.axes.dim(0)), geo.group_rank(c.axes.dim(1)),
                                          detail::held_extent(shape.m, c.axes.dim(0), c.cycles, 0, geo),
                                          detail::held_extent(shape.n, c.axes.dim(1), c.cycles, 1, geo), scalar_bytes);
    } else {
      return {};
    }
  }
  /// Whether a product of `shape` runs in place (the same answer on every rank).
  static bool uses_in_place(const M& mesh, MatmulShape shape, std::int64_t scalar_bytes) {
    if constexpr (!has_in_place) {
      return false;
    } else {
      std::int64_t in_place = 0, redistributed = 0;
      for (const int rank : {0, mesh.size() - 1}) {
        const auto at = mesh.unravel(rank);
        in_place = std::max(in_place, in_place_traffic(mesh, at, shape, scalar_bytes).bytes);
        redistributed = std::max(redistributed, redistributed_traffic(mesh, at, shape, scalar_bytes).bytes);
      }
      return in_place <= redistributed;
    }
  }
  /// Bytes and messages the rank at `coordinate` sends: the way the call takes.
  static Traffic traffic(const M& mesh, const typename M::coordinate_type& coordinate, MatmulShape shape,
                         std::int64_t scalar_bytes) {
    if (uses_in_place(mesh, shape, scalar_bytes)) return in_place_traffic(mesh, coordinate, shape, scalar_bytes);
    return redistributed_traffic(mesh, coordinate, shape, scalar_bytes);
  }

  /// "SUMMA over the k blocks in place ..., or: Redistribute A ...; <the block plan>; ...".
  static std::string describe() {
    std::string text;
    if constexpr (has_in_place)
      text = "SUMMA over the k blocks of " + std::to_string(ShA::dim_cycle[1]) +
             " in place (A's panels broadcast along the grid's rows, B's along its columns), or where it sends "
             "fewer bytes: ";
    if constexpr (!std::is_same_v<ShA, block_a>) text += "Redistribute A " + ShA::to_string() + " to " + block_a::to_string() + "; ";
    if constexpr (!std::is_same_v<ShB, block_b>) text += "Redistribute B " + ShB::to_string() + " to " + block_b::to_string() + "; ";
    text += block_plan::describe();
    if constexpr (!std::is_same_v<output_sharding, typename block_plan::output_sharding>)
      text += "; redistribute C to " + output_sharding::to_string();
    return text;
  }
};

namespace detail {

/// An operand as its block counterpart: itself when it has no block-cyclic dimension.
template <typename Block, typename X>
decltype(auto) as_block_operand(const X& x) {
  if constexpr (std::is_same_v<typename X::sharding, Block>) return (x);
  else return reshard<Block>(x);
}

/// matmul's path for block-cyclic operands (block_cyclic_matmul_plan).
template <typename ShC, typename Variant, typename A, typename B>
auto block_cyclic_matmul(const A& a, const B& b) {
  using M = typename A::mesh_type;
  using Scalar = typename A::scalar_type;
  using Plan = block_cyclic_matmul_plan<M, typename A::sharding, typename B::sharding, ShC, Variant>;
  using Result = ShardedMatrix<Scalar, M, typename Plan::output_sharding, Eigen::ColMajor>;
  if constexpr (Plan::has_in_place) {
    check_operands<Plan>("shardwise::matmul", a, b, static_cast<const Result*>(nullptr));
    const MatmulShape shape{.m = a.rows(), .k = a.cols(), .n = b.cols()};
    if (Plan::uses_in_place(a.groups().mesh(), shape, static_cast<std::int64_t>(sizeof(Scalar)))) {
      static_assert(A::storage_order == Eigen::ColMajor && B::storage_order == Eigen::ColMajor,
                    "shardwise::matmul: block-cyclic operands are column-major, as ScaLAPACK's local arrays; declare "
                    "them with Eigen::ColMajor");
      Result c(a.groups(), a.rows(), b.cols(), uninitialized);
      auto& buffers = redistribution_buffers<Scalar>();
      constexpr placement cp = placement_of<M, typename Plan::output_sharding>();
      cyclic_summa<Scalar>(a.groups().state("shardwise::matmul"), cp.axes.dim(0), cp.axes.dim(1),
                           Plan::panels(a.groups().mesh(), shape), a.data(), std::max<std::int64_t>(1, a.stride(1)),
                           b.data(), std::max<std::int64_t>(1, b.stride(1)), c.data(), c.local_rows(), c.local_rows(),
                           c.local_cols(), buffers.send, buffers.receive);
      return c;
    }
  }
  const auto& ab = as_block_operand<typename Plan::block_a>(a);
  const auto& bb = as_block_operand<typename Plan::block_b>(b);
  auto c = matmul<blocks_of_t<ShC>>(ab, bb, Variant{});
  if constexpr (std::is_same_v<typename Plan::output_sharding, typename decltype(c)::sharding>) {
    return c;
  } else {
    auto result = reshard<typename Plan::output_sharding, Eigen::ColMajor>(c);
    static_assert(std::is_same_v<decltype(result), Result>);
    return result;
  }
}

/// Whether a product with these shardings goes through block_cyclic_matmul_plan: an operand or
/// C is BlockCyclic or SplitFirstLarger.
template <typename ShA, typename ShB, typename ShC>
inline constexpr bool redistributed_product_v =
    has_redistributed_v<ShA> || has_redistributed_v<ShB> || has_redistributed_v<ShC>;

/// gemm and matmul_into where redistributed_product_v holds: the product as matmul computes it
/// (block_cyclic_matmul_plan, C's sharding the requested one), then combined into C's block
/// (one pass over it; beta = 0 never reads C). C may overlap A or B: it is written last.
template <typename Variant, typename A, typename B, typename C>
void redistributed_gemm(const char* operation, typename A::scalar_type alpha, const A& a, const B& b,
                        typename A::scalar_type beta, C& c) {
  using Scalar = typename A::scalar_type;
  using Plan = block_cyclic_matmul_plan<typename A::mesh_type, typename A::sharding, typename B::sharding,
                                        typename C::sharding, Variant>;
  check_operands<Plan>(operation, a, b, &c);
  const auto product = block_cyclic_matmul<typename C::sharding, Variant>(a, b);
  auto&& into = c.local();
  if (beta == Scalar(0)) into = alpha * product.local();
  else into = alpha * product.local() + beta * into;
}

}  // namespace detail

/// C = A * B. ShC: NaturalOutput (C = [am, bn]) or a requested TensorSharding.
/// Variant: standard, ring or summa (see plan/matmul_plan.hpp). A and B may be views
/// (shardwise/view.hpp: sw::view, sw::transposed); C is owning.
template <typename ShC = NaturalOutput, typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB,
          int OB, typename WB, detail::MatmulVariant Variant = variant::Standard>
auto matmul(const ShardedMatrix<Scalar, M, ShA, OA, WA>& a, const ShardedMatrix<Scalar, M, ShB, OB, WB>& b,
            Variant = {}) {
  if constexpr (detail::redistributed_product_v<ShA, ShB, ShC>) {
    return detail::block_cyclic_matmul<ShC, Variant>(a, b);
  } else {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  if constexpr (!Plan::compiles) {
    return detail::invalid_matmul{};  // the plan's static_assert said why; nothing more to report
  } else {
    using Result = ShardedMatrix<Scalar, M, typename Plan::output_sharding>;
    detail::check_operands<Plan>("shardwise::matmul", a, b, static_cast<const Result*>(nullptr));
    Result c(a.groups(), a.rows(), b.cols(), detail::uninitialized);
    detail::run_matmul<Plan>(c, a, b);
    return c;
  }
  }
}

/// C = A * B with a per-rank memory budget checked at compile time (plan/memory_budget.hpp):
/// the plan's footprint for the budget's shape must fit, and A and B must have that shape.
template <typename ShC = NaturalOutput, typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB,
          int OB, typename WB, detail::MatmulVariant Variant, MatmulShape Shape, std::int64_t Bytes>
auto matmul(const ShardedMatrix<Scalar, M, ShA, OA, WA>& a, const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, Variant,
            MemoryBudget<Shape, Bytes>) {
  static_assert(sizeof(detail::checked_budget<M, ShA, ShB, ShC, Variant, MemoryBudget<Shape, Bytes>,
                                              static_cast<std::int64_t>(sizeof(Scalar))>) > 0);
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  using Result = ShardedMatrix<Scalar, M, typename Plan::output_sharding>;
  // The budget's shape is agreed across ranks with the operands' shapes, so a shape unlike the
  // budget's (or a budget of another shape on one rank) is the same error on every rank.
  constexpr MatmulShape budget = Shape;
  detail::check_operands<Plan>("shardwise::matmul", a, b, static_cast<const Result*>(nullptr), &budget);
  Result c(a.groups(), a.rows(), b.cols(), detail::uninitialized);
  detail::run_matmul<Plan>(c, a, b);
  return c;
}

/// C = A * B into existing storage; the requested output is C's own sharding. C may be A or
/// B (the same object): the product then goes through a temporary, and C gets the result.
/// A and B may be views; C is owning.
template <typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB, int OB, typename WB,
          typename ShC, int OC, detail::MatmulVariant Variant = variant::Standard>
void matmul_into(ShardedMatrix<Scalar, M, ShC, OC>& c, const ShardedMatrix<Scalar, M, ShA, OA, WA>& a,
                 const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, Variant = {}) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  if constexpr (detail::redistributed_product_v<ShA, ShB, ShC>) {
    detail::redistributed_gemm<Variant>("shardwise::matmul_into", Scalar(1), a, b, Scalar(0), c);
  } else if constexpr (Plan::compiles) {
    detail::check_operands<Plan>("shardwise::matmul_into", a, b, &c);
    const bool aliased = detail::blocks_overlap(c, a) || detail::blocks_overlap(c, b);
    if (!aliased) return detail::run_matmul<Plan>(c, a, b);
    ShardedMatrix<Scalar, M, ShC, OC> result(c.groups(), c.rows(), c.cols(), detail::uninitialized);
    detail::run_matmul<Plan>(result, a, b);
    c = std::move(result);
  }
}

namespace detail {

/// Whether a view's block lies as an owning block of its storage order would (each inner run
/// unit-strided, the outer stride the inner extent; an empty block or a single run counts):
/// then the executor can write a product straight into it.
template <typename Scalar, MeshType M, typename Sh, int Order>
bool contiguous_block(const ShardedMatrix<Scalar, M, Sh, Order, View>& c) {
  const std::int64_t inner = Order == Eigen::RowMajor ? c.stride(1) : c.stride(0);
  const std::int64_t outer = Order == Eigen::RowMajor ? c.stride(0) : c.stride(1);
  const std::int64_t inner_extent = Order == Eigen::RowMajor ? c.local_cols() : c.local_rows();
  const std::int64_t outer_extent = Order == Eigen::RowMajor ? c.local_rows() : c.local_cols();
  return c.local_rows() * c.local_cols() == 0 ||
         ((inner == 1 || inner_extent == 1) && (outer == inner_extent || outer_extent == 1));
}

}  // namespace detail

/// C = A * B into a writable view C (shardwise/view.hpp; taken by value, as a view is a
/// handle): the caller's memory gets this rank's block of the product, the requested output
/// being C's sharding. When C's strides are those of a contiguous block in its storage order,
/// and C's memory is not A's or B's, the executor writes there directly; otherwise the product
/// is computed into an owning block and then copied into C's strides (one copy of C's block).
template <typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB, int OB, typename WB,
          typename ShC, int OC, detail::MatmulVariant Variant = variant::Standard>
void matmul_into(ShardedMatrix<Scalar, M, ShC, OC, View> c, const ShardedMatrix<Scalar, M, ShA, OA, WA>& a,
                 const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, Variant = {}) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  if constexpr (detail::redistributed_product_v<ShA, ShB, ShC>) {
    detail::redistributed_gemm<Variant>("shardwise::matmul_into", Scalar(1), a, b, Scalar(0), c);
  } else if constexpr (Plan::compiles) {
    detail::check_operands<Plan>("shardwise::matmul_into", a, b, &c);
    const bool aliased = detail::blocks_overlap(c, a) || detail::blocks_overlap(c, b);
    if (detail::contiguous_block(c) && !aliased) return detail::run_matmul_into<Plan, OC>(c.data(), a, b);
    ShardedMatrix<Scalar, M, ShC, OC> result(c.groups(), c.rows(), c.cols(), detail::uninitialized);
    detail::run_matmul<Plan>(result, a, b);
    c.local() = result.local();
  }
}

/// C = alpha * A * B + beta * C: BLAS's GEMM contract (and PDGEMM's) on sharded matrices. The
/// product is planned as matmul_into plans it, with C's sharding as the requested output; alpha
/// and beta are applied to each rank's block of the finished product, after every reduction, so
/// beta * C enters once whatever the plan reduces (a Partial C too, by linearity). With beta zero
/// C is not read: NaN or Inf in it do not propagate. Alpha zero still runs the product (every
/// rank takes part in the schedule), so NaN or Inf in A or B do propagate, unlike reference BLAS.
/// C may be A or B (the same object): the product then goes through a temporary. A and B may
/// be views (shardwise/view.hpp).
template <typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB, int OB, typename WB,
          typename ShC, int OC, detail::MatmulVariant Variant = variant::Standard>
void gemm(std::type_identity_t<Scalar> alpha, const ShardedMatrix<Scalar, M, ShA, OA, WA>& a,
          const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, std::type_identity_t<Scalar> beta,
          ShardedMatrix<Scalar, M, ShC, OC>& c, Variant = {}) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  if constexpr (detail::redistributed_product_v<ShA, ShB, ShC>) {
    detail::redistributed_gemm<Variant>("shardwise::gemm", alpha, a, b, beta, c);
  } else if constexpr (Plan::compiles) {
    detail::check_operands<Plan>("shardwise::gemm", a, b, &c);
    const bool aliased = detail::blocks_overlap(c, a) || detail::blocks_overlap(c, b);
    if (!aliased) return detail::run_matmul<Plan>(c, a, b, alpha, beta);
    ShardedMatrix<Scalar, M, ShC, OC> product(c.groups(), c.rows(), c.cols(), detail::uninitialized);
    detail::run_matmul<Plan>(product, a, b);
    detail::scale_add_into(c.local().data(), product.local().data(), product.local().size(), alpha, beta);
  }
}

/// The same into a writable view C of the caller's memory (taken by value, as a view is a
/// handle; shardwise/view.hpp), as ScaLAPACK's users hold C: straight into that memory when C's
/// block is contiguous in its storage order and not A's or B's, otherwise through an owning
/// product combined into C's strides element by element (beta = 0 never reads C).
template <typename Scalar, MeshType M, typename ShA, int OA, typename WA, typename ShB, int OB, typename WB,
          typename ShC, int OC, detail::MatmulVariant Variant = variant::Standard>
void gemm(std::type_identity_t<Scalar> alpha, const ShardedMatrix<Scalar, M, ShA, OA, WA>& a,
          const ShardedMatrix<Scalar, M, ShB, OB, WB>& b, std::type_identity_t<Scalar> beta,
          ShardedMatrix<Scalar, M, ShC, OC, View> c, Variant = {}) {
  using Plan = matmul_plan<M, ShA, ShB, ShC, Variant>;
  if constexpr (detail::redistributed_product_v<ShA, ShB, ShC>) {
    detail::redistributed_gemm<Variant>("shardwise::gemm", alpha, a, b, beta, c);
  } else if constexpr (Plan::compiles) {
    detail::check_operands<Plan>("shardwise::gemm", a, b, &c);
    const bool aliased = detail::blocks_overlap(c, a) || detail::blocks_overlap(c, b);
    if (detail::contiguous_block(c) && !aliased) return detail::run_matmul_into<Plan, OC>(c.data(), a, b, alpha, beta);
    ShardedMatrix<Scalar, M, ShC, OC> product(c.groups(), c.rows(), c.cols(), detail::uninitialized);
    detail::run_matmul<Plan>(product, a, b);
    auto into = c.local();
    const auto from = product.local();
    if (beta == Scalar(0)) into = alpha * from;
    else into = alpha * from + beta * into;
  }
}

namespace detail {

/// A ShardedMatrix, owning or a view.
template <typename T>
inline constexpr bool is_sharded_matrix_v = is_matrix_type_v<T>;

/// What a call to matmul (Into false) or matmul_into (Into true) with arguments of these types
/// got wrong, as a static_assert each. (A variant is the third argument of matmul, the fourth
/// of matmul_into.)
template <bool Into, typename A, typename B, typename... Variant>
struct matmul_misuse {
  static_assert(is_sharded_matrix_v<A> && is_sharded_matrix_v<B>,
                "shardwise::matmul: A and B must both be shardwise::ShardedMatrix objects; an Eigen matrix becomes "
                "one with ShardedMatrix<Scalar, Mesh, Sharding>::distribute(groups, matrix)");
  static constexpr bool both = is_sharded_matrix_v<A> && is_sharded_matrix_v<B>;
  static_assert(!both || std::is_same_v<typename A::scalar_type, typename B::scalar_type>,
                "shardwise::matmul: A and B have different scalar types (float and double); convert one, e.g. "
                "distribute a .cast<double>() of it");
  static_assert(!both || std::is_same_v<typename A::mesh_type, typename B::mesh_type>,
                "shardwise::matmul: A and B are sharded over different Mesh types; build both on the same "
                "ProcessGroupMesh<Mesh<...>>");
  static constexpr bool variant_ok = sizeof...(Variant) <= 1 && (MatmulVariant<Variant> && ...);
  static_assert(Into || variant_ok,
                "shardwise::matmul: the third argument must be a variant (sw::standard, sw::ring, sw::summa, "
                "sw::summa_25d<...>, sw::via<...>), optionally followed by a sw::memory_budget<...>");
  static_assert(!Into || variant_ok,
                "shardwise::matmul_into(C, A, B, variant): the fourth argument must be a variant (sw::standard, "
                "sw::ring, sw::summa, sw::summa_25d<...>, sw::via<...>) and there is no fifth; matmul_into writes "
                "C = A * B and takes no alpha or beta: sw::gemm(alpha, A, B, beta, C) computes "
                "C = alpha * A * B + beta * C");
  /// Whether one of the messages above was reported.
  static constexpr bool explained = [] {
    if constexpr (!both) return true;
    else
      return !std::is_same_v<typename A::scalar_type, typename B::scalar_type> ||
             !std::is_same_v<typename A::mesh_type, typename B::mesh_type> || !variant_ok;
  }();
};

}  // namespace detail

/// Anything else: the static_assert that names the mistake, reported at the call (the return
/// type is deduced there), instead of a failed overload resolution.
template <typename ShC = NaturalOutput, typename A, typename B, typename... Variant>
auto matmul(const A&, const B&, Variant...) {
  static_assert(detail::matmul_misuse<false, A, B, Variant...>::explained,
                "shardwise::matmul: these arguments do not make a matmul; see shardwise/matmul.hpp for its forms");
  return detail::invalid_matmul{};
}

namespace detail {
/// A, B and C of one gemm: sharded matrices of one scalar type on one Mesh.
template <typename A, typename B, typename C>
concept gemm_operands = is_sharded_matrix_v<A> && is_sharded_matrix_v<B> && is_sharded_matrix_v<C> &&
                        std::is_same_v<typename A::scalar_type, typename B::scalar_type> &&
                        std::is_same_v<typename A::scalar_type, typename C::scalar_type> &&
                        std::is_same_v<typename A::mesh_type, typename B::mesh_type> &&
                        std::is_same_v<typename A::mesh_type, typename C::mesh_type>;
}  // namespace detail

/// Operands that do not make a gemm: the static_assert that says so, at the call.
template <typename Alpha, typename A, typename B, typename Beta, typename C, typename... Variant>
  requires(!detail::gemm_operands<A, B, C>)
void gemm(const Alpha&, const A&, const B&, const Beta&, C&, Variant...) {
  static_assert(detail::gemm_operands<A, B, C>,
                "shardwise::gemm(alpha, A, B, beta, C): A, B and C must be shardwise::ShardedMatrix objects of one "
                "scalar type on one Mesh (alpha and beta convert to that type); an Eigen matrix becomes one with "
                "ShardedMatrix<Scalar, Mesh, Sharding>::distribute(groups, matrix), another scalar type with a "
                ".cast<Scalar>() of it");
}

namespace detail {
/// Alpha and beta of a gemm on arrays of type A: both convert to A's scalar type.
template <typename Alpha, typename Beta, typename A>
concept gemm_scalars = std::is_convertible_v<const Alpha&, typename A::scalar_type> &&
                       std::is_convertible_v<const Beta&, typename A::scalar_type>;
/// C of a gemm or matmul_into that cannot be written: a read-only view.
template <typename C>
concept read_only_output = std::is_same_v<typename std::remove_cvref_t<C>::ownership, ConstView>;
}  // namespace detail

/// Alpha or beta that does not convert to the arrays' scalar type (a complex alpha for real
/// arrays), or a C that is a read-only view: the static_assert that says so, at the call.
template <typename Alpha, typename A, typename B, typename Beta, typename C, typename... Variant>
  requires(detail::gemm_operands<A, B, std::remove_cvref_t<C>> &&
           (!detail::gemm_scalars<Alpha, Beta, A> || detail::read_only_output<C>))
void gemm(const Alpha&, const A&, const B&, const Beta&, C&&, Variant...) {
  static_assert(detail::gemm_scalars<Alpha, Beta, A>,
                "shardwise::gemm(alpha, A, B, beta, C): alpha and beta must convert to the arrays' scalar type (a "
                "complex alpha or beta needs complex arrays); convert the scalars, or the arrays with a "
                ".cast<Scalar>() of their global matrices");
  static_assert(!detail::read_only_output<C>,
                "shardwise::gemm(alpha, A, B, beta, C): C is a read-only view (ConstView: a view of const memory); "
                "make C's view from a pointer to non-const memory, or give an owning matrix");
}

/// The same for matmul_into.
template <typename C, typename A, typename B, typename... Variant>
auto matmul_into(C&, const A&, const B&, Variant...) {
  using misuse = detail::matmul_misuse<true, A, B, Variant...>;
  static_assert(misuse::explained,
                "shardwise::matmul_into: C must be a shardwise::ShardedMatrix on the same Mesh, with the same scalar "
                "type as A and B");
  return detail::invalid_matmul{};
}

}  // namespace shardwise
