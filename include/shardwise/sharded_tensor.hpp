// shardwise/sharded_tensor.hpp: a tensor of 0 to 6 dimensions distributed over a process mesh.
//
//   using X = sw::ShardedTensor<float, Grid, sw::TensorSharding<sw::Split<"dp">, sw::Replicated, sw::Replicated>>;
//   auto x = X::distribute(groups, global);          // global: Eigen::Tensor<float, 3, Eigen::RowMajor>
//   auto y = sw::einsum<"bsm,mh->bsh">(x, w);         // shardwise/einsum.hpp
//   Eigen::Tensor<float, 3, Eigen::RowMajor> all = y.to_global();
//
// ShardedTensor is the one distributed array type (shardwise/distributed_array.hpp) with a
// tensor layout: it knows its global extents, holds this rank's block as one contiguous
// row-major Eigen::Tensor (Eigen's Tensor module, shipped with Eigen; local() is the tensor
// itself), and shares the groups of the ProcessGroupMesh it was built on. A dimension split
// over axes is cut in blocks that differ by at most one (detail/partition.hpp); nothing is
// padded. A Partial tensor holds partial values whose sum over the Partial axes is the tensor.
// A 0-D tensor (TensorSharding<>) is a scalar on every rank, such as the result of
// einsum<"i,i->">. A view of a tensor (shardwise/view.hpp) may have any strides, and a
// permuted view any storage order.
//
// This header (and einsum.hpp) is not in shardwise.hpp, so that programs on matrices do not
// parse Eigen's Tensor module: include <shardwise/tensor.hpp> for N-D tensors.
#pragma once

#include <unsupported/Eigen/CXX11/Tensor>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "shardwise/detail/fixed_string.hpp"
#include "shardwise/distributed_array.hpp"
#include "shardwise/layout_policy.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

namespace detail {

/// The checks a tensor's sharding must pass, each with its own message.
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

/// TensorLayout: ShardedTensor, its block an Eigen::Tensor.
template <dim_order Order>
struct face_traits<TensorLayout<Order>> {
  template <typename Sh>
  static constexpr std::size_t rank = sharding_rank<Sh>();
  static constexpr const char* noun = "tensor";
  static constexpr const char* role = "the tensor";
  static constexpr const char* name = "shardwise::ShardedTensor";
  static constexpr const char* distribute_op = "shardwise::ShardedTensor::distribute";
  static constexpr const char* from_local_op = "shardwise::ShardedTensor::from_local";
  static constexpr const char* to_global_op = "shardwise::ShardedTensor::to_global";
  static constexpr const char* generate_op = "shardwise::ShardedTensor::generate";
  static constexpr bool agreed_by_all_ranks = true;
  static constexpr const char* agreed_what = "the global extents";
  /// "extent 0", "extent 1", ... in the messages of a failed agreement.
  template <std::size_t Rank>
  static constexpr std::string_view agreed_names = repeated_name<Rank, "extent #">.view();
  static constexpr const char* distributed_what = "the extents of the global tensors";
  template <std::size_t Rank>
  static constexpr std::string_view distributed_names = agreed_names<Rank>;
  static constexpr const char* made_what = "the global extents";
  template <std::size_t Rank>
  static constexpr std::string_view made_names = agreed_names<Rank>;

  template <typename Scalar, std::size_t Rank>
  using container = Eigen::Tensor<Scalar, static_cast<int>(Rank), Eigen::RowMajor, Eigen::Index>;
  template <typename Scalar, std::size_t Rank>
  using global = container<Scalar, Rank>;
  template <std::size_t Rank>
  static constexpr dim_order global_order = dim_order::row_major(static_cast<int>(Rank));
  template <std::size_t Rank>
  static std::array<std::int64_t, Rank> block_extents(const tensor_extents& local) {
    std::array<std::int64_t, Rank> e{};
    for (std::size_t d = 0; d < Rank; ++d) e[d] = local[d];
    return e;
  }
  template <typename Global>
  static Global make_global(const tensor_extents& e) {
    Eigen::array<Eigen::Index, Global::NumDimensions> dims{};
    for (std::size_t d = 0; d < static_cast<std::size_t>(Global::NumDimensions); ++d)
      dims[d] = static_cast<Eigen::Index>(e[d]);
    return Global(dims);
  }
  static std::string shape_text(std::span<const std::int64_t> e) { return extents_text(e); }

  template <typename Scalar, typename M, typename Sh>
  struct checks {
    static_assert(sizeof(checked_tensor_sharding<M, Sh>) > 0);
    static_assert(is_array_scalar_v<Scalar>,
                  "shardwise::ShardedTensor: the scalar type must be float, double, std::complex<float> or "
                  "std::complex<double>");
    static constexpr bool value = checked_tensor_sharding<M, Sh>::value;
  };
  /// The checks of a global tensor given to distribute.
  template <typename Global, typename Scalar, std::size_t Rank>
  struct check_global {
    static_assert(static_cast<int>(Global::Layout) == static_cast<int>(Eigen::RowMajor),
                  "shardwise::ShardedTensor::distribute: the global tensor must be row-major, "
                  "Eigen::Tensor<Scalar, Rank, Eigen::RowMajor> (or a TensorMap of one)");
    static_assert(static_cast<std::size_t>(Global::NumDimensions) == Rank,
                  "shardwise::ShardedTensor::distribute: the global tensor has another number of dimensions "
                  "than the sharding");
    static_assert(std::is_same_v<std::remove_cv_t<std::remove_pointer_t<decltype(std::declval<const Global&>().data())>>,
                                 Scalar>,
                  "shardwise::ShardedTensor::distribute: the global tensor has another scalar type; cast it "
                  "first (.template cast<Scalar>() into an Eigen::Tensor)");
  };
  template <typename Other>
  struct another_mesh {
    static_assert(dependent_false<Other>,
                  "shardwise::ShardedTensor::distribute: the ProcessGroupMesh is over another Mesh than the tensor; "
                  "declare the ShardedTensor on the same Mesh<...> as the groups");
  };
  template <bool Invocable>
  struct element_function {
    static_assert(Invocable,
                  "shardwise::ShardedTensor::generate: the element function must take one std::int64_t global "
                  "index per dimension, e.g. [](std::int64_t i, std::int64_t j) { return 1.0 / (1 + i + j); }");
  };
};

}  // namespace detail

/// A tensor distributed over the mesh M as the sharding Sh says (Sh::rank dimensions, 0 to 6):
/// the DistributedArray with TensorLayout<> (row-major). `Ownership` is Owning (its block a
/// row-major Eigen::Tensor, local()) or View / ConstView (shardwise/view.hpp).
template <typename Scalar, MeshType M, typename Sh, typename Ownership = Owning>
using ShardedTensor = DistributedArray<Scalar, M, Sh, TensorLayout<>, Ownership>;

namespace detail {
/// Any array of the tensor layout, owning or a view, in any storage order.
template <typename T>
inline constexpr bool is_sharded_tensor_v = is_tensor_type_v<T>;
}  // namespace detail

}  // namespace shardwise
