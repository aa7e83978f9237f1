// shardwise/nn/sharded_activation.hpp: an activation X[b, s, m] distributed over a mesh.
//
// Layout: a rank-3 activation is kept as a 2-D matrix of tokens x model, with the tokens
// SEQUENCE-MAJOR: row = s * b + b_index (Megatron-LM's [s, b, h] layout), both globally
// and in every rank's block (row = s_local * b_local + b_local_index). Why: a split along
// the sequence (Megatron-SP) is then a split into contiguous row blocks, so its AllGather
// and ReduceScatter land in place with no packing. A split along the batch (GSPMD) is not
// contiguous in the global order, but no policy gathers along b. With s = 1 (an MLP on
// plain samples) the rows are simply the samples.
//
// Storage order of the block: column-major when m is split (an AllGather or ReduceScatter
// along m then moves contiguous column blocks), row-major otherwise (one along s moves
// contiguous row blocks). Blocks differ by at most one (detail/partition.hpp).
//
// Replicated means "not split over that axis". A tensor is only ever communicated along
// the axes its sharding names: along the others, each group of ranks holds its own
// (e.g. data-parallel replicas with different data, or pipeline stages).
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "shardwise/comm/consistency.hpp"
#include "shardwise/kernels/executor.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/sharded_matrix.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

namespace detail {

/// The storage order of an activation block as a tensor [b, s, m]: its rows are tokens,
/// sequence-major (s outer, b inner), so a row-major block is [s, b, m] and a column-major one
/// [m, s, b].
constexpr dim_order activation_order(int eigen_order) {
  dim_order o;
  o.rank = 3;
  if (eigen_order == 0) o.outer_to_inner = {2, 1, 0};  // Eigen::ColMajor
  else o.outer_to_inner = {1, 0, 2};
  return o;
}

/// This rank's block of a whole activation (b*s sequence-major rows x m, at `global` with outer
/// stride `ld`, row-major or not): rows (s0 + si) * b + b0 + bi for si < ls, bi < lb, columns
/// m0 .. m0 + lm, into a block of lb*ls rows (row si * lb + bi) stored row-major or not. Once
/// per scalar, whatever the activation's sharding.
template <typename Scalar>
[[gnu::noinline]] void copy_activation_block(const Scalar* global, std::int64_t ld, bool global_row_major,
                                             std::int64_t b, std::int64_t b0, std::int64_t lb, std::int64_t s0,
                                             std::int64_t ls, std::int64_t m0, std::int64_t lm, Scalar* block,
                                             bool block_row_major) {
  const std::int64_t rows = lb * ls;
  for (std::int64_t si = 0; si < ls; ++si)
    for (std::int64_t bi = 0; bi < lb; ++bi) {
      const std::int64_t from = (s0 + si) * b + b0 + bi, to = si * lb + bi;
      for (std::int64_t j = 0; j < lm; ++j) {
        const Scalar v = global_row_major ? global[from * ld + m0 + j] : global[(m0 + j) * ld + from];
        (block_row_major ? block[to * lm + j] : block[j * rows + to]) = v;
      }
    }
}

/// The rank-3 checks of an activation sharding, with messages for a person.
template <MeshType M, TensorShardingType Sh>
struct checked_activation_sharding {
  static_assert(Sh::rank == 3,
                "shardwise::ShardedActivation: an activation X[b, s, m] needs a TensorSharding of three dimensions "
                "(batch, sequence, model), e.g. TensorSharding<Replicated, Split<\"tp\">, Replicated>");
  static_assert(!Sh::is_partial, "shardwise::ShardedActivation: an activation cannot be Partial; reduce it first");
  static constexpr bool value = Sh::rank == 3 && !Sh::is_partial && checked_sharding<M, Sh, 3>::value;
};

}  // namespace detail

/// An activation X[b, s, m] distributed over the mesh M as the rank-3 sharding Sh says.
template <typename Scalar, MeshType M, TensorShardingType Sh>
class ShardedActivation {
  static_assert(std::is_same_v<Scalar, float> || std::is_same_v<Scalar, double>,
                "shardwise::ShardedActivation: the scalar type must be float or double");
  static_assert(detail::checked_activation_sharding<M, Sh>::value);

 public:
  using scalar_type = Scalar;  ///< The element type: float or double.
  using mesh_type = M;         ///< The mesh it is distributed over.
  using sharding = Sh;         ///< How b, s and m are split (a TensorSharding of rank 3, not Partial).
  /// Column-major when m is split, row-major otherwise (see the top of this file).
  static constexpr int storage_order = Sh::dim_axes[2].empty() ? Eigen::RowMajor : Eigen::ColMajor;
  /// This rank's block: local tokens (sequence-major) x local m.
  using local_matrix = detail::dense_matrix<Scalar, storage_order>;
  /// The whole activation: b*s tokens (sequence-major) x m.
  using global_matrix = detail::dense_matrix<Scalar, Eigen::ColMajor>;

  /// A zero activation of global shape [b, s, m].
  ShardedActivation(const ProcessGroupMesh<M>& groups, std::int64_t b, std::int64_t s, std::int64_t m)
      : ShardedActivation(groups, b, s, m, detail::uninitialized) {
    block_.setZero();
  }
  /// The same, its block allocated but not initialized (for kernels that write all of it).
  ShardedActivation(const ProcessGroupMesh<M>& groups, std::int64_t b, std::int64_t s, std::int64_t m,
                    detail::uninitialized_t)
      : groups_(groups), b_(b), s_(s), m_(m) {
    if (b < 0 || s < 0 || m < 0)
      detail::fail({"shardwise::ShardedActivation: the shape [", b, ", ", s, ", ", m, "] has a negative extent"});
    block_.resize(local_tokens(), local_m());
  }

  /// From the whole activation (b*s sequence-major rows x m), held by every rank; no
  /// communication but the check that the ranks sharing it agree on its shape.
  template <typename Derived>
  static ShardedActivation distribute(const ProcessGroupMesh<M>& groups, const Eigen::MatrixBase<Derived>& global,
                                      std::int64_t b, std::int64_t s) {
    LocalProblem problem;
    if (global.rows() != b * s)
      problem.set(detail::message({"the global matrix has ", global.rows(), " rows but b * s = ", b * s,
                                   " (rows are tokens, sequence-major: row = s_index * b + b_index)"}));
    const std::int64_t shape[] = {b, s, global.cols()};
    agree(groups, shape, problem, "shardwise::ShardedActivation::distribute");
    if constexpr (!requires { global.derived().data(); global.derived().outerStride(); }) {
      const global_matrix plain = global;  // an expression: evaluated once
      return distribute(groups, plain, b, s);
    } else {
      ShardedActivation result(groups, b, s, global.cols(), detail::uninitialized);
      detail::copy_activation_block<Scalar>(global.derived().data(), global.derived().outerStride(), Derived::IsRowMajor,
                                            b, result.batch_offset(), result.local_batch(), result.seq_offset(),
                                            result.local_seq(), result.m_offset(), result.local_m(),
                                            result.block_.data(), storage_order == Eigen::RowMajor);
      return result;
    }
  }

  /// From this rank's block, such as a kernel's output; its size must fit the sharding (collective:
  /// the ranks sharing it agree on the shape).
  static ShardedActivation from_local(const ProcessGroupMesh<M>& groups, std::int64_t b, std::int64_t s, std::int64_t m,
                                      local_matrix block) {
    ShardedActivation result(groups, b, s, m, detail::uninitialized);
    LocalProblem problem;
    if (block.rows() != result.local_tokens() || block.cols() != result.local_m())
      problem.set(detail::message({"the block is ", block.rows(), " x ", block.cols(), " but this rank's block of [", b,
                                   ", ", s, ", ", m, "] is ", result.local_tokens(), " x ", result.local_m()}));
    const std::int64_t shape[] = {b, s, m};
    agree(groups, shape, problem, "shardwise::ShardedActivation::from_local");
    result.block_ = std::move(block);
    return result;
  }

  /// The axes its sharding names, in mesh order: the ranks it is spread over share a group.
  static constexpr detail::axis_list named_axes =
      detail::in_mesh_order(detail::tensor_axes::of(detail::resolve_sharding<M, Sh>()).used());

  /// Collective over the ranks that share the activation (the group along named_axes): they
  /// agree on `values` and on whether any of them found `problem`; else all throw the same.
  static void agree(const ProcessGroupMesh<M>& groups, std::span<const std::int64_t> values,
                    const LocalProblem& problem, const char* operation) {
    agree_within([&]() -> AnyCommunicator* {
      if constexpr (named_axes.empty()) return nullptr;
      else return &groups.group_along_axis_indices(named_axes);
    }, values, problem, operation, "the shapes [b, s, m]", "batch b|sequence s|width m",
                 detail::constructed_locally, groups.rank());
  }

  /// The whole activation on every rank of the group over the axes Sh names (collective there).
  [[nodiscard]] global_matrix to_global() const {
    const std::int64_t shape[] = {b_, s_, m_};
    agree(groups_, shape, {}, "shardwise::ShardedActivation::to_global");
    global_matrix global(b_ * s_, m_);
    detail::execute<detail::reshard_program<M, Sh, replicated_sharding_t<3>, detail::activation_order(storage_order),
                                            detail::activation_order(Eigen::ColMajor)>, Scalar>(groups_.state("to_global"), {{{}, {}, {b_, s_, m_}}},
                            {nullptr, nullptr, block_.data(), global.data()});
    return global;
  }

  /// Global extents: b, s and m.
  ///@{
  [[nodiscard]] std::int64_t batch() const noexcept { return b_; }
  [[nodiscard]] std::int64_t seq() const noexcept { return s_; }
  [[nodiscard]] std::int64_t model() const noexcept { return m_; }
  ///@}
  /// This rank's extents and offsets along b, s and m; local_tokens() is local_batch() *
  /// local_seq(), the rows of local().
  ///@{
  [[nodiscard]] std::int64_t local_batch() const { return geometry_of(groups_.coordinate()).b; }
  [[nodiscard]] std::int64_t local_seq() const { return geometry_of(groups_.coordinate()).s; }
  [[nodiscard]] std::int64_t local_m() const { return geometry_of(groups_.coordinate()).m; }
  [[nodiscard]] std::int64_t local_tokens() const { return geometry_of(groups_.coordinate()).tokens(); }
  [[nodiscard]] std::int64_t batch_offset() const { return geometry_of(groups_.coordinate()).b0; }
  [[nodiscard]] std::int64_t seq_offset() const { return geometry_of(groups_.coordinate()).s0; }
  [[nodiscard]] std::int64_t m_offset() const { return geometry_of(groups_.coordinate()).m0; }
  ///@}

  /// This rank's block, as a map over contiguous storage.
  ///@{
  [[nodiscard]] Eigen::Map<local_matrix> local() { return {block_.data(), block_.rows(), block_.cols()}; }
  [[nodiscard]] Eigen::Map<const local_matrix> local() const { return {block_.data(), block_.rows(), block_.cols()}; }
  ///@}

  /// The groups it lives on (a handle that shares them).
  [[nodiscard]] const ProcessGroupMesh<M>& groups() const noexcept { return groups_; }

  /// Gives the activation a new global shape, keeping the storage when the block size is unchanged.
  void reshape(std::int64_t b, std::int64_t s, std::int64_t m) {
    if (b < 0 || s < 0 || m < 0)
      detail::fail({"shardwise::ShardedActivation::reshape: the shape [", b, ", ", s, ", ", m, "] has a negative extent"});
    b_ = b, s_ = s, m_ = m;
    block_.resize(local_tokens(), local_m());
  }

 private:
  struct placement {
    std::int64_t b0, b, s0, s, m0, m;
    [[nodiscard]] std::int64_t tokens() const noexcept { return b * s; }
  };

  [[nodiscard]] placement geometry_of(const typename M::coordinate_type& coordinate) const {
    const detail::block_geometry g{groups_.mesh(), coordinate};
    constexpr auto r = detail::resolve_sharding<M, Sh>();
    return {g.offset(b_, r.dims[0]), g.extent(b_, r.dims[0]), g.offset(s_, r.dims[1]),
            g.extent(s_, r.dims[1]), g.offset(m_, r.dims[2]), g.extent(m_, r.dims[2])};
  }

  ProcessGroupMesh<M> groups_;
  std::int64_t b_, s_, m_;
  local_matrix block_;
};

}  // namespace shardwise
