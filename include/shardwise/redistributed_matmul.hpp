// shardwise/redistributed_matmul.hpp: C = A * B when an operand or C is redistributed.
//
// BlockCyclic (ScaLAPACK's layout) and SplitFirstLarger (PETSc's blocks) operands reach
// matmul's block plans through a redistribution, or, in ScaLAPACK's aligned case, are
// multiplied in place by SUMMA over the k blocks (block_cyclic_matmul_plan). matmul.hpp's
// entry points (matmul, matmul_into, gemm) send such products here; the product of the blocks
// is matmul_core.hpp's block_matmul, so this header does not include matmul.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "shardwise/kernels/cyclic_summa.hpp"
#include "shardwise/kernels/redistribute.hpp"
#include "shardwise/matmul_core.hpp"
#include "shardwise/plan/matmul_plan.hpp"
#include "shardwise/reshard.hpp"
#include "shardwise/sharded_matrix.hpp"

namespace shardwise {

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
  auto c = block_matmul<blocks_of_t<ShC>, Variant>(ab, bb);
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

}  // namespace shardwise
