// shardwise/sharded_tensor.hpp: a tensor of 0 to 6 dimensions distributed over a process mesh.
//
//   using X = sw::ShardedTensor<float, Grid, sw::TensorSharding<sw::Split<"dp">, sw::Replicated, sw::Replicated>>;
//   auto x = X::distribute(groups, global);          // global: Eigen::Tensor<float, 3, Eigen::RowMajor>
//   auto y = sw::einsum<"bsm,mh->bsh">(x, w);         // shardwise/einsum.hpp
//   Eigen::Tensor<float, 3, Eigen::RowMajor> all = y.to_global();
//
// The N-D counterpart of ShardedMatrix (which stays, as the rank-2 case with a choice of
// storage order): it knows its global extents, holds this rank's block as one contiguous
// row-major Eigen::Tensor (Eigen's Tensor module, shipped with Eigen), and shares the groups
// of the ProcessGroupMesh it was built on. A dimension split over axes is cut in blocks that
// differ by at most one (detail/partition.hpp), as for matrices; nothing is padded. A
// Partial tensor holds partial values whose sum over the Partial axes is the tensor. A 0-D
// tensor (TensorSharding<>) is a scalar on every rank, such as the result of einsum<"i,i->">.
//
// Every user-level operation is collective over the mesh and first agrees on the global
// extents (comm/consistency.hpp): a rank that passes other extents makes every rank throw the
// same exception, never a hang.
//
// This header (and einsum.hpp) is not in shardwise.hpp, so that programs on matrices do not
// parse Eigen's Tensor module: include <shardwise/tensor.hpp> for N-D tensors.
#pragma once

#include <unsupported/Eigen/CXX11/Tensor>
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "shardwise/comm/consistency.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/kernels/permute.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/reshard.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/sharded_matrix.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

namespace detail {

/// The checks a ShardedTensor's sharding must pass, each with its own message.
template <typename M, typename Sh, bool IsTensorSharding = is_tensor_sharding_v<Sh>>
struct checked_tensor_sharding {
  static_assert(IsTensorSharding,
                "shardwise::ShardedTensor<Scalar, Mesh, Sharding>: the sharding must be a "
                "shardwise::TensorSharding<...> with one Replicated or Split<...> per dimension; a bare Split<...> "
                "or Replicated describes one dimension only");
  static constexpr bool value = false;
};
template <typename M, typename Sh>
struct checked_tensor_sharding<M, Sh, true> {
  static_assert(Sh::rank <= max_tensor_rank,
                "shardwise::ShardedTensor: a tensor has 0 to 6 dimensions (shardwise::max_tensor_rank); give "
                "TensorSharding one Replicated or Split<...> per dimension");
  static constexpr bool rank_ok = Sh::rank <= max_tensor_rank;
  // Completing the checker reports an unknown axis name with its own message.
  static_assert(!rank_ok || sizeof(checked_sharding<M, Sh, Sh::rank>) > 0);
  static constexpr bool value = rank_ok && sharding_error<M, Sh, Sh::rank>() == ShardingError::none;
};

/// "[2, 3, 4]" for messages.
inline std::string extents_text(std::span<const std::int64_t> extents) {
  std::string text = "[";
  for (std::size_t d = 0; d < extents.size(); ++d) {
    if (d) text += ", ";
    text += std::to_string(extents[d]);
  }
  return text + "]";
}

/// A global index, one per dimension (the parameter pack of generate's element function).
template <std::size_t>
using global_index = std::int64_t;
/// True when F can be called with N global indices (std::int64_t each).
template <typename F, std::size_t N, typename = std::make_index_sequence<N>>
inline constexpr bool invocable_with_indices_v = false;
template <typename F, std::size_t N, std::size_t... I>
inline constexpr bool invocable_with_indices_v<F, N, std::index_sequence<I...>> =
    std::is_invocable_v<F, global_index<I>...>;

template <typename T>
concept row_major_tensor_like = requires(const T& t) {
  t.data();
  t.dimensions();
  T::Layout;
  T::NumDimensions;
};

}  // namespace detail

/// A tensor distributed over the mesh M as the sharding Sh says (Sh::rank dimensions, 0 to 6).
/// `Ownership` is Owning (this class) or View / ConstView (a view of the caller's memory with
/// any strides, defined in shardwise/view.hpp).
template <typename Scalar, MeshType M, typename Sh, typename Ownership = Owning>
class ShardedTensor {
  static_assert(std::is_same_v<Ownership, Owning>,
                "shardwise::ShardedTensor: the ownership must be shardwise::Owning, shardwise::View or "
                "shardwise::ConstView; for a view, include <shardwise/view.hpp>");
  static_assert(detail::is_array_scalar_v<Scalar>,
                "shardwise::ShardedTensor: the scalar type must be float, double, std::complex<float> or "
                "std::complex<double>");
  static_assert(sizeof(detail::checked_tensor_sharding<M, Sh>) > 0);

 public:
  using scalar_type = Scalar;  ///< The element type: float, double or a std::complex of one.
  using mesh_type = M;         ///< The mesh it is distributed over.
  using sharding = Sh;         ///< How its dimensions are split (a TensorSharding).
  using ownership = Owning;    ///< It owns its block (shardwise/view.hpp has the views).
  /// Number of dimensions.
  static constexpr std::size_t rank = detail::is_tensor_sharding_v<Sh> ? Sh::rank : 1;
  /// Global (or local) extents, one per dimension.
  using extents_type = std::array<std::int64_t, rank>;
  /// This rank's block, and a whole tensor: row-major Eigen tensors.
  ///@{
  using local_tensor = Eigen::Tensor<Scalar, static_cast<int>(rank), Eigen::RowMajor, Eigen::Index>;
  using global_tensor = local_tensor;
  ///@}
  /// The names of its extents in the messages of a failed cross-rank agreement ("extent 0", ...).
  static constexpr std::string_view extent_names = detail::repeated_name<rank, "extent #">.view();
  /// How blocks are stored: row-major (the last dimension contiguous).
  static constexpr detail::dim_order storage = detail::dim_order::row_major(static_cast<int>(rank));

  /// The sharding resolved against the mesh: the mesh axes splitting each dimension.
  static constexpr detail::tensor_axes axes = [] {
    if constexpr (detail::checked_tensor_sharding<M, Sh>::value)
      return detail::tensor_axes::of(detail::resolve_sharding<M, Sh>());
    else
      return detail::tensor_axes{};
  }();

  /// A zero tensor of the given global extents. Local: no communication, so nothing compares the
  /// extents across ranks here; the first collective operation on the tensor (einsum,
  /// to_global, reshard...) does, and its error says so.
  ShardedTensor(const ProcessGroupMesh<M>& groups, const extents_type& extents)
      : ShardedTensor(groups, extents, detail::uninitialized) {
    block_.setZero();
  }

  /// A tensor whose block is allocated but not initialized, for kernels that write all of it.
  ShardedTensor(const ProcessGroupMesh<M>& groups, const extents_type& extents, detail::uninitialized_t)
      : groups_(groups), extents_(extents) {
    for (std::int64_t e : extents)
      if (e < 0) detail::fail({"shardwise::ShardedTensor: the extents ", detail::extents_text(extents), " have a negative one"});
    (void)groups_.state("ShardedTensor");  // a moved-from mesh cannot hold a tensor
    block_.resize(eigen_dimensions(local_extents()));
  }

  /// From a global row-major tensor that every rank holds (Eigen::Tensor<Scalar, rank,
  /// Eigen::RowMajor>, or a TensorMap of one): no communication but the extents check.
  template <detail::row_major_tensor_like Global>
  static ShardedTensor distribute(const ProcessGroupMesh<M>& groups, const Global& global) {
    static_assert(static_cast<int>(Global::Layout) == static_cast<int>(Eigen::RowMajor),
                  "shardwise::ShardedTensor::distribute: the global tensor must be row-major, "
                  "Eigen::Tensor<Scalar, Rank, Eigen::RowMajor> (or a TensorMap of one)");
    static_assert(static_cast<std::size_t>(Global::NumDimensions) == rank,
                  "shardwise::ShardedTensor::distribute: the global tensor has another number of dimensions "
                  "than the sharding");
    static_assert(std::is_same_v<std::remove_cv_t<std::remove_pointer_t<decltype(global.data())>>, Scalar>,
                  "shardwise::ShardedTensor::distribute: the global tensor has another scalar type; cast it "
                  "first (.template cast<Scalar>() into an Eigen::Tensor)");
    extents_type extents{};
    for (std::size_t d = 0; d < rank; ++d) extents[d] = static_cast<std::int64_t>(global.dimensions()[d]);
    agree_on_all_ranks(groups.world(), extents, {}, "shardwise::ShardedTensor::distribute",
                       "the extents of the global tensors", extent_names);
    ShardedTensor result(groups, extents, detail::uninitialized);
    if (result.holds_partial_share())
      detail::copy_box(global.data(), result.block_.data(), result.global_extents(), result.offsets_padded(),
                       result.local_extents_padded(), static_cast<int>(rank), true);
    else
      result.block_.setZero();
    return result;
  }

  /// A tensor whose element at global index (i, j, ...) is `element(i, j, ...)` (one std::int64_t
  /// per dimension), each rank calling it only for the elements of its own block: how a numerical
  /// code fills a distributed matrix from a formula without holding or sending the whole.
  /// Collective only through the extents check. Of a Partial, the rank that holds the value
  /// computes it and the others hold zeros, as in distribute.
  template <typename Element>
  static ShardedTensor generate(const ProcessGroupMesh<M>& groups, const extents_type& extents, Element&& element) {
    static_assert(detail::invocable_with_indices_v<Element&, rank>,
                  "shardwise::ShardedTensor::generate: the element function must take one std::int64_t global "
                  "index per dimension, e.g. [](std::int64_t i, std::int64_t j) { return 1.0 / (1 + i + j); }");
    agree_on_all_ranks(groups.world(), extents, {}, "shardwise::ShardedTensor::generate",
                       "the extents", extent_names);
    ShardedTensor result(groups, extents, detail::uninitialized);
    if (!result.holds_partial_share()) {
      result.block_.setZero();
      return result;
    }
    const extents_type first = result.offsets(), count = result.local_extents();
    extents_type index = first;
    Scalar* out = result.block_.data();
    for (Eigen::Index e = 0; e < result.block_.size(); ++e) {
      out[e] = static_cast<Scalar>(std::apply(element, index));
      for (std::size_t d = rank; d-- > 0;) {  // the next index in row-major order
        if (++index[d] < first[d] + count[d]) break;
        index[d] = first[d];
      }
    }
    return result;
  }

  /// Builds a tensor from this rank's block, such as one computed locally; its extents must fit the
  /// sharding, and the global extents be the same on every rank (collective).
  static ShardedTensor from_local(const ProcessGroupMesh<M>& groups, const extents_type& extents, local_tensor block) {
    LocalProblem problem;
    const detail::block_geometry geo = groups.geometry();
    extents_type want{}, have{};
    bool fits = true;
    for (std::size_t d = 0; d < rank; ++d) {
      want[d] = extents[d] < 0 ? 0 : geo.extent(extents[d], axes.dim(static_cast<int>(d)));
      have[d] = static_cast<std::int64_t>(block.dimension(static_cast<Eigen::Index>(d)));
      fits = fits && want[d] == have[d];
    }
    if (!fits)
      problem.set("the block is " + detail::extents_text(have) + " but this rank's block of a " +
                  detail::extents_text(extents) + " tensor is " + detail::extents_text(want));
    agree_on_all_ranks(groups.world(), extents, problem, "shardwise::ShardedTensor::from_local", "the global extents",
                       extent_names);
    ShardedTensor result(groups, extents, detail::uninitialized);
    result.block_ = std::move(block);
    return result;
  }

  /// The whole tensor on every rank (reduces a Partial, then gathers). Collective.
  [[nodiscard]] global_tensor to_global() const {
    agree("shardwise::ShardedTensor::to_global");
    global_tensor global(eigen_dimensions(extents_));
    detail::execute<detail::reshard_program<M, Sh, replicated_sharding_t<rank>, storage, storage>, Scalar>(
        groups_.state("to_global"), {{{}, {}, global_extents()}}, {nullptr, nullptr, block_.data(), global.data()});
    return global;
  }

  /// Global extents.
  [[nodiscard]] const extents_type& extents() const noexcept { return extents_; }
  /// Global extent of dimension `d` (std::out_of_range when d >= rank).
  [[nodiscard]] std::int64_t extent(std::size_t d) const { return extents_.at(d); }
  /// This rank's block: its extents and where it starts in each dimension.
  ///@{
  [[nodiscard]] extents_type local_extents() const { return per_dimension(&detail::block_geometry::extent); }
  [[nodiscard]] extents_type offsets() const { return per_dimension(&detail::block_geometry::offset); }
  ///@}

  /// This rank's block (contiguous, row-major).
  ///@{
  [[nodiscard]] local_tensor& local() noexcept { return block_; }
  [[nodiscard]] const local_tensor& local() const noexcept { return block_; }
  ///@}
  /// Moves this rank's block out. The tensor is then unusable: every operation on it throws
  /// std::logic_error (as on a moved-from one) until a tensor is assigned to it.
  [[nodiscard]] local_tensor release() && {
    released_ = true;
    return std::move(block_);
  }
  /// True once release() has moved the block out.
  [[nodiscard]] bool released() const noexcept { return released_; }

  /// The groups it lives on (a handle that shares them).
  [[nodiscard]] const ProcessGroupMesh<M>& groups() const noexcept { return groups_; }
  /// False once moved from (it then holds neither a block nor groups) or released.
  [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(groups_) && !released_; }
  /// std::logic_error naming `operation` and `role` ("A") when moved from or released.
  void check_valid(const char* operation, const char* role) const {
    if (!valid()) detail::throw_unusable(operation, role, "tensor", released_);
  }
  /// Collective: every rank holds this tensor with the same global extents (at
  /// CheckLevel::cross_rank), else every rank throws the same error; and it was not moved from.
  void agree(const char* operation, const char* role = "the tensor") const {
    check_valid(operation, role);
    agree_on_all_ranks(groups_.world(), extents_, {}, operation, "the global extents", extent_names,
                       detail::constructed_locally);
  }

  /// The extents as the planner's values (padded to max_tensor_rank).
  [[nodiscard]] detail::tensor_extents global_extents() const {
    detail::tensor_extents e{};
    for (std::size_t d = 0; d < rank; ++d) e[d] = extents_[d];
    return e;
  }

 private:
  [[nodiscard]] extents_type per_dimension(std::int64_t (detail::block_geometry::*f)(std::int64_t, const detail::axis_list&)
                                               const) const {
    const detail::block_geometry geo = groups_.geometry();
    extents_type result{};
    for (std::size_t d = 0; d < rank; ++d) result[d] = (geo.*f)(extents_[d], axes.dim(static_cast<int>(d)));
    return result;
  }
  [[nodiscard]] detail::tensor_extents local_extents_padded() const {
    detail::tensor_extents e{};
    const extents_type l = local_extents();
    for (std::size_t d = 0; d < rank; ++d) e[d] = l[d];
    return e;
  }
  [[nodiscard]] detail::tensor_extents offsets_padded() const {
    detail::tensor_extents e{};
    const extents_type o = offsets();
    for (std::size_t d = 0; d < rank; ++d) e[d] = o[d];
    return e;
  }
  static Eigen::array<Eigen::Index, rank> eigen_dimensions(const extents_type& extents) {
    Eigen::array<Eigen::Index, rank> dims{};
    for (std::size_t d = 0; d < rank; ++d) dims[d] = static_cast<Eigen::Index>(extents[d]);
    return dims;
  }
  /// Of a Partial, the rank at coordinate 0 along the Partial axes holds the value, the others zeros.
  [[nodiscard]] bool holds_partial_share() const {
    for (int axis : axes.partial)
      if (groups_.coordinate()[static_cast<std::size_t>(axis)] != 0) return false;
    return true;
  }

  ProcessGroupMesh<M> groups_;
  extents_type extents_{};
  local_tensor block_;
  bool released_ = false;
};

namespace detail {
template <typename T>
inline constexpr bool is_sharded_tensor_v = false;
template <typename Scalar, MeshType M, typename Sh, typename Ownership>
inline constexpr bool is_sharded_tensor_v<ShardedTensor<Scalar, M, Sh, Ownership>> = true;
}  // namespace detail

/// The tensor with sharding To, as far as that needs no reshuffle: reduce a Partial
/// (AllReduce), ReduceScatter it into a dimension, or gather minor axes. Collective.
template <TensorShardingType To, typename Scalar, MeshType M, typename From>
ShardedTensor<Scalar, M, To> reshard(const ShardedTensor<Scalar, M, From>& x) {
  static_assert(To::rank == From::rank, "shardwise::reshard: the target sharding has another number of dimensions "
                                        "than the tensor; a reshard keeps the tensor's shape");
  x.agree("shardwise::reshard");
  ShardedTensor<Scalar, M, To> result(x.groups(), x.extents(), detail::uninitialized);
  using Source = ShardedTensor<Scalar, M, From>;
  detail::execute<detail::reshard_program<M, From, To, Source::storage, Source::storage>, Scalar>(
      x.groups().state("reshard"), {{{}, {}, x.global_extents()}}, {nullptr, nullptr, x.local().data(), result.local().data()});
  return result;
}

/// Finishes a pending sum: Partial<axes> becomes the plain sharding (one AllReduce).
template <typename Scalar, MeshType M, typename From>
auto reduce(const ShardedTensor<Scalar, M, From>& x) {
  static_assert(From::is_partial, "shardwise::reduce: the tensor has no Partial<...> to reduce");
  return [&]<std::size_t... D>(std::index_sequence<D...>) {
    return reshard<TensorSharding<typename From::template dim<D>...>>(x);
  }(std::make_index_sequence<From::rank>{});
}

/// Finishes a pending sum into a requested sharding (e.g. a ReduceScatter split).
template <TensorShardingType To, typename Scalar, MeshType M, typename From>
auto reduce(const ShardedTensor<Scalar, M, From>& x) {
  static_assert(From::is_partial, "shardwise::reduce: the tensor has no Partial<...> to reduce");
  return reshard<To>(x);
}

}  // namespace shardwise
