// shardwise/nn/sharded_activation.hpp: an activation X[b, s, m] distributed over a mesh.
//
// An activation is the one distributed array type (shardwise/distributed_array.hpp) with the
// SequenceMajor layout (layout_policy.hpp): kept as a matrix of tokens x m whose tokens are
// sequence-major, row = s * b + b_index (Megatron-LM's [s, b, h]), both globally and in every
// rank's block (row = s_local * b_local + b_local_index). A split along the sequence
// (Megatron-SP) is then a split into contiguous row blocks, so its AllGather and ReduceScatter
// land in place with no packing. A split along the batch (GSPMD) is not contiguous in the
// global order, but no policy gathers along b. With s = 1 (an MLP on plain samples) the rows
// are simply the samples.
//
// Storage order of the block: column-major when m is split (an AllGather or ReduceScatter
// along m then moves contiguous column blocks), row-major otherwise (one along s moves
// contiguous row blocks).
//
// Replicated means "not split over that axis". An activation is only ever communicated along
// the axes its sharding names: along the others, each group of ranks holds its own (e.g.
// data-parallel replicas with different data, or pipeline stages), and only the ranks that
// share one agree on its shape.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "shardwise/array_face.hpp"
#include "shardwise/distributed_array.hpp"
#include "shardwise/layout_policy.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/reshard.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

namespace detail {

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

/// An activation's Eigen order for its sharding: column-major when m is split (a collective
/// along m moves contiguous column blocks), row-major otherwise (one along s moves row blocks).
template <typename Sh>
constexpr int default_activation_order() {
  if constexpr (is_tensor_sharding_v<Sh>) {
    if constexpr (Sh::rank == 3) return Sh::dim_axes[2].empty() ? Eigen::RowMajor : Eigen::ColMajor;
  }
  return Eigen::RowMajor;
}

template <int From, typename To, int Order>
struct resharded_layout<SequenceMajor<From>, To, Order> {
  using type = SequenceMajor<Order == -1 ? default_activation_order<To>() : Order>;
};

}  // namespace detail

/// An activation X[b, s, m] distributed over the mesh M as the rank-3 sharding Sh says:
/// the DistributedArray with the SequenceMajor layout of Sh's order (see the top of this file).
/// Made with (groups, b, s, m) or distribute(groups, tokens_x_m, b, s); batch(), seq(), model()
/// and local() (local tokens x local m) read it.
template <typename Scalar, MeshType M, typename Sh>
using ShardedActivation = DistributedArray<Scalar, M, Sh, SequenceMajor<detail::default_activation_order<Sh>()>>;

}  // namespace shardwise
