// shardwise/parallel_context.hpp: named parallel modes over a ProcessGroupMesh (as OSLO's
// ParallelContext).
//
//   using Hybrid = sw::Mesh<sw::Axis<"dp", 2>, sw::Axis<"pp", 2>, sw::Axis<"tp", 2>, sw::Axis<"sp", 2>>;
//   auto context = sw::ParallelContext<Hybrid>::from_mpi(MPI_COMM_WORLD, {
//       {sw::ParallelMode::data, {"dp"}}, {sw::ParallelMode::pipeline, {"pp"}},
//       {sw::ParallelMode::tensor, {"tp"}}, {sw::ParallelMode::sequence, {"sp"}}});
//   context.local_rank(sw::ParallelMode::tensor);  context.group(sw::ParallelMode::data).all_reduce(grads);
//
// A mode is bound to one or more mesh axes (its group is group_along(those axes)); GLOBAL is
// every axis in mesh order; a mode left unbound is a group of one (local rank 0, size 1).
// Everything but group() is computed without communicating. Works over any ProcessGroupMesh
// (MPI or the virtual cluster); from_mpi() also reads the launcher's environment and checks it
// against MPI.
#pragma once

#include <mpi.h>

#include <array>
#include <cstddef>
#include <initializer_list>
#include <iostream>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardwise/comm/any_communicator.hpp"
#include "shardwise/comm/mpi.hpp"
#include "shardwise/launcher_environment.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace shardwise {

/// The kinds of parallelism a rank takes part in.
enum class ParallelMode {
  global,    ///< Every rank: all mesh axes, in mesh order; cannot be bound.
  data,      ///< Data parallelism: replicas that all-reduce their gradients.
  tensor,    ///< Tensor parallelism: the ranks that split each layer's weights.
  pipeline,  ///< Pipeline parallelism: the stages.
  sequence,  ///< Sequence parallelism: the ranks that split the sequence.
  expert     ///< Expert parallelism: the ranks that hold different experts.
};

/// The mode's name in lower case ("data", "tensor", ...), for messages.
[[nodiscard]] constexpr const char* to_string(ParallelMode mode) noexcept {
  switch (mode) {
    case ParallelMode::global: return "global";
    case ParallelMode::data: return "data";
    case ParallelMode::tensor: return "tensor";
    case ParallelMode::pipeline: return "pipeline";
    case ParallelMode::sequence: return "sequence";
    case ParallelMode::expert: return "expert";
  }
  return "?";
}

/// A mode and the mesh axes it runs over: {ParallelMode::tensor, {"tp", "sp"}}.
struct ModeBinding {
  ParallelMode mode;                    ///< The mode to bind (not ParallelMode::global).
  std::vector<std::string_view> axes;  ///< Its mesh axes, each named once, major first.
};

namespace detail {

/// Rank and size of this process among the ranks of `comm` on its node.
inline ProcessPlacement mpi_node_placement(MPI_Comm comm) {
  ProcessPlacement placement;
  mpi_check(MPI_Comm_rank(comm, &placement.rank), "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &placement.size), "MPI_Comm_size");
  MPI_Comm node = MPI_COMM_NULL;
  mpi_check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  const int rank_code = MPI_Comm_rank(node, &placement.local_rank);
  const int size_code = MPI_Comm_size(node, &placement.local_size);
  MPI_Comm_free(&node);
  mpi_check(rank_code, "MPI_Comm_rank");
  mpi_check(size_code, "MPI_Comm_size");
  return placement;
}

}  // namespace detail

/// Rank, size, group and neighbours per ParallelMode.
template <MeshType M>
class ParallelContext {
  static constexpr std::size_t mode_count = 6;

 public:
  /// Binds modes to axes of `groups`. std::invalid_argument for an unknown axis, a mode bound
  /// twice, or a binding of ParallelMode::global (always every axis). The node-local rank and
  /// size come from MPI_Comm_split_type when the mesh runs on an MpiCommunicator, and are the
  /// whole world otherwise (the virtual cluster is one node).
  ///@{
  ParallelContext(ProcessGroupMesh<M> groups, std::span<const ModeBinding> bindings)
      : ParallelContext(std::move(groups), bindings, std::nullopt) {}
  ParallelContext(ProcessGroupMesh<M> groups, std::initializer_list<ModeBinding> bindings)
      : ParallelContext(std::move(groups), std::span<const ModeBinding>(bindings.begin(), bindings.size()),
                        std::nullopt) {}
  ///@}

  /// From an MPI communicator: reads the launcher environment (through `getenv`) and checks
  /// it against MPI's rank and size in MPI_COMM_WORLD and, when `comm` spans MPI_COMM_WORLD,
  /// against the node-local rank and size from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED).
  /// The verdict is agreed collectively: on a contradiction every rank throws
  /// std::runtime_error (the offending rank names the variables), none hangs.
  template <typename GetEnv>
  static ParallelContext from_mpi(MPI_Comm comm, const M& mesh, std::span<const ModeBinding> bindings,
                                  GetEnv&& getenv) {
    MpiCommunicator mpi(comm);
    ProcessPlacement node = detail::mpi_node_placement(mpi.native());
    int identity = MPI_UNEQUAL;
    detail::mpi_check(MPI_Comm_compare(comm, MPI_COMM_WORLD, &identity), "MPI_Comm_compare");
    ProcessPlacement world = node;
    detail::mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &world.rank), "MPI_Comm_rank");
    detail::mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &world.size), "MPI_Comm_size");

    LauncherEnvironment environment;
    std::string problem;
    try {
      environment = read_launcher_environment(getenv);
      problem = launcher_disagreement(environment, world, identity == MPI_IDENT || identity == MPI_CONGRUENT);
    } catch (const std::runtime_error& e) {
      problem = e.what();
    }
    int first_bad = problem.empty() ? mpi.size() : mpi.rank();  // agree before anyone throws
    mpi.all_reduce(std::span<int>(&first_bad, 1), ReduceOp::min);
    if (first_bad < mpi.size()) {
      if (problem.empty())
        throw std::runtime_error("shardwise::ParallelContext::from_mpi: the launcher environment contradicts MPI on "
                                 "rank " + std::to_string(first_bad) + " (its error says how); this rank's agrees");
      throw std::runtime_error("shardwise::ParallelContext::from_mpi: on rank " + std::to_string(mpi.rank()) +
                               " the launcher environment contradicts MPI: " + problem);
    }
    ParallelContext context(ProcessGroupMesh<M>(std::move(mpi), mesh), bindings, node);
    context.environment_ = environment;
    return context;
  }
  /// The same, reading the environment with std::getenv.
  static ParallelContext from_mpi(MPI_Comm comm, const M& mesh, std::initializer_list<ModeBinding> bindings) {
    return from_mpi(comm, mesh, std::span<const ModeBinding>(bindings.begin(), bindings.size()),
                    [](const char* name) -> const char* { return std::getenv(name); });
  }
  /// The same for a mesh whose extents are all known at compile time (M::is_static): the
  /// mesh is M{}.
  static ParallelContext from_mpi(MPI_Comm comm, std::initializer_list<ModeBinding> bindings)
    // Hidden from Doxygen 1.9, which does not parse a trailing requires-clause before a body
    // and drops the members that follow.
    /// @cond
    requires M::is_static
    /// @endcond
  {
    return from_mpi(comm, M{}, bindings);
  }

  /// The communicators of the mesh, one per subset of axes.
  [[nodiscard]] ProcessGroupMesh<M>& groups() noexcept { return groups_; }
  /// The mesh: axis names and extents.
  [[nodiscard]] const M& mesh() const noexcept { return groups_.mesh(); }

  /// Rank and size in the whole mesh.
  ///@{
  [[nodiscard]] int global_rank() const noexcept { return groups_.rank(); }
  [[nodiscard]] int global_size() const noexcept { return groups_.size(); }
  ///@}

  /// Whether `mode` is bound to axes (global always is).
  [[nodiscard]] bool is_bound(ParallelMode mode) const noexcept {
    return mode == ParallelMode::global || !axes(mode).empty();
  }
  /// The mesh axes of `mode` (empty when unbound).
  [[nodiscard]] std::span<const std::string_view> axes(ParallelMode mode) const noexcept {
    return axes_[index(mode)];
  }

  /// Rank within the group of `mode` (0 for an unbound mode).
  [[nodiscard]] int local_rank(ParallelMode mode) const { return groups_.group_rank(axes(mode)); }
  /// Size of the group of `mode` (1 for an unbound mode).
  [[nodiscard]] int group_size(ParallelMode mode) const { return groups_.group_size(axes(mode)); }
  /// The communicator of `mode`; created on first use, collectively over its members.
  [[nodiscard]] AnyCommunicator& group(ParallelMode mode) {
    AnyCommunicator*& cached = group_cache_[index(mode)];
    if (cached == nullptr) cached = &groups_.group_along(axes(mode));
    return *cached;
  }
  /// World ranks of the group of `mode`, in group order.
  [[nodiscard]] std::vector<int> ranks_in_group(ParallelMode mode) const { return groups_.ranks_in_group(axes(mode)); }
  /// World rank of the next (previous) member of the group of `mode`, wrapping around.
  ///@{
  [[nodiscard]] int next_rank(ParallelMode mode, int step = 1) const {
    return groups_.group_member(axes(mode), static_cast<long long>(local_rank(mode)) + step);
  }
  [[nodiscard]] int prev_rank(ParallelMode mode, int step = 1) const {
    return groups_.group_member(axes(mode), static_cast<long long>(local_rank(mode)) - step);
  }
  ///@}
  /// Whether this rank is the first (last) member of the group of `mode`; an unbound mode's
  /// single rank is both.
  ///@{
  [[nodiscard]] bool is_first(ParallelMode mode) const { return local_rank(mode) == 0; }
  [[nodiscard]] bool is_last(ParallelMode mode) const { return local_rank(mode) == group_size(mode) - 1; }
  ///@}

  /// Rank and size among the ranks on this node.
  ///@{
  [[nodiscard]] int node_local_rank() const noexcept { return node_.local_rank; }
  [[nodiscard]] int node_local_size() const noexcept { return node_.local_size; }
  ///@}
  /// What the launcher said (from_mpi only; empty otherwise).
  [[nodiscard]] const LauncherEnvironment& launcher_environment() const noexcept { return environment_; }

  /// The coordinator: global rank 0.
  [[nodiscard]] bool is_master() const noexcept { return global_rank() == 0; }
  /// Writes the arguments and a newline to std::cout on the master only.
  template <typename... Args>
  void print_on_master(const Args&... args) const {
    if (!is_master()) return;
    (std::cout << ... << args) << std::endl;
  }
  /// Runs f() on global rank 0, then rank 1, ... with a barrier after each (collective).
  template <typename F>
  void ordered(F&& f) {
    AnyCommunicator& all = group(ParallelMode::global);
    for (int r = 0; r < global_size(); ++r) {
      if (r == global_rank()) f();
      all.barrier();
    }
  }

 private:
  static constexpr std::size_t index(ParallelMode mode) noexcept { return static_cast<std::size_t>(mode); }

  ParallelContext(ProcessGroupMesh<M> groups, std::span<const ModeBinding> bindings,
                  std::optional<ProcessPlacement> node)
      : groups_(std::move(groups)) {
    for (std::size_t i = 0; i < M::ndim; ++i) axes_[index(ParallelMode::global)].push_back(M::names[i]);
    std::array<bool, mode_count> bound{};
    for (const ModeBinding& binding : bindings) {
      if (binding.mode == ParallelMode::global)
        throw std::invalid_argument("shardwise::ParallelContext: ParallelMode::global is always every mesh axis; "
                                    "do not bind it");
      if (std::exchange(bound[index(binding.mode)], true))
        throw std::invalid_argument(std::string("shardwise::ParallelContext: mode ") + to_string(binding.mode) +
                                    " is bound twice; give each mode one list of axes");
      auto& axes = axes_[index(binding.mode)];
      for (std::string_view name : binding.axes) {
        const int a = M::index_of(name);
        if (a < 0)
          throw std::invalid_argument(std::string("shardwise::ParallelContext: mode ") + to_string(binding.mode) +
                                      " is bound to axis \"" + std::string(name) +
                                      "\", which the mesh does not have; its axes are " + detail::axis_names(M::names));
        for (std::string_view seen : axes)
          if (seen == name)
            throw std::invalid_argument(std::string("shardwise::ParallelContext: mode ") + to_string(binding.mode) +
                                        " is bound to axis \"" + std::string(name) +
                                        "\" twice; name each axis once");
        axes.push_back(M::names[static_cast<std::size_t>(a)]);  // static storage: no dangling views
      }
    }
    if (node) {
      node_ = *node;
    } else if (const MpiCommunicator* mpi = groups_.world().template target<MpiCommunicator>()) {
      node_ = detail::mpi_node_placement(mpi->native());
    } else {
      node_ = {global_rank(), global_size(), global_rank(), global_size()};
    }
  }

  ProcessGroupMesh<M> groups_;
  std::array<std::vector<std::string_view>, mode_count> axes_;
  std::array<AnyCommunicator*, mode_count> group_cache_{};
  ProcessPlacement node_;
  LauncherEnvironment environment_;
};

}  // namespace shardwise
