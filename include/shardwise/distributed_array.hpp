// shardwise/distributed_array.hpp: the one distributed array type.
//
//   sw::DistributedArray<Scalar, Mesh, Sharding, Layout, Ownership>
//
// Every distributed array of the library is this class template, in the spirit of std::mdspan:
// three independent choices, each a type.
//   - Distribution, per dimension: the Sharding, a TensorSharding of Replicated or Split<axes...>
//     (blocks that differ by at most one, detail/partition.hpp), optionally with a pending sum
//     Partial<axes...>. The one place that maps a dimension to blocks is layout.hpp's
//     block_geometry, where a block-cyclic distribution would go.
//   - Local layout: a layout policy of layout_policy.hpp, the order this rank's block is stored in
//     (which the planner plans for) and how Eigen sees it: MatrixLayout<Eigen order> (an
//     Eigen matrix: ShardedMatrix), TensorLayout<order> (an Eigen::Tensor: ShardedTensor),
//     SequenceMajor<Eigen order> (an activation [b, s, m] as a matrix of tokens x m:
//     FeedForward's). A view of any layout may have any element strides: a leading dimension
//     larger than the block (ScaLAPACK's LLD), a transposed or permuted block.
//   - Ownership: Owning (the array allocates its block; distribute, from_local and every
//     result), View or ConstView (memory the caller keeps; shardwise/view.hpp).
// The names users write are aliases: ShardedMatrix<Scalar, Mesh, Sharding, Order, Ownership>
// (sharded_matrix.hpp), ShardedTensor<Scalar, Mesh, Sharding, Ownership> (sharded_tensor.hpp),
// ShardedActivation<Scalar, Mesh, Sharding> (nn/sharded_activation.hpp).
//
// One distribute, one from_local, one to_global, one agreement: each is written once here, and
// the layout's traits (detail::face_traits) say only what differs: the Eigen types, the words of
// the messages, and which ranks agree on an activation's shape (the ranks that share it).
//
// Every user-level operation is collective and first agrees on the global extents across the
// ranks (comm/consistency.hpp): a rank that passes other extents makes every rank throw the same
// exception, never a hang. The constructors are local (no communication): the first collective
// operation checks the extents, and its message says so.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "shardwise/comm/consistency.hpp"
#include "shardwise/detail/failure.hpp"
#include "shardwise/detail/fixed_string.hpp"
#include "shardwise/detail/separate_compilation.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/kernels/permute.hpp"
#include "shardwise/kernels/redistribute.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/layout_policy.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

/// Ownership of an array's block: the array allocates and frees it (the default).
struct Owning {};

namespace detail {
/// Ownership of an array's block: memory the caller keeps, writable through the array or not.
template <bool Const>
struct view_ownership {};
}  // namespace detail

/// Ownership: a view of memory the caller keeps and may write through (shardwise/view.hpp).
using View = detail::view_ownership<false>;
/// Ownership: a read-only view of memory the caller keeps (shardwise/view.hpp).
using ConstView = detail::view_ownership<true>;

template <typename Scalar, MeshType M, typename Sh, typename Layout, typename Ownership = Owning>
class DistributedArray;

namespace detail {

/// Tag: allocate without initializing.
struct uninitialized_t {};
inline constexpr uninitialized_t uninitialized{};
/// Tag: a view made from an array that was already checked (no check, no communication). A
/// view of an unusable array (moved from, released) is unusable as well (`moved`,
/// `released`): the next collective operation reports it on every rank.
struct view_unchecked_t {
  bool moved = false;
  bool released = false;
};

template <typename Scalar, int Order>
using dense_matrix = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Order>;

template <typename T>
inline constexpr bool is_view_ownership_v = false;
template <bool Const>
inline constexpr bool is_view_ownership_v<view_ownership<Const>> = true;

/// What a layout policy means beyond its storage order: the Eigen types of the block and of a
/// whole array, the words of the messages, and which ranks agree on the extents. Specialized
/// for MatrixLayout and SequenceMajor below, for TensorLayout in shardwise/sharded_tensor.hpp.
template <typename Layout>
struct face_traits;

/// "[2, 3, 4]" for messages.
[[gnu::noinline]] SHARDWISE_DECL std::string extents_text(std::span<const std::int64_t> extents)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  std::string text = "[";
  for (std::size_t d = 0; d < extents.size(); ++d) {
    if (d) text += ", ";
    text += std::to_string(extents[d]);
  }
  return text + "]";
}
#else
;
#endif

/// The number of dimensions of a sharding, or 1 for what is not a TensorSharding (so that
/// only the message that names that mistake is reported).
template <typename Sh>
constexpr std::size_t sharding_rank() {
  if constexpr (is_tensor_sharding_v<Sh>) return Sh::rank;
  else return 1;
}

/// This rank's block of an array of `rank` dimensions of `extents` split as `axes`: its extents
/// and where it starts. Negative extents count as empty (the callers report them). Out of line:
/// every array type shares it.
[[gnu::noinline]] SHARDWISE_DECL void place_block(int rank, const tensor_axes& axes, const block_geometry& geo,
                                                  const tensor_extents& extents, tensor_extents& local,
                                                  tensor_extents& offsets)
#if SHARDWISE_RUNTIME_DEFINITIONS
{
  for (int d = 0; d < rank; ++d) {
    const auto i = static_cast<std::size_t>(d);
    const std::int64_t e = extents[i] < 0 ? 0 : extents[i];
    local[i] = geo.extent(e, axes.dim(d));
    offsets[i] = geo.offset(e, axes.dim(d));
  }
}
#else
;
#endif

/// The same for an array's own arrays of `rank` extents: its block's extents and offsets and, for
/// an owning block (`contiguous` not null), the strides of a block contiguous in that order.
/// Throws, naming the array type `name`, for a negative extent when `check` is set. Out of line,
/// so that an array type's constructors stay a call (they are compiled once per array type).
[[gnu::noinline]] SHARDWISE_DECL void place_array(int rank, const std::int64_t* extents, const tensor_axes& axes,
                                                  const array_cycles& cycles, const block_geometry& geo,
                                                  const dim_order* contiguous, std::int64_t* local,
                                                  std::int64_t* offsets, tensor_extents& strides, const char* check)
#if SHARDWISE_RUNTIME_DEFINITIONS
{
  tensor_extents global{}, here{}, starts{};
  for (int d = 0; d < rank; ++d) {
    global[static_cast<std::size_t>(d)] = extents[d];
    if (check != nullptr && extents[d] < 0)
      fail({check, ": the extents ", extents_text({extents, static_cast<std::size_t>(rank)}), " have a negative one"});
  }
  place_block(rank, axes, geo, global, here, starts);
  // A block-cyclic dimension: NUMROC indices, the first of them the offset (INDXL2G of 0); a
  // SplitFirstLarger one: its own block.
  for (int d = 0; d < rank; ++d) {
    const auto i = static_cast<std::size_t>(d);
    if (cycles.block[i] == 0) continue;
    if (cycles.block[i] < 0) {
      std::tie(starts[i], here[i]) = first_larger_block(global[i] < 0 ? 0 : global[i], axes.dim(d), geo);
      continue;
    }
    const int parts = geo.group_size(axes.dim(d));
    if (cycles.first[i] >= parts)
      fail({check != nullptr ? check : "shardwise::view", ": BlockCyclic dimension ", static_cast<std::int64_t>(d),
            " puts its first block at coordinate ", static_cast<std::int64_t>(cycles.first[i]),
            " of an axis of extent ", static_cast<std::int64_t>(parts), "; give a coordinate from 0 to ",
            static_cast<std::int64_t>(parts - 1)});
    const BlockCyclicDim dim{global[i] < 0 ? 0 : global[i], cycles.block[i], cycles.first[i], parts};
    const int p = geo.group_rank(axes.dim(d));
    here[i] = dim.local_extent(p);
    starts[i] = here[i] > 0 ? dim.global_index(0, p) : 0;
  }
  for (int d = 0; d < rank; ++d) {
    local[d] = here[static_cast<std::size_t>(d)];
    offsets[d] = starts[static_cast<std::size_t>(d)];
  }
  if (contiguous != nullptr) strides = strides_of(here, *contiguous);
}
#else
;
#endif

/// Added to the message of a caller's block of the wrong extents: the partition rule.
inline constexpr const char* split_rule_note =
    " (Split<...> gives part i of n elements over p parts the elements from floor(i n / p) on, so the extra elements "
    "are spread over the later parts (10 over 4: 2, 3, 2, 3); SplitFirstLarger<...> gives them to the first parts "
    "(3, 3, 2, 2), as PETSc does; sw::local_extents_of<Array>(groups, extents) says which block each rank holds)";

/// What is wrong with a view's element `strides` for its block of `local` extents (`rank`
/// dimensions), or an empty text: a negative stride; a writable view with stride 0 along a
/// dimension of more than one element (each of them would land on one address); strides under
/// which two elements share an address, such as a leading dimension smaller than the block's
/// rows (ScaLAPACK's LLD_ >= local rows). A read-only view may repeat one element along a
/// dimension of stride 0 (a broadcast). Out of line: every view type shares it.
[[gnu::noinline]] SHARDWISE_DECL std::string view_stride_problem(int rank, const std::int64_t* local,
                                                                 const std::int64_t* strides, bool writable)
#if SHARDWISE_RUNTIME_DEFINITIONS
{
  std::array<int, max_tensor_rank> order{};  // the dimensions of more than one element, by stride
  int count = 0;
  for (int d = 0; d < rank; ++d) {
    if (strides[d] < 0)
      return message({"the strides ", extents_text({strides, static_cast<std::size_t>(rank)}),
                      " are negative; give element strides >= 0"});
    if (local[d] == 0) return {};  // an empty block: no element, no address
  }
  for (int d = 0; d < rank; ++d) {
    if (local[d] <= 1) continue;
    if (strides[d] == 0) {
      if (!writable) continue;  // a broadcast input
      return message({"dimension ", static_cast<std::int64_t>(d), " has stride 0 but this rank's block has ", local[d],
                      " elements along it, which would all be written at one address; give a stride of at least 1 "
                      "(a read-only view may repeat an element)"});
    }
    order[static_cast<std::size_t>(count++)] = d;
  }
  const auto at = [&](int i) -> int& { return order[static_cast<std::size_t>(i)]; };
  for (int i = 1; i < count; ++i)  // by stride, an insertion sort (std::sort trips g++ 12's -Warray-bounds here)
    for (int j = i; j > 0 && strides[at(j)] < strides[at(j - 1)]; --j) std::swap(at(j), at(j - 1));
  std::int64_t span = 0;  // the largest offset of the dimensions of smaller stride
  for (int i = 0; i < count; ++i) {
    const int d = order[static_cast<std::size_t>(i)];
    if (i > 0 && strides[d] <= span)
      return message({"the strides ", extents_text({strides, static_cast<std::size_t>(rank)}),
                      " make elements of this rank's block ", extents_text({local, static_cast<std::size_t>(rank)}),
                      " share an address: dimension ", static_cast<std::int64_t>(d), "'s stride ", strides[d],
                      " is not above ", span, ", the offset the dimensions of smaller stride reach; give a stride (a "
                      "leading dimension) of at least ", span + 1});
    span += (local[d] - 1) * strides[d];
  }
  return {};
}
#else
;
#endif

/// A global index, one per dimension (the parameter pack of generate's element function).
template <std::size_t>
using global_index = std::int64_t;
/// True when F can be called with N global indices (std::int64_t each).
template <typename F, std::size_t N, typename = std::make_index_sequence<N>>
inline constexpr bool invocable_with_indices_v = false;
template <typename F, std::size_t N, std::size_t... I>
inline constexpr bool invocable_with_indices_v<F, N, std::index_sequence<I...>> =
    std::is_invocable_v<F, global_index<I>...>;

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

// ---- the matrix and activation faces ----------------------------------------------------------

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

/// SequenceMajor: the activations of FeedForward, X[b, s, m] as a matrix of tokens x m.
template <int Order>
struct face_traits<SequenceMajor<Order>> : matrix_block_face<Order> {
  template <typename Sh>
  static constexpr std::size_t rank = 3;
  static constexpr const char* noun = "activation";
  static constexpr const char* role = "the activation";
  static constexpr const char* name = "shardwise::ShardedActivation";
  static constexpr const char* distribute_op = "shardwise::ShardedActivation::distribute";
  static constexpr const char* from_local_op = "shardwise::ShardedActivation::from_local";
  static constexpr const char* to_global_op = "shardwise::ShardedActivation::to_global";
  static constexpr const char* generate_op = "shardwise::ShardedActivation::generate";
  /// Replicated means "not split over that axis": along the axes the sharding does not name,
  /// each group of ranks holds its own activation (data-parallel replicas, pipeline stages), so
  /// only the ranks that share one (the group along the axes it names) agree on its shape.
  static constexpr bool agreed_by_all_ranks = false;
  static constexpr const char* agreed_what = "the shapes [b, s, m]";
  template <std::size_t Rank>
  static constexpr std::string_view agreed_names = "batch b|sequence s|width m";
  static constexpr const char* distributed_what = agreed_what;
  template <std::size_t Rank>
  static constexpr std::string_view distributed_names = agreed_names<Rank>;
  static constexpr const char* made_what = agreed_what;
  template <std::size_t Rank>
  static constexpr std::string_view made_names = agreed_names<Rank>;

  template <std::size_t Rank>
  static constexpr dim_order global_order = activation_order(Eigen::ColMajor);
  template <std::size_t Rank>
  static std::array<std::int64_t, 2> block_extents(const tensor_extents& local) {
    return {local[0] * local[1], local[2]};
  }
  template <typename Global>
  static Global make_global(const tensor_extents& e) {
    return Global(e[0] * e[1], e[2]);
  }
  static std::string shape_text(std::span<const std::int64_t> e) { return extents_text(e); }

  template <typename Scalar, typename M, typename Sh>
  struct checks {
    static_assert(is_tensor_sharding_v<Sh>,
                  "shardwise::ShardedActivation: an activation X[b, s, m] needs a TensorSharding of three "
                  "dimensions (batch, sequence, model), e.g. TensorSharding<Replicated, Split<\"tp\">, Replicated>");
    static constexpr bool value = [] {
      if constexpr (!is_tensor_sharding_v<Sh>) {
        return false;
      } else {
        static_assert(Sh::rank == 3,
                      "shardwise::ShardedActivation: an activation X[b, s, m] needs a TensorSharding of three "
                      "dimensions (batch, sequence, model), e.g. TensorSharding<Replicated, Split<\"tp\">, "
                      "Replicated>");
        static_assert(!Sh::is_partial, "shardwise::ShardedActivation: an activation cannot be Partial; reduce it first");
        if constexpr (Sh::rank != 3 || Sh::is_partial) return false;
        else return checked_sharding<M, Sh, 3>::value;
      }
    }();
    static_assert(is_array_scalar_v<Scalar>,
                  "shardwise::ShardedActivation: the scalar type must be float, double, std::complex<float> or "
                  "std::complex<double>");
  };
  template <typename Other>
  struct another_mesh {
    static_assert(dependent_false<Other>,
                  "shardwise::ShardedActivation::distribute: the ProcessGroupMesh is over another Mesh than the "
                  "activation; declare it on the same Mesh<...> as the groups");
  };
  template <bool Invocable>
  struct element_function {
    static_assert(Invocable,
                  "shardwise::ShardedActivation::generate: the element function must take three std::int64_t "
                  "global indices (b, s, m)");
  };
};

}  // namespace detail

/// A distributed array (see the top of this file): Sharding says how its dimensions are split
/// over the mesh M, Layout how this rank's block is stored (layout_policy.hpp), Ownership whether the
/// array owns the block. Users write the aliases ShardedMatrix, ShardedTensor and
/// ShardedActivation; the members that only make sense for one layout (rows() of a matrix,
/// batch() of an activation, local() as an Eigen matrix or tensor) exist only for it.
///
/// Copying an owning array copies its block; copying a view copies the pointer.
template <typename Scalar, MeshType M, typename Sh, typename Layout, typename Ownership>
class DistributedArray {
  // Completing the checker instantiates its static_asserts: a bad parameter is reported once,
  // with its own message, before anything else uses it.
  static_assert(sizeof(detail::checked_array<Scalar, M, Sh, Layout, Ownership>) > 0);
  using face = detail::face_traits<Layout>;
  static constexpr bool owning = std::is_same_v<Ownership, Owning>;
  static constexpr detail::array_face face_kind = Layout::face;
  static_assert(!owning || face_kind != detail::array_face::tensor ||
                    Layout::template order<face::template rank<Sh>> ==
                        detail::dim_order::row_major(static_cast<int>(face::template rank<Sh>)),
                "shardwise::ShardedTensor: an owning tensor's block is a row-major Eigen::Tensor, so its layout is "
                "TensorLayout<> (row-major); other orders are for views (shardwise::permuted)");

 public:
  using scalar_type = Scalar;    ///< The element type: float, double or a std::complex of one.
  using mesh_type = M;           ///< The mesh it is distributed over.
  using sharding = Sh;           ///< How its dimensions are split (a TensorSharding).
  using layout_type = Layout;    ///< How this rank's block is stored (layout_policy.hpp).
  using ownership = Ownership;   ///< Owning, View or ConstView.
  /// Number of dimensions.
  static constexpr std::size_t rank = face::template rank<Sh>;
  /// Global (or local) extents, one per dimension.
  using extents_type = std::array<std::int64_t, rank>;
  /// The element type as the array's block is reached: const for a ConstView.
  using element_type = std::conditional_t<std::is_same_v<Ownership, ConstView>, const Scalar, Scalar>;
  /// The block's storage order, outermost dimension first: what the planner plans for.
  static constexpr detail::dim_order storage = Layout::template order<rank>;
  /// Eigen's storage order of the block (Eigen::RowMajor or Eigen::ColMajor; an owning tensor's
  /// Eigen::Tensor is row-major).
  static constexpr int storage_order = Layout::eigen_order;
  /// An owning block as Eigen holds it (an Eigen matrix, or an Eigen::Tensor).
  using local_block = typename face::template container<Scalar, rank>;
  /// A whole array as to_global() returns it (a column-major Eigen matrix, or an Eigen::Tensor).
  using global_type = typename face::template global<Scalar, rank>;
  ///@{
  /// The same under the names of each layout's Eigen type.
  using local_matrix = local_block;
  using global_matrix = global_type;
  using local_tensor = local_block;
  using global_tensor = global_type;
  ///@}
  /// The names of its extents in the messages of a failed agreement.
  static constexpr std::string_view extent_names = face::template agreed_names<rank>;

  /// The sharding resolved against the mesh: the mesh axes splitting each dimension.
  static constexpr detail::tensor_axes axes = [] {
    if constexpr (face::template checks<Scalar, M, Sh>::value)
      return detail::tensor_axes::of(detail::resolve_sharding<M, Sh>());
    else
      return detail::tensor_axes{};
  }();
  /// The dimensions placed otherwise than Split's blocks: BlockCyclic<axis, NB, First>'s block
  /// sizes and first blocks' coordinates, SplitFirstLarger's blocks (0 for the others).
  static constexpr detail::array_cycles cycles = [] {
    detail::array_cycles c;
    if constexpr (detail::is_tensor_sharding_v<Sh>)
      for (std::size_t d = 0; d < rank && d < Sh::rank; ++d) {
        c.block[d] = Sh::dim_cycle[d];
        c.first[d] = Sh::dim_first[d];
      }
    return c;
  }();
  /// Whether a dimension is block-cyclic (ScaLAPACK's layout: its block's extents are NUMROC's,
  /// and offsets() holds the global index of each dimension's first local index) or
  /// SplitFirstLarger: the array reaches Split's blocks, and the whole array, by a redistribution.
  static constexpr bool redistributed = cycles.any();
  static_assert(!redistributed || ![] {
                  if constexpr (detail::is_tensor_sharding_v<Sh>) return Sh::is_partial;
                  else return false;
                }(),
                "shardwise::DistributedArray: a BlockCyclic or SplitFirstLarger array cannot hold a pending sum "
                "(Partial); reduce it in a block sharding, then reshard it");

  // ---- construction (local: no communication) ------------------------------------------------

  /// A zero array of the given global extents. Local: nothing compares the extents across
  /// ranks here; the first collective operation on the array does, and its error says so.
  DistributedArray(const ProcessGroupMesh<M>& groups, const extents_type& extents)
    requires owning
      : DistributedArray(groups, extents, detail::uninitialized) {
    zero();
  }
  /// An array whose block is allocated but not initialized, for kernels that write all of it.
  DistributedArray(const ProcessGroupMesh<M>& groups, const extents_type& extents, detail::uninitialized_t)
    requires owning
      : groups_(groups), extents_(extents) {
    (void)groups_.state(face::name);  // a moved-from mesh cannot hold an array
    place(face::name);
    resize_block();
  }
  /// A zero matrix of the given global shape (local, as above).
  DistributedArray(const ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols)
    requires(owning && face_kind == detail::array_face::matrix)
      : DistributedArray(groups, extents_type{rows, cols}) {}
  /// The same, its block allocated but not initialized.
  DistributedArray(const ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols, detail::uninitialized_t)
    requires(owning && face_kind == detail::array_face::matrix)
      : DistributedArray(groups, extents_type{rows, cols}, detail::uninitialized) {}
  /// A zero activation of global shape [b, s, m] (local, as above).
  DistributedArray(const ProcessGroupMesh<M>& groups, std::int64_t b, std::int64_t s, std::int64_t m)
    requires(owning && face_kind == detail::array_face::tokens)
      : DistributedArray(groups, extents_type{b, s, m}) {}
  /// The same, its block allocated but not initialized.
  DistributedArray(const ProcessGroupMesh<M>& groups, std::int64_t b, std::int64_t s, std::int64_t m,
                   detail::uninitialized_t)
    requires(owning && face_kind == detail::array_face::tokens)
      : DistributedArray(groups, extents_type{b, s, m}, detail::uninitialized) {}

  /// A view of this rank's block of an array of global `extents` at `data`, element (i0, i1,
  /// ...) at data[i0 * strides[0] + i1 * strides[1] + ...], `local` the block's extents as the
  /// caller holds them (`what` names the block in messages). Collective: the extents are agreed
  /// on all ranks, and every rank's block is checked against the array's partition (`local`)
  /// and its strides (no two elements at one address; a writable view has no stride 0 along
  /// more than one element); a problem on any rank is every rank's error. sw::view is the usual
  /// way to call it.
  DistributedArray(const ProcessGroupMesh<M>& groups, const extents_type& extents, element_type* data,
                   const extents_type& strides, const extents_type& local, const char* what = "the block")
    requires(!owning)
      : DistributedArray(groups, extents, data, strides, detail::view_unchecked_t{}) {
    check_view(&local, what);
  }
  /// The same without the caller's local extents: only the strides are checked against the
  /// block the partition gives this rank. (Deprecated in sw::view: give the local extents.)
  DistributedArray(const ProcessGroupMesh<M>& groups, const extents_type& extents, element_type* data,
                   const extents_type& strides)
    requires(!owning)
      : DistributedArray(groups, extents, data, strides, detail::view_unchecked_t{}) {
    check_view(nullptr, "the block");
  }
  /// No check and no communication: for views made from an array already checked (transposed,
  /// permuted).
  DistributedArray(const ProcessGroupMesh<M>& groups, const extents_type& extents, element_type* data,
                   const extents_type& strides, detail::view_unchecked_t from)
    requires(!owning)
      : groups_(groups), extents_(extents), released_(from.released), moved_(from.moved) {
    block_.ptr = data;
    for (std::size_t d = 0; d < rank; ++d) strides_[d] = strides[d];
    if (groups_) place();
  }

  // ---- from data every rank holds, or each rank's block (collective) ------------------------------

  /// From a global matrix that every rank holds (any Eigen matrix or expression): no
  /// communication but the agreement on its shape.
  template <typename Derived>
    requires(owning && face_kind == detail::array_face::matrix)
  static DistributedArray distribute(const ProcessGroupMesh<M>& groups, const Eigen::MatrixBase<Derived>& global) {
    if constexpr (requires { global.derived().data(); global.derived().outerStride(); }) {
      const auto [row_stride, col_stride] = eigen_strides(global.derived());
      const std::int64_t extents[] = {global.rows(), global.cols()};
      return distribute_from(groups, extents, {}, face::distributed_what, face::template distributed_names<rank>,
                             global.derived().data(), {row_stride, col_stride});
    } else {  // an expression: evaluated once, then the same copy
      const global_type plain = global;
      return distribute(groups, plain);
    }
  }
  /// From the whole activation (b * s sequence-major rows x m), held by every rank: no
  /// communication but the agreement, among the ranks that share it, on its shape.
  template <typename Derived>
    requires(owning && face_kind == detail::array_face::tokens)
  static DistributedArray distribute(const ProcessGroupMesh<M>& groups, const Eigen::MatrixBase<Derived>& global,
                                     std::int64_t b, std::int64_t s) {
    if constexpr (requires { global.derived().data(); global.derived().outerStride(); }) {
      LocalProblem problem;
      if (global.rows() != b * s)
        problem.set(detail::message({"the global matrix has ", static_cast<std::int64_t>(global.rows()),
                                     " rows but b * s = ", b * s,
                                     " (rows are tokens, sequence-major: row = s_index * b + b_index)"}));
      const auto [row_stride, col_stride] = eigen_strides(global.derived());
      const std::int64_t extents[] = {b, s, global.cols()};
      // Token (b_index, s_index) is row s_index * b + b_index.
      return distribute_from(groups, extents, problem, face::distributed_what, face::template distributed_names<rank>,
                             global.derived().data(), {row_stride, b * row_stride, col_stride});
    } else {
      const global_type plain = global;
      return distribute(groups, plain, b, s);
    }
  }
  /// From a global row-major tensor that every rank holds (Eigen::Tensor<Scalar, rank,
  /// Eigen::RowMajor>, or a TensorMap of one): no communication but the agreement on its extents.
  template <detail::row_major_tensor_like Global>
    requires(owning && face_kind == detail::array_face::tensor)
  static DistributedArray distribute(const ProcessGroupMesh<M>& groups, const Global& global) {
    static_assert(sizeof(typename face::template check_global<Global, Scalar, rank>) > 0);
    extents_type extents{};
    for (std::size_t d = 0; d < rank; ++d) extents[d] = static_cast<std::int64_t>(global.dimensions()[d]);
    detail::tensor_extents padded{};
    for (std::size_t d = 0; d < rank; ++d) padded[d] = extents[d];
    return distribute_from(groups, extents, {}, face::distributed_what, face::template distributed_names<rank>, global.data(),
                           detail::strides_of(padded, detail::dim_order::row_major(static_cast<int>(rank))));
  }
  /// Groups over another Mesh type than the array's: the static_assert that says so (at the
  /// call: the return type is deduced there).
  template <typename Other, typename... Rest>
    requires(!std::same_as<Other, M>)
  static auto distribute(const ProcessGroupMesh<Other>&, const Rest&...) {
    static_assert(sizeof(typename face::template another_mesh<Other>) > 0);
  }

  /// An array whose element at global index (i, j, ...) is `element(i, j, ...)` (one
  /// std::int64_t per dimension), each rank calling it only for the elements of its own block:
  /// how a numerical code fills a distributed matrix from a formula without holding or sending
  /// the whole. Collective only through the extents' agreement. Of a Partial, the rank that holds
  /// the value computes it and the others hold zeros, as in distribute.
  template <typename Element>
    requires owning
  static DistributedArray generate(const ProcessGroupMesh<M>& groups, const extents_type& extents,
                                   Element&& element) {
    static_assert(sizeof(typename face::template element_function<detail::invocable_with_indices_v<Element&, rank>>) > 0);
    if constexpr (detail::invocable_with_indices_v<Element&, rank>) {
      agree_among(groups, extents, {}, face::generate_op, "the extents", face::template made_names<rank>);
      DistributedArray result(groups, extents, detail::uninitialized);
      if (!result.holds_partial_share()) {
        result.zero();
        return result;
      }
      // Each element in the block's storage order, its global index from each dimension's
      // runs (one run per dimension for blocks; runs of NB for a block-cyclic dimension).
      std::array<std::vector<std::int64_t>, rank> global_of{};
      const detail::block_geometry& geo = groups.geometry();
      for (std::size_t d = 0; d < rank; ++d)
        for (const IndexRun& run : detail::held_runs(extents[d], axes.dim(static_cast<int>(d)), cycles,
                                                     static_cast<int>(d), geo))
          for (std::int64_t k = 0; k < run.length; ++k) global_of[d].push_back(run.global + k);
      extents_type local_index{}, index{};
      for (std::size_t d = 0; d < rank; ++d) index[d] = result.local_[d] > 0 ? global_of[d][0] : 0;
      Scalar* out = result.block_.data();
      const std::int64_t count = result.local_size();
      for (std::int64_t e = 0; e < count; ++e) {
        out[e] = static_cast<Scalar>(std::apply(element, index));
        for (int i = storage.rank; i-- > 0;) {
          const auto d = static_cast<std::size_t>(storage[i]);
          if (++local_index[d] < result.local_[d]) {
            index[d] = global_of[d][static_cast<std::size_t>(local_index[d])];
            break;
          }
          local_index[d] = 0;
          index[d] = global_of[d][0];
        }
      }
      return result;
    } else {
      return DistributedArray(groups, extents);
    }
  }

  /// From this rank's block, such as a kernel's output: it must have this rank's extents, and
  /// the global extents must be the same on every rank (collective).
  static DistributedArray from_local(const ProcessGroupMesh<M>& groups, const extents_type& extents, local_block block)
    requires owning
  {
    LocalProblem problem;
    detail::tensor_extents global{}, want{}, starts{};
    for (std::size_t d = 0; d < rank; ++d) global[d] = extents[d];
    detail::place_block(static_cast<int>(rank), axes, groups.geometry(), global, want, starts);
    if (block_extents_of(block) != face::template block_extents<rank>(want))
      problem.set(detail::message({"the block is ", block_text_of(block_extents_of(block)), " but this rank's block of a ",
                                   face::shape_text(extents), " ", face::noun, " is ",
                                   block_text_of(face::template block_extents<rank>(want))}));
    agree_among(groups, extents, problem, face::from_local_op, face::made_what, face::template made_names<rank>);
    DistributedArray result(groups, extents, detail::uninitialized);
    result.block_.block = std::move(block);
    return result;
  }
  /// The same for a matrix of `rows` x `cols`.
  static DistributedArray from_local(const ProcessGroupMesh<M>& groups, std::int64_t rows, std::int64_t cols,
                                     local_block block)
    requires(owning && face_kind == detail::array_face::matrix)
  {
    return from_local(groups, extents_type{rows, cols}, std::move(block));
  }
  /// The same for an activation [b, s, m] (its block: local tokens x local m).
  static DistributedArray from_local(const ProcessGroupMesh<M>& groups, std::int64_t b, std::int64_t s,
                                     std::int64_t m, local_block block)
    requires(owning && face_kind == detail::array_face::tokens)
  {
    return from_local(groups, extents_type{b, s, m}, std::move(block));
  }

  /// From a global matrix that only `root` (a world rank) holds: it sends every rank its block.
  template <typename Derived>
    requires(owning && face_kind == detail::array_face::matrix)
  static DistributedArray scatter(const ProcessGroupMesh<M>& groups, const Eigen::MatrixBase<Derived>& global,
                                  int root = 0) {
    AnyCommunicator& world = groups.world();
    // Before the broadcast, whose own check would name broadcast rather than scatter.
    if (root < 0 || root >= world.size())
      throw std::invalid_argument("shardwise::ShardedMatrix::scatter: root " + std::to_string(root) +
                                  " is not a rank of the mesh; give a rank from 0 to " +
                                  std::to_string(world.size() - 1));
    std::int64_t shape[2] = {global.rows(), global.cols()};
    world.broadcast(std::span<std::int64_t>(shape), root);
    DistributedArray result(groups, shape[0], shape[1]);
    constexpr int tag = 0x5e1;
    if (groups.rank() == root) {
      local_block block;
      for (int r = 0; r < world.size(); ++r) {
        const detail::block_geometry geo{groups.mesh(), groups.mesh().unravel(r)};
        if (!holds_share_at(geo)) continue;
        const std::int64_t r0 = geo.offset(shape[0], axes.dim(0)), c0 = geo.offset(shape[1], axes.dim(1));
        const std::int64_t rows = geo.extent(shape[0], axes.dim(0)), cols = geo.extent(shape[1], axes.dim(1));
        if (r == root) {
          result.block_.block = global.block(r0, c0, rows, cols);
          continue;
        }
        block = global.block(r0, c0, rows, cols);
        world.send(std::span<const Scalar>(block.data(), static_cast<std::size_t>(block.size())), r, tag);
      }
    } else if (result.holds_partial_share()) {
      world.recv(std::span<Scalar>(result.block_.data(), static_cast<std::size_t>(result.local_size())), root, tag);
    }
    return result;
  }

  /// The whole array on every rank (reduces a Partial, then gathers). Collective (over the
  /// ranks that share an activation).
  [[nodiscard]] global_type to_global() const {
    agree(face::to_global_op);
    global_type global = face::template make_global<global_type>(global_extents());
    constexpr detail::dim_order global_order = face::template global_order<rank>;
    if constexpr (redistributed) {
      // Every rank sends every other its blocks, which land where the index maps say.
      std::vector<Scalar> send, receive;
      detail::redistribute<Scalar>(groups_.state("to_global"), own_placement(), replicated_placement(),
                                   global_extents(), data(), strides_, global.data(),
                                   detail::strides_of(global_extents(), global_order), send, receive);
    } else {
      detail::execute<detail::reshard_program<M, Sh, replicated_sharding_t<rank>, storage, global_order>, Scalar>(
          groups_.state("to_global"), {{{}, {}, global_extents()}},
          {.c = data(), .out = global.data(), .strides = {nullptr, nullptr, view_strides()}});
    }
    return global;
  }

  // ---- shape and block ------------------------------------------------------------------------

  /// Global extents.
  [[nodiscard]] const extents_type& extents() const noexcept { return extents_; }
  /// Global extent of dimension `d` (std::out_of_range when d >= rank).
  [[nodiscard]] std::int64_t extent(std::size_t d) const { return extents_.at(d); }
  /// This rank's block: its extents and where it starts in each dimension.
  ///@{
  [[nodiscard]] const extents_type& local_extents() const noexcept { return local_; }
  [[nodiscard]] const extents_type& offsets() const noexcept { return offsets_; }
  ///@}
  /// Element stride of dimension `d` of this rank's block.
  [[nodiscard]] std::int64_t stride(std::size_t d) const { return strides_.at(d); }
  /// The element strides of this rank's block, one per dimension (the rest 0).
  [[nodiscard]] const detail::tensor_extents& local_strides() const noexcept { return strides_; }
  /// This rank's block where it lies (the array's storage, or the caller's memory for a view).
  ///@{
  [[nodiscard]] element_type* data() noexcept { return block_.data(); }
  [[nodiscard]] const Scalar* data() const noexcept { return block_.data(); }
  ///@}
  /// The extents as the planner's values (padded to max_tensor_rank).
  [[nodiscard]] detail::tensor_extents global_extents() const {
    detail::tensor_extents e{};
    for (std::size_t d = 0; d < rank; ++d) e[d] = extents_[d];
    return e;
  }

  /// A matrix's global shape, and this rank's block of it.
  ///@{
  [[nodiscard]] std::int64_t rows() const noexcept requires(rank == 2) { return extents_[0]; }
  [[nodiscard]] std::int64_t cols() const noexcept requires(rank == 2) { return extents_[1]; }
  [[nodiscard]] std::int64_t local_rows() const noexcept requires(rank == 2) { return local_[0]; }
  [[nodiscard]] std::int64_t local_cols() const noexcept requires(rank == 2) { return local_[1]; }
  [[nodiscard]] std::int64_t row_offset() const noexcept requires(rank == 2) { return offsets_[0]; }
  [[nodiscard]] std::int64_t col_offset() const noexcept requires(rank == 2) { return offsets_[1]; }
  ///@}

  /// An activation's global extents b, s and m; this rank's extents and offsets along them
  /// (local_tokens() = local_batch() * local_seq(), the rows of local()).
  ///@{
  [[nodiscard]] std::int64_t batch() const noexcept requires(face_kind == detail::array_face::tokens) { return extents_[0]; }
  [[nodiscard]] std::int64_t seq() const noexcept requires(face_kind == detail::array_face::tokens) { return extents_[1]; }
  [[nodiscard]] std::int64_t model() const noexcept requires(face_kind == detail::array_face::tokens) { return extents_[2]; }
  [[nodiscard]] std::int64_t local_batch() const noexcept requires(face_kind == detail::array_face::tokens) { return local_[0]; }
  [[nodiscard]] std::int64_t local_seq() const noexcept requires(face_kind == detail::array_face::tokens) { return local_[1]; }
  [[nodiscard]] std::int64_t local_m() const noexcept requires(face_kind == detail::array_face::tokens) { return local_[2]; }
  [[nodiscard]] std::int64_t local_tokens() const noexcept requires(face_kind == detail::array_face::tokens) {
    return local_[0] * local_[1];
  }
  [[nodiscard]] std::int64_t batch_offset() const noexcept requires(face_kind == detail::array_face::tokens) { return offsets_[0]; }
  [[nodiscard]] std::int64_t seq_offset() const noexcept requires(face_kind == detail::array_face::tokens) { return offsets_[1]; }
  [[nodiscard]] std::int64_t m_offset() const noexcept requires(face_kind == detail::array_face::tokens) { return offsets_[2]; }
  ///@}
  /// Gives an owning activation a new global shape, keeping the storage when the block size is
  /// unchanged. Local.
  void reshape(std::int64_t b, std::int64_t s, std::int64_t m)
    requires(owning && face_kind == detail::array_face::tokens)
  {
    if (b < 0 || s < 0 || m < 0)
      detail::fail({"shardwise::ShardedActivation::reshape: the shape [", b, ", ", s, ", ", m, "] has a negative extent"});
    extents_ = {b, s, m};
    place();
    resize_block();
  }

  /// This rank's block as Eigen sees it: a map over contiguous storage for an owning matrix or
  /// activation, a map with the view's strides for a matrix view, the Eigen::Tensor itself for
  /// an owning tensor.
  ///@{
  [[nodiscard]] decltype(auto) local() requires(owning || face_kind == detail::array_face::matrix) {
    return local_of(*this);
  }
  [[nodiscard]] decltype(auto) local() const requires(owning || face_kind == detail::array_face::matrix) {
    return local_of(*this);
  }
  ///@}

  /// Moves this rank's block out. The array is then unusable: every operation on it throws
  /// std::logic_error (as on a moved-from one) until an array is assigned to it.
  [[nodiscard]] local_block release() && requires owning {
    released_ = true;
    return std::move(block_.block);
  }
  /// True once release() has moved the block out (never for a view).
  [[nodiscard]] bool released() const noexcept { return released_; }

  /// Copying an owning array copies its block; copying a view copies the pointer.
  ///@{
  DistributedArray(const DistributedArray&) = default;
  DistributedArray& operator=(const DistributedArray&) = default;
  ///@}
  /// Moving takes the block. The array moved from keeps its groups (a shared handle), so that
  /// an operation on it by mistake still takes part in the ranks' agreement and every rank
  /// throws the same error, instead of this rank throwing alone while the others wait.
  ///@{
  DistributedArray(DistributedArray&& other) noexcept
      : groups_(other.groups_), extents_(other.extents_), local_(other.local_), offsets_(other.offsets_),
        strides_(other.strides_), block_(std::move(other.block_)), released_(other.released_),
        moved_(other.moved_) {
    other.moved_ = true;
  }
  DistributedArray& operator=(DistributedArray&& other) noexcept {
    if (this == &other) return *this;
    groups_ = other.groups_;
    extents_ = other.extents_;
    local_ = other.local_;
    offsets_ = other.offsets_;
    strides_ = other.strides_;
    block_ = std::move(other.block_);
    released_ = other.released_;
    moved_ = other.moved_;
    other.moved_ = true;
    return *this;
  }
  ///@}
  ~DistributedArray() = default;  ///< Frees an owning block.

  // ---- validity and agreement ------------------------------------------------------------------

  /// The groups it lives on (a handle that shares them).
  [[nodiscard]] const ProcessGroupMesh<M>& groups() const noexcept { return groups_; }
  /// False once moved from (it then holds no block) or released. (Accessors such as extents(),
  /// local_extents() and groups() are exempt from the checks: they answer with what the array
  /// last held; every operation checks.)
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(groups_) && !released_ && !moved_; }
  /// std::logic_error naming `operation` and `role` ("A") when moved from or released.
  void check_valid(const char* operation, const char* role) const {
    if (!valid()) detail::throw_unusable(operation, role, face::noun, released_);
  }
  /// Collective: every rank holds this array with the same global extents (at
  /// CheckLevel::cross_rank), else every rank throws the same error; and it was not moved from.
  void agree(const char* operation, const char* role = face::role) const {
    if (!groups_) check_valid(operation, role);  // bound to no groups: nothing to agree over
    LocalProblem problem;
    if (!valid()) problem.set(detail::unusable_text(role, face::noun, released_), LocalProblem::Kind::logic_error);
    agree_among(groups_, extents_, problem, operation, face::agreed_what, face::template agreed_names<rank>,
                detail::constructed_locally);
  }
  /// What the agreement of an operation needs of it, as its operand `role` ("A").
  [[nodiscard]] OperandFacts facts(const char* role) const noexcept {
    const bool bound = static_cast<bool>(groups_);
    return {role, face::noun, bound ? static_cast<const void*>(&groups_.state()) : nullptr,
            bound ? &groups_.world() : nullptr, valid(), released_};
  }

  /// The axes its sharding names, in mesh order: the ranks an activation is spread over.
  static constexpr detail::axis_list named_axes = detail::in_mesh_order(axes.used());

  /// Collective over the ranks that agree on this array type's extents (every rank; for an
  /// activation, the group along named_axes): they agree on `values` and on whether any of them
  /// found `problem`, else all throw the same.
  static void agree_among(const ProcessGroupMesh<M>& groups, std::span<const std::int64_t> values,
                          const LocalProblem& problem, std::string_view operation, std::string_view what,
                          std::string_view names, std::string_view note = {}) {
    if constexpr (face::agreed_by_all_ranks) {
      agree_on_all_ranks(groups.world(), values, problem, operation, what, names, note);
    } else {
      agree_within([&]() -> AnyCommunicator* {
        if constexpr (named_axes.empty()) return nullptr;
        else return &groups.group_along_axis_indices(named_axes);
      }, values, problem, operation, what, names, note, groups.rank());
    }
  }

  /// Of a Partial, the rank at coordinate 0 along the Partial axes holds the value, the others
  /// zeros.
  [[nodiscard]] bool holds_partial_share() const { return holds_share_at(groups_.geometry()); }

 private:
  template <typename, MeshType, typename, typename, typename>
  friend class DistributedArray;

  /// The block: an Eigen container when owning, the caller's pointer for a view.
  struct owned_block {
    local_block block;
    [[nodiscard]] Scalar* data() noexcept { return block.data(); }
    [[nodiscard]] const Scalar* data() const noexcept { return block.data(); }
  };
  struct view_block {
    element_type* ptr = nullptr;
    [[nodiscard]] element_type* data() const noexcept { return ptr; }
  };

  /// The checks of a view of the caller's memory (see its constructors), then the agreement.
  void check_view(const extents_type* caller_local, const char* what) const requires(!owning) {
    (void)groups_.state("shardwise::view");  // a moved-from mesh cannot hold an array
    LocalProblem problem;
    bool empty = false;
    for (std::size_t d = 0; d < rank; ++d) {
      if (extents_[d] < 0)
        problem.set(detail::message({"the global extents ", face::shape_text(extents_), " have a negative one"}));
      empty = empty || local_[d] == 0;
    }
    if (caller_local != nullptr && *caller_local != local_)
      problem.set(detail::message({what, " is ", block_text_of(*caller_local), " but this rank's block of a ",
                                   face::shape_text(extents_), " ", face::noun, " is ", block_text_of(local_),
                                   detail::split_rule_note}));
    if (!problem.found())  // strides_ is padded; its first `rank` entries are the view's
      problem.set(detail::view_stride_problem(static_cast<int>(rank), local_.data(), strides_.data(),
                                              !std::is_const_v<element_type>));
    if (!problem.found() && !empty && block_.ptr == nullptr)
      problem.set(detail::message({"the pointer is null but this rank's block is ", face::shape_text(local_)}));
    agree_among(groups_, extents_, problem, "shardwise::view", face::made_what, face::template made_names<rank>);
  }

  [[nodiscard]] static bool holds_share_at(const detail::block_geometry& geo) {
    for (int axis : axes.partial)
      if (geo.coordinate[static_cast<std::size_t>(axis)] != 0) return false;
    return true;
  }
  /// Places this rank's block of extents_; an owning block is contiguous in the storage order.
  /// `check`: the name to report a negative extent with (none: not checked here).
  void place(const char* check = nullptr) {
    static constexpr detail::dim_order order = storage;
    detail::place_array(static_cast<int>(rank), extents_.data(), axes, cycles, groups_.geometry(), owning ? &order : nullptr,
                        local_.data(), offsets_.data(), strides_, check);
  }
  void resize_block() {
    detail::tensor_extents local{};
    for (std::size_t d = 0; d < rank; ++d) local[d] = local_[d];
    resize(block_.block, face::template block_extents<rank>(local));
  }
  void zero() {
    Scalar* p = block_.data();
    const std::int64_t n = local_size();
    for (std::int64_t i = 0; i < n; ++i) p[i] = Scalar(0);
  }
  [[nodiscard]] std::int64_t local_size() const {
    std::int64_t n = 1;
    for (std::size_t d = 0; d < rank; ++d) n *= local_[d];
    return n;
  }
  /// A view's strides for the executor (null for an owning block: contiguous in its order).
  [[nodiscard]] const detail::tensor_extents* view_strides() const {
    if constexpr (owning) return nullptr;
    else return &strides_;
  }

  template <typename Block, std::size_t N>
  static void resize(Block& block, const std::array<std::int64_t, N>& extents) {
    if constexpr (N == 2 && requires { block.resize(Eigen::Index{}, Eigen::Index{}); }) {
      block.resize(static_cast<Eigen::Index>(extents[0]), static_cast<Eigen::Index>(extents[1]));
    } else {
      std::array<Eigen::Index, N> dims{};
      for (std::size_t d = 0; d < N; ++d) dims[d] = static_cast<Eigen::Index>(extents[d]);
      block.resize(dims);
    }
  }
  template <typename Block>
  static auto block_extents_of(const Block& block) {
    if constexpr (requires { block.rows(); block.cols(); }) {
      return std::array<std::int64_t, 2>{static_cast<std::int64_t>(block.rows()), static_cast<std::int64_t>(block.cols())};
    } else {
      std::array<std::int64_t, rank> e{};
      for (std::size_t d = 0; d < rank; ++d) e[d] = static_cast<std::int64_t>(block.dimension(static_cast<Eigen::Index>(d)));
      return e;
    }
  }
  template <std::size_t N>
  static std::string block_text_of(const std::array<std::int64_t, N>& extents) {
    if constexpr (N == 2 && face_kind != detail::array_face::tensor) return detail::message({extents[0], " x ", extents[1]});
    else return detail::extents_text(extents);
  }
  /// Element strides (rows, columns) of an Eigen matrix, map or ref.
  template <typename Derived>
  static std::pair<std::int64_t, std::int64_t> eigen_strides(const Derived& m) {
    const std::int64_t outer = m.outerStride(), inner = m.innerStride();
    if constexpr (Derived::IsRowMajor) return {outer, inner};
    else return {inner, outer};
  }

  /// The one distribute: agrees on `extents` (and on `problem`), then copies this rank's block
  /// out of the global array at `global` with element strides `global_strides`.
  static DistributedArray distribute_from(const ProcessGroupMesh<M>& groups, std::span<const std::int64_t> extents,
                                          const LocalProblem& problem, std::string_view what, std::string_view names,
                                          const Scalar* global, const detail::tensor_extents& global_strides) {
    agree_among(groups, extents, problem, face::distribute_op, what, names);
    extents_type e{};
    for (std::size_t d = 0; d < rank; ++d) e[d] = extents[d];
    DistributedArray result(groups, e, detail::uninitialized);
    if (!result.holds_partial_share()) {
      result.zero();
      return result;
    }
    if constexpr (redistributed) {
      // The global array is on every rank: this rank's blocks are copied out of it, nothing sent.
      std::vector<Scalar> none;
      detail::redistribute<Scalar>(groups.state(face::distribute_op), replicated_placement(), own_placement(),
                                   result.global_extents(), global, global_strides, result.block_.data(),
                                   result.strides_, none, none);
      return result;
    }
    detail::tensor_extents local{};
    std::int64_t first = 0;
    for (std::size_t d = 0; d < rank; ++d) {
      local[d] = result.local_[d];
      first += result.offsets_[d] * global_strides[d];
    }
    if (result.local_size() > 0)
      detail::permute_copy_strided<Scalar>(global + first, global_strides, result.block_.data(), storage, local);
    return result;
  }

 public:
  /// Where this array type's elements are, as the redistribution kernel reads it.
  static detail::placement own_placement() { return {axes, cycles}; }
  /// The same array replicated on every rank.
  static detail::placement replicated_placement() {
    detail::placement p;
    p.axes.rank = static_cast<int>(rank);
    return p;
  }

 private:

  template <typename Self>
  static decltype(auto) local_of(Self& self) {
    using Elem = std::conditional_t<std::is_const_v<Self>, const Scalar, element_type>;
    if constexpr (face_kind == detail::array_face::tensor) {
      return (self.block_.block);  // the Eigen::Tensor itself
    } else if constexpr (owning) {
      using Map = Eigen::Map<std::conditional_t<std::is_const_v<Self>, const local_block, local_block>>;
      const auto e = face::template block_extents<rank>(self.padded_local());
      return Map(self.block_.data(), static_cast<Eigen::Index>(e[0]), static_cast<Eigen::Index>(e[1]));
    } else {
      using Matrix = detail::dense_matrix<Scalar, storage_order>;
      using Map = Eigen::Map<std::conditional_t<std::is_const_v<Elem>, const Matrix, Matrix>, 0,
                             Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
      // Eigen's Stride is (outer, inner) in the map's storage order.
      const std::int64_t outer = storage_order == Eigen::RowMajor ? self.strides_[0] : self.strides_[1];
      const std::int64_t inner = storage_order == Eigen::RowMajor ? self.strides_[1] : self.strides_[0];
      return Map(self.block_.data(), static_cast<Eigen::Index>(self.local_[0]),
                 static_cast<Eigen::Index>(self.local_[1]), Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(outer, inner));
    }
  }
  [[nodiscard]] detail::tensor_extents padded_local() const {
    detail::tensor_extents e{};
    for (std::size_t d = 0; d < rank; ++d) e[d] = local_[d];
    return e;
  }

  ProcessGroupMesh<M> groups_;
  extents_type extents_{}, local_{}, offsets_{};
  detail::tensor_extents strides_{};
  std::conditional_t<owning, owned_block, view_block> block_{};
  bool released_ = false;
  bool moved_ = false;
};

namespace detail {

template <typename T>
inline constexpr bool is_distributed_array_v = false;
template <typename Scalar, MeshType M, typename Sh, typename Layout, typename W>
inline constexpr bool is_distributed_array_v<DistributedArray<Scalar, M, Sh, Layout, W>> = true;

template <typename T, array_face Face>
inline constexpr bool has_face_v = false;
template <typename Scalar, MeshType M, typename Sh, typename Layout, typename W, array_face Face>
inline constexpr bool has_face_v<DistributedArray<Scalar, M, Sh, Layout, W>, Face> = Layout::face == Face;

/// A ShardedMatrix (owning or a view).
template <typename T>
inline constexpr bool is_matrix_type_v = has_face_v<T, array_face::matrix>;
/// A ShardedTensor (owning or a view, any storage order).
template <typename T>
inline constexpr bool is_tensor_type_v = has_face_v<T, array_face::tensor>;

/// Where this rank's block of an array lies for the executor, and its element strides: null
/// for an owning block (contiguous in its storage order), the view's own otherwise.
template <typename X>
const tensor_extents* block_strides(const X& x) {
  if constexpr (is_view_ownership_v<typename X::ownership>) return &x.local_strides();
  else return nullptr;
}

/// An activation's Eigen order for its sharding: column-major when m is split (a collective
/// along m moves contiguous column blocks), row-major otherwise (one along s moves row blocks).
template <typename Sh>
constexpr int default_activation_order() {
  if constexpr (is_tensor_sharding_v<Sh>) {
    if constexpr (Sh::rank == 3) return Sh::dim_axes[2].empty() ? Eigen::RowMajor : Eigen::ColMajor;
  }
  return Eigen::RowMajor;
}

/// The layout of an owning array of layout kind L with sharding To: a matrix in Eigen's order
/// Order (-1: the one To gives), a row-major tensor, an activation in the order To gives.
template <typename L, typename To, int Order>
struct resharded_layout;
template <int From, typename To, int Order>
struct resharded_layout<MatrixLayout<From>, To, Order> {
  using type = MatrixLayout<Order == -1 ? default_storage_order<To>() : Order>;
};
template <dim_order From, typename To, int Order>
struct resharded_layout<TensorLayout<From>, To, Order> {
  using type = TensorLayout<>;
};
template <int From, typename To, int Order>
struct resharded_layout<SequenceMajor<From>, To, Order> {
  using type = SequenceMajor<Order == -1 ? default_activation_order<To>() : Order>;
};
template <typename L, typename To, int Order = -1>
using resharded_layout_t = typename resharded_layout<L, To, Order>::type;

}  // namespace detail

}  // namespace shardwise
