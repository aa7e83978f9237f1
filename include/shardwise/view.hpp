// shardwise/view.hpp: distributed arrays over memory the caller keeps, and transposed views.
//
//   // Each rank already holds its block of A in a column-major buffer with a leading dimension
//   // lld >= local rows (a ScaLAPACK local array, a user's std::vector):
//   using A_t = sw::ShardedMatrix<double, Grid, ShA, Eigen::ColMajor>;
//   auto a  = sw::view<A_t>(groups, {m, k}, buffer.data(), {1, lld});   // no copy
//   auto b  = sw::view<B_t>(groups, {k, n}, eigen_map);                  // an Eigen::Map, Ref or Matrix
//   auto c  = sw::matmul(a, b);                                           // an owning result
//   auto d  = sw::matmul(sw::transposed(c), b2);                          // Cᵀ B2, nothing copied to transpose
//
// A view is a ShardedMatrix whose ownership is View (writable) or ConstView: the same global
// shape, sharding, storage order and groups as the owning form, and this rank's block at a
// pointer with element strides (a row stride and a column stride). Making one is collective:
// every rank checks its block against the sharding and the global shape is agreed on all
// ranks (comm/consistency.hpp), as for ShardedMatrix::from_local.
//
// Lifetime: a view does not own its block. The memory must stay valid, and must not be
// written by anyone else, while the view or an operation on it is in use; the result of an
// operation is an owning array and does not refer to the view. sw::transposed of an owning
// matrix is a view of that matrix's block (so it must not outlive the matrix; it cannot be
// taken of a temporary).
//
// Cost: the executor reads a view's block where it lies whenever the step can: a local GEMM
// reads a matrix with one unit stride through its leading dimension, in either order. Where a
// step needs contiguous data (the send buffer of a collective) it packs the block into its
// workspace, as the program's packs of an owning operand in another order do. The storage
// order (the fourth parameter) is what the planner plans for: give the order the strides have
// (column-major for a unit row stride), or the GEMM packs the block first.
//
// transposed(a) swaps the extents, the sharding (TensorSharding<R, C> becomes <C, R>), the
// storage order and the strides: the planner sees the swapped sharding, and no data moves.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "shardwise/comm/consistency.hpp"
#include "shardwise/detail/failure.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/sharded_matrix.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

namespace detail {

// TensorSharding `T` with the Partial among `Params` (if any) appended. Hidden from Doxygen,
// which takes the recursion for a recursive class relation and warns.
/// @cond
template <typename T, typename... Params>
struct append_partial {
  using type = T;
};
template <typename... D, typename First, typename... Rest>
struct append_partial<TensorSharding<D...>, First, Rest...>
    : append_partial<std::conditional_t<is_partial_v<First>, TensorSharding<D..., First>, TensorSharding<D...>>,
                     Rest...> {};
/// @endcond

/// The sharding of a permuted view: dimension i is dimension P[i] of Sh; a Partial stays.
template <typename Sh, std::size_t... P>
struct permuted_sharding;
template <typename... Params, std::size_t... P>
struct permuted_sharding<TensorSharding<Params...>, P...>
    : append_partial<TensorSharding<typename TensorSharding<Params...>::template dim<P>...>, Params...> {};

/// A matrix sharding with its two dimensions swapped.
template <typename Sh>
using transposed_sharding = permuted_sharding<Sh, 1, 0>;

template <typename T>
inline constexpr bool is_view_ownership_v = false;
template <bool Const, dim_order Order>
inline constexpr bool is_view_ownership_v<view_ownership<Const, Order>> = true;

/// Tag: a view made from an array that was already checked (no check, no communication).
struct view_unchecked_t {};

/// The checks every rank makes of the block it wraps, as the text of a problem (empty: none).
/// Out of line, per scalar: every view type shares it.
[[gnu::noinline]] inline std::string check_view_block(std::int64_t rows, std::int64_t cols, std::int64_t local_rows,
                                                      std::int64_t local_cols, const void* data,
                                                      std::int64_t row_stride, std::int64_t col_stride) {
  if (rows < 0 || cols < 0) return message({"the global shape ", rows, " x ", cols, " has a negative extent"});
  if (row_stride < 0 || col_stride < 0)
    return message({"the strides (", row_stride, ", ", col_stride, ") are negative; give element strides >= 0"});
  if (local_rows > 0 && local_cols > 0 && data == nullptr)
    return message({"the pointer is null but this rank's block is ", local_rows, " x ", local_cols});
  return {};
}

}  // namespace detail

/// A matrix distributed over the mesh M as Sh says, whose block this rank's caller keeps: the
/// view form of ShardedMatrix (see the top of shardwise/view.hpp). Copying a view copies the
/// pointer, not the data.
template <typename Scalar, MeshType M, typename Sh, int Order, bool Const>
class ShardedMatrix<Scalar, M, Sh, Order, detail::view_ownership<Const>> {
  static_assert(detail::is_array_scalar_v<Scalar>,
                "shardwise::ShardedMatrix: the scalar type must be float, double, std::complex<float> or "
                "std::complex<double>");
  static_assert(Order == Eigen::RowMajor || Order == Eigen::ColMajor,
                "shardwise::ShardedMatrix: the storage order must be Eigen::RowMajor or Eigen::ColMajor");
  static_assert(sizeof(detail::checked_matrix_sharding<M, Sh>) > 0);

 public:
  using scalar_type = Scalar;
  using mesh_type = M;
  using sharding = Sh;
  using ownership = detail::view_ownership<Const>;
  /// The storage order the planner plans for (the strides should have it; see the top of the file).
  static constexpr int storage_order = Order;
  /// The element type as the view sees it: const for a ConstView.
  using element_type = std::conditional_t<Const, const Scalar, Scalar>;
  /// This rank's block, as an Eigen map with the view's strides.
  using local_map = Eigen::Map<std::conditional_t<Const, const detail::dense_matrix<Scalar, Order>,
                                                  detail::dense_matrix<Scalar, Order>>,
                               0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
  /// The owning matrix of the same type (what an operation on this view returns).
  using owning_type = ShardedMatrix<Scalar, M, Sh, Order, Owning>;

  /// The sharding resolved against the mesh.
  static constexpr detail::tensor_axes axes = owning_type::axes;

  /// Wraps this rank's block of a rows x cols matrix at `data`, element (i, j) of the block at
  /// data[i * row_stride + j * col_stride]. Collective: the shape is agreed on all ranks and
  /// every rank's block checked (sw::view is the usual way to call it).
  ShardedMatrix(const ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols, element_type* data,
                std::int64_t row_stride, std::int64_t col_stride)
      : ShardedMatrix(groups, rows, cols, data, row_stride, col_stride, detail::view_unchecked_t{}) {
    (void)groups_.state("shardwise::view");  // a moved-from mesh cannot hold a matrix
    LocalProblem problem;
    const std::string text =
        detail::check_view_block(rows, cols, local_rows_, local_cols_, data, row_stride, col_stride);
    if (!text.empty()) problem.set(text);
    const std::int64_t shape[] = {rows, cols};
    agree_on_all_ranks(groups.world(), shape, problem, "shardwise::view", "the global shapes",
                       "global rows|global columns");
  }

  /// Global shape.
  [[nodiscard]] std::int64_t rows() const noexcept { return rows_; }
  [[nodiscard]] std::int64_t cols() const noexcept { return cols_; }
  /// This rank's block: its shape, and where it starts in the global matrix.
  [[nodiscard]] std::int64_t local_rows() const noexcept { return local_rows_; }
  [[nodiscard]] std::int64_t local_cols() const noexcept { return local_cols_; }
  [[nodiscard]] std::int64_t row_offset() const noexcept { return row_offset_; }
  [[nodiscard]] std::int64_t col_offset() const noexcept { return col_offset_; }
  /// Element stride between rows (dim 0) or columns (dim 1) of this rank's block.
  [[nodiscard]] std::int64_t stride(int dim) const noexcept { return strides_[dim == 0 ? 0 : 1]; }
  /// The element strides of this rank's block, one per dimension (the rest 0).
  [[nodiscard]] const detail::tensor_extents& local_strides() const noexcept { return strides_; }
  /// This rank's block where the caller keeps it.
  [[nodiscard]] element_type* data() const noexcept { return data_; }
  /// This rank's block, as a strided Eigen map over the caller's memory.
  [[nodiscard]] local_map local() const {
    return {data_, local_rows_, local_cols_, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(outer_stride(), inner_stride())};
  }

  /// The whole matrix on every rank (reduces a Partial, then gathers). Collective.
  [[nodiscard]] typename owning_type::global_matrix to_global() const {
    agree("shardwise::ShardedMatrix::to_global");
    typename owning_type::global_matrix global(rows(), cols());
    detail::execute<detail::reshard_program<M, Sh, replicated_sharding_t<2>, detail::matrix_order(Order),
                                            detail::matrix_order(Eigen::ColMajor)>, Scalar>(
        groups_.state("to_global"), {{{}, {}, {rows(), cols()}}},
        {.c = data_, .out = global.data(), .strides = {nullptr, nullptr, &strides_}});
    return global;
  }

  /// The groups it lives on (a handle that shares them).
  [[nodiscard]] const ProcessGroupMesh<M>& groups() const noexcept { return groups_; }
  /// A view is never released; false only for one moved from.
  [[nodiscard]] bool released() const noexcept { return false; }
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(groups_); }
  /// std::logic_error naming `operation` and `role` when moved from.
  void check_valid(const char* operation, const char* role) const {
    if (!valid()) detail::throw_unusable(operation, role, "matrix", false);
  }
  /// Collective: every rank holds this matrix with the same global shape, else all throw.
  void agree(const char* operation, const char* role = "the matrix") const {
    check_valid(operation, role);
    const std::int64_t shape[] = {rows(), cols()};
    agree_on_all_ranks(groups_.world(), shape, {}, operation, "the global shapes",
                       "rows of the matrix|columns of the matrix", detail::constructed_locally);
  }

  /// No check and no communication: for views made from an array already checked (transposed).
  ShardedMatrix(const ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols, element_type* data,
                std::int64_t row_stride, std::int64_t col_stride, detail::view_unchecked_t)
      : groups_(groups), data_(data), rows_(rows), cols_(cols) {
    strides_[0] = row_stride;
    strides_[1] = col_stride;
    if (groups_) {
      const detail::block_geometry& geo = groups.geometry();
      local_rows_ = geo.extent(rows < 0 ? 0 : rows, axes.dim(0));
      local_cols_ = geo.extent(cols < 0 ? 0 : cols, axes.dim(1));
      row_offset_ = geo.offset(rows < 0 ? 0 : rows, axes.dim(0));
      col_offset_ = geo.offset(cols < 0 ? 0 : cols, axes.dim(1));
    }
  }

 private:
  // Eigen's Stride is (outer, inner) in the map's storage order.
  [[nodiscard]] std::int64_t outer_stride() const { return Order == Eigen::RowMajor ? strides_[0] : strides_[1]; }
  [[nodiscard]] std::int64_t inner_stride() const { return Order == Eigen::RowMajor ? strides_[1] : strides_[0]; }

  ProcessGroupMesh<M> groups_;
  element_type* data_ = nullptr;
  std::int64_t rows_ = 0, cols_ = 0, local_rows_ = 0, local_cols_ = 0, row_offset_ = 0, col_offset_ = 0;
  detail::tensor_extents strides_{};
};

/// A writable view of a matrix whose block the caller keeps.
template <typename Scalar, MeshType M, typename Sh, int Order = detail::default_storage_order<Sh>()>
using ShardedMatrixView = ShardedMatrix<Scalar, M, Sh, Order, View>;
/// A read-only view of a matrix whose block the caller keeps.
template <typename Scalar, MeshType M, typename Sh, int Order = detail::default_storage_order<Sh>()>
using ShardedMatrixConstView = ShardedMatrix<Scalar, M, Sh, Order, ConstView>;

namespace detail {

template <typename T>
inline constexpr bool is_matrix_type_v = false;
template <typename Scalar, MeshType M, typename Sh, int Order, typename W>
inline constexpr bool is_matrix_type_v<ShardedMatrix<Scalar, M, Sh, Order, W>> = true;

/// The view type of array type A over elements E (const or not).
template <typename A, typename E>
struct view_type_of;
template <typename Scalar, MeshType M, typename Sh, int Order, typename W, typename E>
struct view_type_of<ShardedMatrix<Scalar, M, Sh, Order, W>, E> {
  static_assert(std::is_same_v<std::remove_const_t<E>, Scalar>,
                "shardwise::view: the pointer's element type is not the array's scalar type; declare the "
                "ShardedMatrix with the scalar type of the buffer");
  using type = ShardedMatrix<Scalar, M, Sh, Order, view_ownership<std::is_const_v<E>>>;
};

}  // namespace detail

/// A view of the caller's memory as this rank's block of an array of type A (an owning
/// ShardedMatrix type, which gives the scalar type, mesh, sharding and storage order):
/// `global_extents` {rows, cols}, this rank's element (i, j) at data[i * strides[0] + j *
/// strides[1]]; a const pointer gives a ConstView. Collective (see the top of this file).
template <typename A, typename E, MeshType M>
  requires detail::is_matrix_type_v<A>
auto view(const ProcessGroupMesh<M>& groups, std::array<std::int64_t, 2> global_extents, E* data,
          std::array<std::int64_t, 2> strides) {
  static_assert(std::is_same_v<M, typename A::mesh_type>,
                "shardwise::view: the ProcessGroupMesh is over another Mesh than the array type; declare the "
                "ShardedMatrix on the same Mesh<...> as the groups");
  using V = typename detail::view_type_of<A, E>::type;
  return V(groups, global_extents[0], global_extents[1], data, strides[0], strides[1]);
}

/// A view of an Eigen matrix, Map or Ref that holds this rank's block (its shape must be the
/// block's); the storage order is the Eigen object's, the strides its inner and outer strides.
/// Collective, like the form above.
template <typename A, typename Block, MeshType M>
  requires detail::is_matrix_type_v<A> &&
           requires(Block& d) { d.data(); d.outerStride(); d.innerStride(); std::remove_cvref_t<Block>::IsRowMajor; }
auto view(const ProcessGroupMesh<M>& groups, std::array<std::int64_t, 2> global_extents, Block&& block) {
  using Derived = std::remove_cvref_t<Block>;
  static_assert(std::is_lvalue_reference_v<Block> || !std::is_base_of_v<Eigen::PlainObjectBase<Derived>, Derived>,
                "shardwise::view: the Eigen matrix is a temporary, so the view would dangle; keep the matrix in a "
                "variable (or pass an Eigen::Map of memory that outlives the view)");
  static_assert(std::is_same_v<M, typename A::mesh_type>,
                "shardwise::view: the ProcessGroupMesh is over another Mesh than the array type; declare the "
                "ShardedMatrix on the same Mesh<...> as the groups");
  using E = std::remove_pointer_t<decltype(block.data())>;
  constexpr int order = Derived::IsRowMajor ? Eigen::RowMajor : Eigen::ColMajor;
  using Retyped = ShardedMatrix<typename A::scalar_type, typename A::mesh_type, typename A::sharding, order, Owning>;
  const std::int64_t outer = block.outerStride(), inner = block.innerStride();
  const std::array<std::int64_t, 2> strides = Derived::IsRowMajor ? std::array<std::int64_t, 2>{outer, inner}
                                                                  : std::array<std::int64_t, 2>{inner, outer};
  using V = typename detail::view_type_of<Retyped, E>::type;
  // The block's shape is checked with the global shape: a wrong one is every rank's error.
  LocalProblem problem;
  const detail::block_geometry& geo = groups.geometry();
  const std::int64_t want_rows = global_extents[0] < 0 ? 0 : geo.extent(global_extents[0], V::axes.dim(0));
  const std::int64_t want_cols = global_extents[1] < 0 ? 0 : geo.extent(global_extents[1], V::axes.dim(1));
  if (block.rows() != want_rows || block.cols() != want_cols)
    problem.set(detail::message({"the Eigen block is ", static_cast<std::int64_t>(block.rows()), " x ",
                                 static_cast<std::int64_t>(block.cols()), " but this rank's block of a ",
                                 global_extents[0], " x ", global_extents[1], " matrix is ", want_rows, " x ",
                                 want_cols}));
  agree_on_all_ranks(groups.world(), std::span<const std::int64_t>(global_extents), problem, "shardwise::view",
                     "the global shapes", "global rows|global columns");
  return V(groups, global_extents[0], global_extents[1], block.data(), strides[0], strides[1]);
}

/// The transpose of a matrix as a view of the same block: extents, sharding, storage order and
/// strides swapped, nothing copied and nothing communicated. Of an owning matrix, a view of its
/// block (it must not outlive the matrix); of a view, a view of the same memory.
template <typename X>
auto transposed(const X& x) {
  static_assert(detail::is_matrix_type_v<X>,
                "shardwise::transposed: the argument must be a shardwise::ShardedMatrix (owning or a view); for an "
                "N-D tensor, use shardwise::permuted<...>");
  using Scalar = typename X::scalar_type;
  using Sh = typename detail::transposed_sharding<typename X::sharding>::type;
  constexpr int order = X::storage_order == Eigen::RowMajor ? Eigen::ColMajor : Eigen::RowMajor;
  if constexpr (detail::is_view_ownership_v<typename X::ownership>) {
    using V = ShardedMatrix<Scalar, typename X::mesh_type, Sh, order, typename X::ownership>;
    return V(x.groups(), x.cols(), x.rows(), x.data(), x.stride(1), x.stride(0), detail::view_unchecked_t{});
  } else {
    x.check_valid("shardwise::transposed", "the matrix");
    using V = ShardedMatrix<Scalar, typename X::mesh_type, Sh, order, ConstView>;
    // The owning block is contiguous in its order: (i, j) at i * ld + j (row-major) or i + j * ld.
    const std::int64_t ld = X::storage_order == Eigen::RowMajor ? x.local_cols() : x.local_rows();
    const std::int64_t row_stride = X::storage_order == Eigen::RowMajor ? ld : 1;
    const std::int64_t col_stride = X::storage_order == Eigen::RowMajor ? 1 : ld;
    return V(x.groups(), x.cols(), x.rows(), x.local().data(), col_stride, row_stride, detail::view_unchecked_t{});
  }
}
/// A transposed view of a temporary would dangle: keep the matrix in a variable first.
template <typename Scalar, MeshType M, typename Sh, int Order>
void transposed(ShardedMatrix<Scalar, M, Sh, Order, Owning>&&) = delete;

/// The conjugate transpose Aᴴ, BLAS's op 'C': for real scalars, transposed(a) (a view, nothing
/// copied). For complex scalars, an owning matrix with the transposed sharding and storage
/// order whose block is this rank's block conjugated: one local pass over the block, no
/// communication, and the product's plan is the one of transposed(a). Conjugation commutes
/// with every step a plan takes (gathers, slices, sums), so the result is exact.
template <typename X>
auto adjoint(const X& x) {
  static_assert(detail::is_matrix_type_v<X>,
                "shardwise::adjoint: the argument must be a shardwise::ShardedMatrix (owning or a view)");
  using Scalar = typename X::scalar_type;
  if constexpr (!detail::is_complex_v<Scalar>) {
    return transposed(x);
  } else {
    x.check_valid("shardwise::adjoint", "the matrix");
    using Sh = typename detail::transposed_sharding<typename X::sharding>::type;
    constexpr int order = X::storage_order == Eigen::RowMajor ? Eigen::ColMajor : Eigen::RowMajor;
    ShardedMatrix<Scalar, typename X::mesh_type, Sh, order> result(x.groups(), x.cols(), x.rows(), detail::uninitialized);
    // The adjoint of a block in one order, stored in the other: the same memory layout, conjugated.
    result.local().noalias() = x.local().adjoint();
    return result;
  }
}
/// The adjoint of a real temporary would be a dangling view: keep the matrix in a variable first.
template <typename Scalar, MeshType M, typename Sh, int Order>
  requires(!detail::is_complex_v<Scalar>)
void adjoint(ShardedMatrix<Scalar, M, Sh, Order, Owning>&&) = delete;

}  // namespace shardwise
