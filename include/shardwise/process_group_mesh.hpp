// shardwise/process_group_mesh.hpp: one communicator per subset of mesh axes (ColossalAI's
// ProcessGroupMesh, with the EnvironmentTable's rule that a group is never created twice).
//
//   sw::ProcessGroupMesh<sw::Mesh<sw::Axis<"dp", 2>, sw::Axis<"tp", 4>>> groups{MPI_COMM_WORLD};
//   auto& tp = groups.group_along({"tp"});          // the 4 ranks that share my dp coordinate
//   auto& all = groups.group_along<"dp", "tp">();    // names checked at compile time
//
// Ranks are laid out on the mesh in C order (Mesh::ravel). The members of group_along(axes)
// are the ranks that share this rank's coordinates on every other axis; their group ranks
// follow the ravel over the requested axes in the order given (first named = slowest).
//
// Groups are cached and de-duplicated by their ordered list of world ranks: asking twice, or
// for a list that only adds extent-1 axes, returns the same communicator object (and all axes
// in mesh order return world()). The same set of ranks in another order is another
// communicator, because the order of its collective blocks differs.
//
// A ProcessGroupMesh is a handle: the groups live in a state it shares with its copies and
// with every matrix, tensor and layer built on it, and are freed with the last of them. So
// handing the mesh to a ParallelContext (by value) leaves those matrices working. A
// moved-from ProcessGroupMesh holds nothing; using it throws std::logic_error.
//
// Contract (SPMD): every rank makes the same sequence of group requests. Creating a group is
// collective over its members only, and each request creates at most the one group holding
// the caller, so creation order never depends on the rank and no rank can wait for a group
// another member does not ask for.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "shardwise/comm/any_communicator.hpp"
#include "shardwise/comm/communicator.hpp"
#include "shardwise/detail/failure.hpp"
#include "shardwise/detail/fixed_string.hpp"
#include "shardwise/detail/separate_compilation.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/mesh.hpp"

namespace shardwise {

namespace detail {
template <typename>
inline constexpr bool dependent_false = false;

/// The mesh's size is not the communicator's: the message names both, and the mesh's shape.
[[noreturn, gnu::cold, gnu::noinline]] SHARDWISE_DECL void throw_mesh_size_mismatch(int communicator_size,
                                                                                   std::span<const std::string_view> names,
                                                                                   std::span<const int> extents)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  std::string shape;
  long long size = 1;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i != 0) shape += " x ";
    shape.append(names[i]).append("=").append(std::to_string(extents[i]));
    size *= extents[i];
  }
  fail({"shardwise::ProcessGroupMesh: the mesh has ", size, " ranks (", shape, ") but the communicator has ",
        communicator_size, "; launch ", size, " ranks or use a mesh whose extents multiply to ", communicator_size});
}
#else
;
#endif

/// "dp, pp, tp" for error messages.
SHARDWISE_DECL std::string axis_names(std::span<const std::string_view> names)
#if SHARDWISE_RUNTIME_DEFINITIONS  // else compiled once: see detail/separate_compilation.hpp
{
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i != 0) text += ", ";
    text += names[i];
  }
  return text;
}
#else
;
#endif

/// What a ProcessGroupMesh and everything built on it share: the world communicator, this
/// rank's place in the mesh, and the groups created so far. Independent of the Mesh type,
/// so the kernels that ask it for groups are compiled once.
class group_mesh_state {
 public:
  SHARDWISE_DECL group_mesh_state(AnyCommunicator world, const block_geometry& geometry);
  group_mesh_state(const group_mesh_state&) = delete;
  group_mesh_state& operator=(const group_mesh_state&) = delete;

  [[nodiscard]] const block_geometry& geometry() const noexcept { return geometry_; }
  [[nodiscard]] AnyCommunicator& world() noexcept { return groups_.front()->comm; }
  [[nodiscard]] std::size_t group_count() const noexcept { return groups_.size(); }

  /// World rank of member `index` of the group along `axes` that holds this rank.
  [[nodiscard]] int member(const axis_list& axes, int index) const { return geometry_.member(axes, index).flat_rank(); }

  /// World ranks of the group along `axes`, in group order.
  [[nodiscard]] SHARDWISE_DECL std::vector<int> ranks_along(const axis_list& axes) const;

  /// The group along `axes` (valid, distinct mesh axis indices) that holds this rank.
  SHARDWISE_DECL AnyCommunicator& group_along(const axis_list& axes);

  /// The group along axis `axis` restricted to `indices` on it, or nullptr when this rank's
  /// index is not listed. Indices must be valid and distinct.
  SHARDWISE_DECL AnyCommunicator* group_along_indices(int axis, std::span<const int> indices);

 private:
  struct Group {
    std::vector<int> ranks;  // world ranks in group order
    AnyCommunicator comm;
  };
  struct IndexGroup {
    int axis;
    std::vector<int> indices;
    AnyCommunicator* group;
  };

  /// The communicator over exactly these world ranks, in this order: cached, or created now
  /// (collectively with the other members). A mesh has few groups: a linear search will do.
  SHARDWISE_DECL AnyCommunicator& group_of(std::vector<int> ranks);

  block_geometry geometry_;
  std::vector<std::unique_ptr<Group>> groups_;  // [0] is the world; addresses stay put
  std::vector<std::pair<axis_list, AnyCommunicator*>> by_axes_;
  std::vector<IndexGroup> by_indices_;
};

}  // namespace detail

namespace detail {
/// ProcessGroupMesh's parameter check. A constraint, so that naming ProcessGroupMesh<X> (a
/// reference parameter) already checks X; a static_assert inside it, so that the first error
/// is this text rather than a bare "constraints not satisfied".
template <typename M>
struct checked_group_mesh_argument {
  static_assert(MeshType<M>,
                "shardwise::ProcessGroupMesh<M>: M must be a mesh type; wrap the axes in shardwise::Mesh<...>, "
                "as in ProcessGroupMesh<Mesh<Axis<\"x\", 2>>>");
  static constexpr bool value = true;
};
template <typename M>
concept group_mesh_argument = checked_group_mesh_argument<M>::value;
}  // namespace detail

/// Runtime process groups over the axes of a Mesh.
template <detail::group_mesh_argument M>
class ProcessGroupMesh {

 public:
  using mesh_type = M;                                   ///< The Mesh the groups are over.
  using coordinate_type = typename M::coordinate_type;  ///< A position in the mesh: one index per axis.

  /// Over `comm`: a Communicator (an rvalue is taken over; an lvalue is duplicated with
  /// create_group, which is collective over all its ranks), or a handle with a
  /// communicator_adapter such as MPI_Comm (include shardwise/comm/mpi.hpp). Throws
  /// std::invalid_argument on every rank, without communicating, when the mesh size differs
  /// from the communicator size.
  template <typename Comm>
    requires(!std::same_as<std::remove_cvref_t<Comm>, ProcessGroupMesh>)
  explicit ProcessGroupMesh(Comm&& comm, M mesh = M{}) : mesh_(mesh) {
    AnyCommunicator world = take(std::forward<Comm>(comm), mesh_);
    rank_ = world.rank();
    coordinate_ = mesh_.unravel(rank_);
    state_ = std::make_shared<detail::group_mesh_state>(std::move(world), detail::block_geometry(mesh_, coordinate_));
  }

  /// Copies share the groups (see the top of this file); a moved-from mesh holds none.
  ///@{
  ProcessGroupMesh(const ProcessGroupMesh&) = default;
  ProcessGroupMesh& operator=(const ProcessGroupMesh&) = default;
  ProcessGroupMesh(ProcessGroupMesh&&) noexcept = default;
  ProcessGroupMesh& operator=(ProcessGroupMesh&&) noexcept = default;
  ///@}

  /// The mesh: axis names and extents.
  [[nodiscard]] const M& mesh() const noexcept { return mesh_; }
  /// Rank in the whole mesh (the communicator given to the constructor).
  [[nodiscard]] int rank() const noexcept { return rank_; }
  /// Number of ranks in the mesh (the product of its extents).
  [[nodiscard]] int size() const noexcept { return mesh_.size(); }
  /// This rank's position in the mesh.
  [[nodiscard]] const coordinate_type& coordinate() const noexcept { return coordinate_; }
  /// The communicator over the whole mesh.
  [[nodiscard]] AnyCommunicator& world() const { return state("world").world(); }

  /// The group along `axes` (run-time names) that holds this rank. std::invalid_argument for a
  /// name the mesh does not have or a name given twice. A repeated request costs a short
  /// search and no allocation.
  ///@{
  AnyCommunicator& group_along(std::initializer_list<std::string_view> axes) const {
    return group_along(std::span<const std::string_view>(axes.begin(), axes.size()));
  }
  AnyCommunicator& group_along(std::span<const std::string_view> axes) const {
    return state("group_along").group_along(resolve(axes, "group_along"));
  }
  ///@}
  /// The group along axes named at compile time: group_along<"dp", "sp">().
  template <fixed_string... Names>
  AnyCommunicator& group_along() const {
    static_assert(((sizeof(detail::checked_mesh_axis_name<Names, M::has_axis(Names.view())>) > 0) && ...));
    static constexpr detail::axis_list axes{M::index_of(Names.view())...};
    static_assert(distinct(axes), "shardwise::ProcessGroupMesh::group_along<...>: an axis is named twice");
    return state("group_along").group_along(axes);
  }

  /// The group along the axes with these indices in the mesh (first = major), for code that
  /// computes its axes, such as the kernels. Indices must be valid and distinct.
  AnyCommunicator& group_along_axis_indices(const detail::axis_list& axes) const {
    return state("group_along_axis_indices").group_along(axes);
  }

  /// The group along `axis` restricted to the listed indices on it, such as the first and the last
  /// pipeline stage, in the order listed; nullptr when this rank's index on `axis` is not listed
  /// (non-members neither communicate nor create anything). std::invalid_argument for an
  /// index outside the axis or listed twice.
  ///@{
  AnyCommunicator* group_along_indices(std::string_view axis, std::initializer_list<int> indices) const {
    return group_along_indices(axis, std::span<const int>(indices.begin(), indices.size()));
  }
  AnyCommunicator* group_along_indices(std::string_view axis, std::span<const int> indices) const {
    const int a = resolve(std::span<const std::string_view>(&axis, 1), "group_along_indices")[0];
    const int extent = mesh_.extent(static_cast<std::size_t>(a));
    for (std::size_t i = 0; i < indices.size(); ++i) {
      if (indices[i] < 0 || indices[i] >= extent)
        detail::fail({"shardwise::ProcessGroupMesh::group_along_indices: index ", indices[i], " is outside axis \"",
                      axis, "\" (extent ", extent, ")"});
      for (std::size_t j = 0; j < i; ++j)
        if (indices[j] == indices[i])
          detail::fail({"shardwise::ProcessGroupMesh::group_along_indices: index ", indices[i], " is listed twice"});
    }
    return state("group_along_indices").group_along_indices(a, indices);
  }
  ///@}

  /// World ranks of the group along `axes`, in group order, computed without communicating.
  ///@{
  [[nodiscard]] std::vector<int> ranks_in_group(std::initializer_list<std::string_view> axes) const {
    return ranks_in_group(std::span<const std::string_view>(axes.begin(), axes.size()));
  }
  [[nodiscard]] std::vector<int> ranks_in_group(std::span<const std::string_view> axes) const {
    return state("ranks_in_group").ranks_along(resolve(axes, "ranks_in_group"));
  }
  ///@}

  /// This rank's rank in the group along `axes` (no communication).
  ///@{
  [[nodiscard]] int group_rank(std::initializer_list<std::string_view> axes) const {
    return group_rank(std::span<const std::string_view>(axes.begin(), axes.size()));
  }
  [[nodiscard]] int group_rank(std::span<const std::string_view> axes) const {
    return geometry().group_rank(resolve(axes, "group_rank"));
  }
  ///@}
  /// Number of ranks in the group along `axes` (no communication).
  ///@{
  [[nodiscard]] int group_size(std::initializer_list<std::string_view> axes) const {
    return group_size(std::span<const std::string_view>(axes.begin(), axes.size()));
  }
  [[nodiscard]] int group_size(std::span<const std::string_view> axes) const {
    return geometry().group_size(resolve(axes, "group_size"));
  }
  ///@}
  /// World rank of group rank `index` (wrapped around) of the group along `axes`.
  [[nodiscard]] int group_member(std::span<const std::string_view> axes, long long index) const {
    const detail::axis_list list = resolve(axes, "group_member");
    const long long count = geometry().group_size(list);
    return geometry().member(list, static_cast<int>(((index % count) + count) % count)).flat_rank();
  }

  /// World rank `step` places further along `axis`, wrapping around.
  [[nodiscard]] int next_rank(std::string_view axis, int step = 1) const {
    const auto a = static_cast<std::size_t>(resolve(std::span<const std::string_view>(&axis, 1), "next_rank")[0]);
    coordinate_type c = coordinate_;
    c[a] = static_cast<int>((static_cast<long long>(c[a]) + step) % mesh_.extent(a));
    return mesh_.ravel(c, IndexMode::wrap);
  }
  /// World rank `step` places back along `axis`, wrapping around.
  [[nodiscard]] int prev_rank(std::string_view axis, int step = 1) const { return next_rank(axis, -step); }

  /// Number of distinct communicators held (the world included).
  [[nodiscard]] std::size_t num_groups() const { return state("num_groups").group_count(); }

  /// This rank's place as plain numbers (what the kernels use).
  [[nodiscard]] detail::block_geometry geometry() const noexcept { return {mesh_, coordinate_}; }
  /// The shared state, for the kernels; std::logic_error when moved from.
  [[nodiscard]] detail::group_mesh_state& state(const char* function = "a member function") const {
    if (!state_)
      detail::fail<std::logic_error>({"shardwise::ProcessGroupMesh::", function,
                                      ": this ProcessGroupMesh was moved from and holds no groups; use the object it was "
                                      "moved into (matrices built on it keep working: they share its groups)"});
    return *state_;
  }
  /// Whether the two share their groups (copies of one mesh, or the same object).
  [[nodiscard]] bool shares_groups_with(const ProcessGroupMesh& other) const noexcept { return state_ == other.state_; }
  /// False once moved from.
  [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(state_); }

 private:
  static void check_size(int communicator_size, const M& mesh) {
    if (communicator_size != mesh.size())
      detail::throw_mesh_size_mismatch(communicator_size, M::names, mesh.extents());
  }

  template <typename C>
  static AnyCommunicator to_any(C&& comm) {
    if constexpr (std::same_as<std::remove_cvref_t<C>, AnyCommunicator>)
      return std::move(comm);
    else
      return AnyCommunicator(std::move(comm));
  }

  template <typename Comm>
  static AnyCommunicator take(Comm&& comm, const M& mesh) {
    using C = std::remove_cvref_t<Comm>;
    if constexpr (Communicator<C>) {
      check_size(comm.size(), mesh);
      if constexpr (std::is_lvalue_reference_v<Comm>) {
        std::vector<int> all(static_cast<std::size_t>(comm.size()));
        std::iota(all.begin(), all.end(), 0);
        return to_any(comm.create_group(all));
      } else {
        return to_any(std::move(comm));
      }
    } else if constexpr (AdaptableToCommunicator<C>) {
      AnyCommunicator adapted = to_any(communicator_adapter<C>::adapt(comm));
      check_size(adapted.size(), mesh);
      return adapted;
    } else {
      static_assert(detail::dependent_false<C>,
                    "shardwise::ProcessGroupMesh needs a Communicator (MpiCommunicator, VirtualCommunicator, "
                    "CountingCommunicator<...>, AnyCommunicator) or an MPI_Comm (then include "
                    "shardwise/comm/mpi.hpp)");
    }
  }

  static constexpr bool distinct(const detail::axis_list& axes) {
    for (std::size_t i = 0; i < axes.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (axes[i] == axes[j]) return false;
    return true;
  }

  static detail::axis_list resolve(std::span<const std::string_view> names, const char* function) {
    detail::axis_list axes;
    for (std::string_view name : names) {
      const int a = M::index_of(name);
      if (a < 0)
        detail::fail({"shardwise::ProcessGroupMesh::", function, ": the mesh has no axis \"", name,
                      "\"; its axes are ", detail::axis_names(M::names)});
      for (int seen : axes)
        if (seen == a)
          detail::fail({"shardwise::ProcessGroupMesh::", function, ": axis \"", name, "\" is named twice"});
      axes.push_back(a);
    }
    return axes;
  }

  M mesh_;
  int rank_ = 0;
  coordinate_type coordinate_{};
  std::shared_ptr<detail::group_mesh_state> state_;
};

// ---- definitions (compiled once under SHARDWISE_SEPARATE_COMPILATION) ----------------------
#if SHARDWISE_RUNTIME_DEFINITIONS
namespace detail {

SHARDWISE_DECL group_mesh_state::group_mesh_state(AnyCommunicator world, const block_geometry& geometry)
    : geometry_(geometry) {
  auto group = std::make_unique<Group>(Group{std::vector<int>(static_cast<std::size_t>(world.size())), std::move(world)});
  std::iota(group->ranks.begin(), group->ranks.end(), 0);
  groups_.push_back(std::move(group));
}

SHARDWISE_DECL std::vector<int> group_mesh_state::ranks_along(const axis_list& axes) const {
  std::vector<int> ranks(static_cast<std::size_t>(geometry_.group_size(axes)));
  for (std::size_t i = 0; i < ranks.size(); ++i) ranks[i] = member(axes, static_cast<int>(i));
  return ranks;
}

SHARDWISE_DECL AnyCommunicator& group_mesh_state::group_along(const axis_list& axes) {
  for (const auto& [known, group] : by_axes_)
    if (known == axes) return *group;
  AnyCommunicator& group = group_of(ranks_along(axes));
  by_axes_.emplace_back(axes, &group);
  return group;
}

SHARDWISE_DECL AnyCommunicator* group_mesh_state::group_along_indices(int axis, std::span<const int> indices) {
  const int mine = geometry_.coordinate[static_cast<std::size_t>(axis)];
  if (std::find(indices.begin(), indices.end(), mine) == indices.end()) return nullptr;
  for (const IndexGroup& known : by_indices_)
    if (known.axis == axis && std::ranges::equal(known.indices, indices)) return known.group;
  std::vector<int> ranks;
  ranks.reserve(indices.size());
  block_geometry other = geometry_;
  for (int index : indices) {
    other.coordinate[static_cast<std::size_t>(axis)] = index;
    ranks.push_back(other.flat_rank());
  }
  AnyCommunicator& group = group_of(std::move(ranks));
  by_indices_.push_back({axis, std::vector<int>(indices.begin(), indices.end()), &group});
  return &group;
}

SHARDWISE_DECL AnyCommunicator& group_mesh_state::group_of(std::vector<int> ranks) {
  for (const auto& known : groups_)
    if (known->ranks == ranks) return known->comm;
  AnyCommunicator comm = world().create_group(ranks);
  groups_.push_back(std::make_unique<Group>(Group{std::move(ranks), std::move(comm)}));
  return groups_.back()->comm;
}

}  // namespace detail
#endif

}  // namespace shardwise
