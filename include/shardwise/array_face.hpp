// shardwise/array_face.hpp: what a layout policy means to DistributedArray beyond its order.
//
// detail::face_traits<Layout>: the Eigen types of a block and of a whole array, the words of
// the messages, the compile-time checks of the array's parameters, and which ranks agree on
// its extents. DistributedArray writes distribute, from_local, to_global and the agreement
// once; each layout's traits say only what differs. MatrixLayout's are here (with what the
// faces whose block is an Eigen matrix share), TensorLayout's in sharded_tensor.hpp,
// SequenceMajor's with the activations in nn/sharded_activation.hpp.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "shardwise/array_traits.hpp"
#include "shardwise/block_placement.hpp"
#include "shardwise/comm/any_communicator.hpp"
#include "shardwise/comm/types.hpp"
#include "shardwise/detail/failure.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/layout_policy.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/ownership.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise::detail {

/// An Eigen matrix of storage order Order: an owning matrix's or activation's block.
template <typename Scalar, int Order>
using dense_matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Order>;

/// Gives an Eigen block (a matrix, or an Eigen::Tensor) the extents `extents`.
template <typename Block, std::size_t N>
void eigen_resize(Block& block, const std::array<std::int64_t, N>& extents) {
  if constexpr (N == 2 && requires { block.resize(Eigen::Index{}, Eigen::Index{}); }) {
    block.resize(static_cast<Eigen::Index>(extents[0]), static_cast<Eigen::Index>(extents[1]));
  } else {
    std::array<Eigen::Index, N> dims{};
    for (std::size_t d = 0; d < N; ++d) dims[d] = static_cast<Eigen::Index>(extents[d]);
    block.resize(dims);
  }
}
/// The extents of an Eigen block: rows and columns of a matrix, the `Rank` dimensions of a tensor.
template <std::size_t Rank, typename Block>
auto eigen_extents(const Block& block) {
  if constexpr (requires { block.rows(); block.cols(); }) {
    return std::array<std::int64_t, 2>{static_cast<std::int64_t>(block.rows()), static_cast<std::int64_t>(block.cols())};
  } else {
    std::array<std::int64_t, Rank> e{};
    for (std::size_t d = 0; d < Rank; ++d) e[d] = static_cast<std::int64_t>(block.dimension(static_cast<Eigen::Index>(d)));
    return e;
  }
}
/// Element strides (rows, columns) of an Eigen matrix, map or ref.
template <typename Derived>
std::pair<std::int64_t, std::int64_t> eigen_strides(const Derived& m) {
  const std::int64_t outer = m.outerStride(), inner = m.innerStride();
  if constexpr (Derived::IsRowMajor) return {outer, inner};
  else return {inner, outer};
}

/// What a layout policy means beyond its storage order: the Eigen types of the block and of a
/// whole array, the words of the messages, and which ranks agree on the extents. Specialized
/// for MatrixLayout below, for TensorLayout in shardwise/sharded_tensor.hpp and for
/// SequenceMajor in shardwise/nn/sharded_activation.hpp.
template <typename Layout>
struct face_traits;

/// The number of dimensions of a sharding, or 1 for what is not a TensorSharding (so that
/// only the message that names that mistake is reported).
template <typename Sh>
constexpr std::size_t sharding_rank() {
  if constexpr (is_tensor_sharding_v<Sh>) return Sh::rank;
  else return 1;
}

/// Row-major when only the rows are split, column-major otherwise: the split dimension is then
/// the outer one, so the blocks of all ranks concatenate into the gathered matrix and an
/// AllGather along it lands in place. Anything that is not a matrix sharding gets column-major,
/// so that only the message that names the mistake is reported.
template <typename Sh>
constexpr int default_storage_order() {
  if constexpr (is_tensor_sharding_v<Sh>) {
    if constexpr (Sh::rank == 2)
      return (!Sh::dim_axes[0].empty() && Sh::dim_axes[1].empty()) ? Eigen::RowMajor : Eigen::ColMajor;
  }
  return Eigen::ColMajor;
}

/// checked_sharding for a matrix, reached only for a TensorSharding (a bare Split<...> has its
/// own message below, and no other).
template <typename M, typename Sh, bool IsTensorSharding>
struct matrix_sharding_check {
  static constexpr bool value = false;
};
template <typename M, typename Sh>
struct matrix_sharding_check<M, Sh, true> : checked_sharding<M, Sh, 2> {};

/// The checks a matrix sharding must pass, each with its own message.
template <typename M, typename Sh>
struct checked_matrix_sharding {
  static_assert(is_tensor_sharding_v<Sh>,
                "shardwise::ShardedMatrix<Scalar, Mesh, Sharding>: the sharding must be a "
                "shardwise::TensorSharding<rows, columns>, e.g. TensorSharding<Split<\"x\">, Replicated>; a bare "
                "Split<...> or Replicated describes one dimension only");
  // Deriving completes the inner checker, whose static_asserts then report a wrong rank or axis.
  static constexpr bool value = matrix_sharding_check<M, Sh, is_tensor_sharding_v<Sh>>::value;
  static_assert(sizeof(matrix_sharding_check<M, Sh, is_tensor_sharding_v<Sh>>) > 0);
};

/// The words and Eigen types shared by the faces whose block is an Eigen matrix.
template <int Order>
struct matrix_block_face {
  template <typename Scalar, std::size_t Rank>
  using container = dense_matrix<Scalar, Order>;
  template <typename Scalar, std::size_t Rank>
  using global = dense_matrix<Scalar, Eigen::ColMajor>;
  /// A contiguous block of `e` (rows, columns) at `data`, as an Eigen map (of const for a const
  /// Elem): an owning matrix's or activation's local().
  template <typename Elem>
  static auto map(Elem* data, const std::array<std::int64_t, 2>& e) {
    using Matrix = dense_matrix<std::remove_const_t<Elem>, Order>;
    using Map = Eigen::Map<std::conditional_t<std::is_const_v<Elem>, const Matrix, Matrix>>;
    return Map(data, static_cast<Eigen::Index>(e[0]), static_cast<Eigen::Index>(e[1]));
  }
  /// A view's block of `rows` x `cols` at `data` with element strides (row, column) `strides`,
  /// as an Eigen map with those strides: a matrix view's local().
  template <typename Elem>
  static auto strided_map(Elem* data, std::int64_t rows, std::int64_t cols, const tensor_extents& strides) {
    using Matrix = dense_matrix<std::remove_const_t<Elem>, Order>;
    using Stride = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
    using Map = Eigen::Map<std::conditional_t<std::is_const_v<Elem>, const Matrix, Matrix>, 0, Stride>;
    // Eigen's Stride is (outer, inner) in the map's storage order.
    const std::int64_t outer = Order == Eigen::RowMajor ? strides[0] : strides[1];
    const std::int64_t inner = Order == Eigen::RowMajor ? strides[1] : strides[0];
    return Map(data, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols), Stride(outer, inner));
  }
  /// "rows x cols" of a block.
  template <typename Block>
  static std::string block_text(const Block& block) {
    return message({static_cast<std::int64_t>(block.rows()), " x ", static_cast<std::int64_t>(block.cols())});
  }
};

/// MatrixLayout: ShardedMatrix.
template <int Order>
struct face_traits<MatrixLayout<Order>> : matrix_block_face<Order> {
  template <typename Sh>
  static constexpr std::size_t rank = 2;
  static constexpr const char* noun = "matrix";
  static constexpr const char* role = "the matrix";
  static constexpr const char* name = "shardwise::ShardedMatrix";
  static constexpr const char* distribute_op = "shardwise::ShardedMatrix::distribute";
  static constexpr const char* from_local_op = "shardwise::ShardedMatrix::from_local";
  static constexpr const char* to_global_op = "shardwise::ShardedMatrix::to_global";
  static constexpr const char* generate_op = "shardwise::ShardedMatrix::generate";
  /// Matrices are agreed on by every rank of the mesh.
  static constexpr bool agreed_by_all_ranks = true;
  /// What the agreements call the values: of an existing array, of the global arrays
  /// distributed, of an array made from blocks (from_local, generate, a view).
  static constexpr const char* agreed_what = "the global shapes";
  template <std::size_t Rank>
  static constexpr std::string_view agreed_names = "rows of the matrix|columns of the matrix";
  static constexpr const char* distributed_what = "the shapes of the global matrices";
  template <std::size_t Rank>
  static constexpr std::string_view distributed_names = "rows of the global matrix|columns of the global matrix";
  static constexpr const char* made_what = "the global shapes";
  template <std::size_t Rank>
  static constexpr std::string_view made_names = "global rows|global columns";

  template <std::size_t Rank>
  static constexpr dim_order global_order = matrix_order(Eigen::ColMajor);
  /// The block's Eigen extents for this rank's extents.
  template <std::size_t Rank>
  static std::array<std::int64_t, 2> block_extents(const tensor_extents& local) { return {local[0], local[1]}; }
  template <typename Global>
  static Global make_global(const tensor_extents& e) {
    return Global(e[0], e[1]);
  }
  static std::string shape_text(std::span<const std::int64_t> e) { return message({e[0], " x ", e[1]}); }

  /// scatter's root: sends every rank that holds a share of the matrix `global` (split as `axes`
  /// over `mesh`) its block, with tag `tag`, and puts its own in `own`.
  template <typename Mesh, typename Derived, typename Block>
  static void send_blocks(AnyCommunicator& world, const Mesh& mesh, const tensor_axes& axes,
                          const Eigen::MatrixBase<Derived>& global, int root, int tag, Block& own) {
    const std::int64_t shape[2] = {global.rows(), global.cols()};
    Block block;
    for (int r = 0; r < world.size(); ++r) {
      const block_geometry geo{mesh, mesh.unravel(r)};
      if (!holds_share(axes, geo)) continue;
      const std::int64_t r0 = geo.offset(shape[0], axes.dim(0)), c0 = geo.offset(shape[1], axes.dim(1));
      const std::int64_t rows = geo.extent(shape[0], axes.dim(0)), cols = geo.extent(shape[1], axes.dim(1));
      if (r == root) {
        own = global.block(r0, c0, rows, cols);
        continue;
      }
      block = global.block(r0, c0, rows, cols);
      world.send(std::span<const typename Block::Scalar>(block.data(), static_cast<std::size_t>(block.size())), r, tag);
    }
  }
  template <typename Scalar, typename M, typename Sh>
  struct checks {
    // The sharding first: a bad one is reported with its own message, once.
    static_assert(sizeof(checked_matrix_sharding<M, Sh>) > 0);
    static_assert(is_array_scalar_v<Scalar>,
                  "shardwise::ShardedMatrix: the scalar type must be float, double, std::complex<float> or "
                  "std::complex<double>");
    static_assert(Order == Eigen::RowMajor || Order == Eigen::ColMajor,
                  "shardwise::ShardedMatrix: the storage order must be Eigen::RowMajor or Eigen::ColMajor");
    static constexpr bool value = checked_matrix_sharding<M, Sh>::value;
  };
  template <typename Other>
  struct another_mesh {
    static_assert(dependent_false<Other>,
                  "shardwise::ShardedMatrix::distribute: the ProcessGroupMesh is over another Mesh than the matrix; "
                  "declare the ShardedMatrix on the same Mesh<...> as the groups");
  };
  template <bool Invocable>
  struct element_function {
    static_assert(Invocable,
                  "shardwise::ShardedMatrix::generate: the element function must take two std::int64_t global "
                  "indices, e.g. [](std::int64_t i, std::int64_t j) { return 1.0 / (1 + i + j); }");
  };
};

/// A whole N-D array in Eigen's Tensor module (a Tensor or a TensorMap), for distribute.
template <typename T>
concept row_major_tensor_like = requires(const T& t) {
  t.data();
  t.dimensions();
  T::Layout;
  T::NumDimensions;
};

/// The checks every array type makes of its parameters, each with its own message: the
/// layout's own (sharding, scalar, storage order), then the ownership.
template <typename Scalar, typename M, typename Sh, typename Layout, typename Ownership>
struct checked_array {
  static_assert(sizeof(typename face_traits<Layout>::template checks<Scalar, M, Sh>) > 0);
  static_assert(std::is_same_v<Ownership, Owning> || is_view_ownership_v<Ownership>,
                "shardwise::DistributedArray: the ownership must be shardwise::Owning, shardwise::View or "
                "shardwise::ConstView");
};

}  // namespace shardwise::detail
