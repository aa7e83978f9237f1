/// @file
/// shardwise/sharding.hpp: how a tensor is laid out over a mesh, as a type.
///
/// Each dimension is Replicated or Split<axes...> (cut into blocks over the named
/// mesh axes, the first named axis major). A trailing Partial<axes...> marks a
/// pending sum: every rank of those axes holds a partial value and the true
/// tensor is their sum. Pure compile-time: no MPI, no Eigen.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "shardwise/detail/pack.hpp"
#include "shardwise/detail/static_vector.hpp"
#include "shardwise/detail/text.hpp"
#include "shardwise/mesh.hpp"

namespace shardwise {

/// The most axes a mesh used for sharding can have. Axis lists are fixed-capacity constexpr
/// values inside every plan, so the capacity is paid in every plan's size; real meshes have
/// at most five or six axes.
inline constexpr std::size_t max_mesh_axes = 16;

/// A dimension held whole by every rank.
struct Replicated {
  /// Empty: no axis splits the dimension (Split and Partial have the same member).
  static constexpr detail::static_vector<std::string_view, max_mesh_axes> axes{};
};

/// A dimension cut into blocks over one or more mesh axes, major first:
/// Split<"x", "y"> gives block x * extent(y) + y to the rank at (x, y).
template <fixed_string... Names>
struct Split {
  static_assert(sizeof...(Names) > 0,
                "shardwise::Split<> names no axis; write Replicated for a dimension that is not split");
  /// The axes cutting the dimension, major first.
  static constexpr detail::static_vector<std::string_view, max_mesh_axes> axes{Names.view()...};
};

/// A dimension cut into blocks over mesh axes as Split is, with the other remainder convention:
/// the first n mod p parts hold one element more (10 over 4: 3, 3, 2, 2), the layout of PETSc
/// (PETSC_DECIDE) and of most MPI codes' own arrays, so that such a code wraps its buffers as
/// they are. Over several axes the parts are numbered as Split's, the first axis major. The
/// planner plans with Split's blocks (they nest; these do not), so a product of such arrays
/// moves the few elements that differ first, as planned and counted steps (see
/// block_cyclic_matmul_plan), and gives C back in this convention where C keeps their axes.
template <fixed_string... Names>
struct SplitFirstLarger {
  static_assert(sizeof...(Names) > 0,
                "shardwise::SplitFirstLarger<> names no axis; write Replicated for a dimension that is not split");
  /// The axes cutting the dimension, major first.
  static constexpr detail::static_vector<std::string_view, max_mesh_axes> axes{Names.view()...};
};

namespace detail {
/// BlockCyclic's checks, one error for the first bad argument. They sit in a function so that a
/// failed one leaves BlockCyclic itself valid: clang++ would otherwise mark the class invalid and
/// report every later use of its members too (a cascade of errors after the one that matters).
template <std::int64_t NB, int First>
constexpr bool block_cyclic_arguments_valid() {
  if constexpr (NB < 1)
    static_assert(NB >= 1, "shardwise::BlockCyclic<axis, NB>: the block size NB must be at least 1; give the indices of one block (ScaLAPACK's MB or NB)");
  else
    static_assert(First >= 0, "shardwise::BlockCyclic<axis, NB, First>: the first block's coordinate must not be negative; give the coordinate along the axis that holds the first block, from 0 (ScaLAPACK's RSRC or CSRC)");
  return true;
}
}  // namespace detail

/// A dimension cut into blocks of `NB` indices dealt round-robin over one mesh axis, the first
/// block to coordinate `First` along it: ScaLAPACK's 2-D block-cyclic distribution, one
/// dimension at a time (MB and RSRC for rows, NB and CSRC for columns). Block k of the dimension
/// lives at coordinate (First + k) mod extent(axis); each rank stores its blocks one after
/// another (ScaLAPACK's NUMROC gives how many indices that is).
template <fixed_string Name, std::int64_t NB, int First = 0>
struct BlockCyclic {
  static_assert(detail::block_cyclic_arguments_valid<NB, First>());
  /// The axis dealing the blocks.
  static constexpr detail::static_vector<std::string_view, max_mesh_axes> axes{Name.view()};
  /// Indices per block (MB or NB).
  static constexpr std::int64_t block = NB;
  /// The coordinate along the axis that holds the first block (RSRC or CSRC).
  static constexpr int first = First;
};

/// A pending sum over mesh axes: the tensor is the sum of the copies held along them.
template <fixed_string... Names>
struct Partial {
  static_assert(sizeof...(Names) > 0,
                "shardwise::Partial<> names no axis; leave it out for a tensor with no pending sum");
  /// The axes along which the copies must still be summed.
  static constexpr detail::static_vector<std::string_view, max_mesh_axes> axes{Names.view()...};
};

namespace detail {

using name_list = static_vector<std::string_view, max_mesh_axes>;

template <typename T> inline constexpr bool is_dim_sharding_v = false;
template <> inline constexpr bool is_dim_sharding_v<Replicated> = true;
template <fixed_string... N> inline constexpr bool is_dim_sharding_v<Split<N...>> = true;
template <fixed_string N, std::int64_t B, int F> inline constexpr bool is_dim_sharding_v<BlockCyclic<N, B, F>> = true;
template <fixed_string... N> inline constexpr bool is_dim_sharding_v<SplitFirstLarger<N...>> = true;

/// How a dimension is placed beyond its axes (array_cycles' block, see layout.hpp): BlockCyclic's
/// block size, first_larger_parts for SplitFirstLarger, 0 for Split's blocks and Replicated.
inline constexpr std::int64_t first_larger_parts = -1;
template <typename T> inline constexpr std::int64_t dim_cycle_v = 0;
template <fixed_string N, std::int64_t B, int F> inline constexpr std::int64_t dim_cycle_v<BlockCyclic<N, B, F>> = B;
template <fixed_string... N> inline constexpr std::int64_t dim_cycle_v<SplitFirstLarger<N...>> = first_larger_parts;

template <typename T> inline constexpr bool is_block_cyclic_v = false;
template <fixed_string N, std::int64_t B, int F> inline constexpr bool is_block_cyclic_v<BlockCyclic<N, B, F>> = true;

template <typename T> inline constexpr bool is_partial_v = false;
template <fixed_string... N> inline constexpr bool is_partial_v<Partial<N...>> = true;

template <typename... P>
constexpr bool partial_only_last() {
  constexpr bool flags[] = {is_partial_v<P>..., false};
  for (std::size_t i = 0; i + 1 < sizeof...(P); ++i)
    if (flags[i]) return false;
  return true;
}

constexpr bool all_distinct(const name_list& names) {
  for (std::size_t i = 0; i < names.size(); ++i)
    for (std::size_t j = i + 1; j < names.size(); ++j)
      if (names[i] == names[j]) return false;
  return true;
}

template <typename... P>
constexpr name_list every_axis_named() {
  name_list all;
  ((void)[&] { for (auto name : P::axes) all.push_back(name); }(), ...);
  return all;
}

}  // namespace detail

/// The sharding of a whole tensor: one Replicated / Split per dimension, then
/// optionally one Partial. TensorSharding<Split<"x">, Replicated> is a matrix
/// whose rows are cut over x.
template <typename... Params>
struct TensorSharding {
  static_assert(((detail::is_dim_sharding_v<Params> || detail::is_partial_v<Params>) && ...),
                "shardwise::TensorSharding: every parameter must be Replicated, Split<\"axis\", ...>, "
                "SplitFirstLarger<\"axis\", ...>, BlockCyclic<\"axis\", NB> or Partial<\"axis\", ...>");
  static_assert(detail::partial_only_last<Params...>(),
                "shardwise::TensorSharding: at most one Partial<...>, and it must come last, after the "
                "dimension shardings");
  static_assert(detail::all_distinct(detail::every_axis_named<Params...>()),
                "shardwise::TensorSharding: a mesh axis appears twice in one tensor; an axis can split "
                "at most one dimension, and a Partial axis cannot also split a dimension");

  /// Number of dimensions (the Partial, if any, is not one).
  static constexpr std::size_t rank = (std::size_t{0} + ... + std::size_t{detail::is_dim_sharding_v<Params>});
  /// Whether the tensor carries a pending sum (a trailing Partial<...>).
  static constexpr bool is_partial = (detail::is_partial_v<Params> || ...);

  /// The Replicated / Split type of dimension I.
  template <std::size_t I>
  using dim = typename detail::pack_element<I, Params...>::type;

  /// Axis names splitting each dimension, major first.
  static constexpr std::array<detail::name_list, rank> dim_axes = [] {
    std::array<detail::name_list, rank> result{};
    [[maybe_unused]] std::size_t i = 0;  // unused for a 0-D TensorSharding<>
    ((void)[&] { if constexpr (detail::is_dim_sharding_v<Params>) result[i++] = Params::axes; }(), ...);
    return result;
  }();

  /// Per dimension, the block size of a BlockCyclic dimension, detail::first_larger_parts (-1)
  /// for SplitFirstLarger, 0 for Replicated and Split.
  static constexpr std::array<std::int64_t, rank> dim_cycle = [] {
    std::array<std::int64_t, rank> result{};
    [[maybe_unused]] std::size_t i = 0;
    ((void)[&] {
      if constexpr (detail::is_dim_sharding_v<Params>) result[i++] = detail::dim_cycle_v<Params>;
    }(), ...);
    return result;
  }();
  /// Per dimension, the coordinate of a BlockCyclic dimension's first block (0 otherwise).
  static constexpr std::array<int, rank> dim_first = [] {
    std::array<int, rank> result{};
    [[maybe_unused]] std::size_t i = 0;
    ((void)[&] {
      if constexpr (detail::is_block_cyclic_v<Params>) result[i++] = Params::first;
      else if constexpr (detail::is_dim_sharding_v<Params>) ++i;
    }(), ...);
    return result;
  }();
  /// Whether a dimension is BlockCyclic or SplitFirstLarger: placed otherwise than the blocks
  /// the planner plans with, so reached from them by a redistribution.
  static constexpr bool is_redistributed = ((detail::dim_cycle_v<Params> != 0) || ...);

  /// Axis names of the pending sum (empty when there is none).
  static constexpr detail::name_list partial_axes = [] {
    detail::name_list result{};
    ((void)[&] { if constexpr (detail::is_partial_v<Params>) result = Params::axes; }(), ...);
    return result;
  }();

  /// Readable form, e.g. "[x, (y,z)] + Partial(w)"; "-" marks a replicated dimension.
  static std::string to_string() {
    std::string text = "[";
    for (std::size_t d = 0; d < rank; ++d) {
      if (d) text.append(", ");
      text.append(detail::axes_text(dim_axes[d]));
      if (dim_cycle[d] > 0) text.append(detail::cat(" cyclic ", std::to_string(dim_cycle[d])));
      if (dim_cycle[d] == detail::first_larger_parts) text.append(" first larger");
    }
    text.append("]");
    if (is_partial) text.append(detail::cat(" + Partial(", detail::axes_text(partial_axes), ")"));
    return text;
  }
};

namespace detail {
template <typename T> inline constexpr bool is_tensor_sharding_v = false;
template <typename... P> inline constexpr bool is_tensor_sharding_v<TensorSharding<P...>> = true;
}  // namespace detail

namespace detail {
/// Whether T is a TensorSharding with a BlockCyclic or SplitFirstLarger dimension (false for
/// anything else).
template <typename T> inline constexpr bool has_redistributed_v = false;
template <typename... P> inline constexpr bool has_redistributed_v<TensorSharding<P...>> = TensorSharding<P...>::is_redistributed;
}  // namespace detail

/// Satisfied by every TensorSharding<...> type.
template <typename T>
concept TensorShardingType = detail::is_tensor_sharding_v<T>;

namespace detail {
template <std::size_t> using replicated_dim = Replicated;
template <typename Seq> struct replicated_sharding;
template <std::size_t... I>
struct replicated_sharding<std::index_sequence<I...>> { using type = TensorSharding<replicated_dim<I>...>; };
}  // namespace detail

/// A fully replicated tensor of `Rank` dimensions.
template <std::size_t Rank>
using replicated_sharding_t = typename detail::replicated_sharding<std::make_index_sequence<Rank>>::type;

namespace detail {

/// Mesh axis indices, major first.
using axis_list = static_vector<int, max_mesh_axes>;

/// A sharding with its names turned into the mesh's axis indices.
template <std::size_t Rank>
struct resolved_sharding {
  std::array<axis_list, Rank> dims{};
  axis_list partial{};
};

template <TensorShardingType Sh>
constexpr name_list every_axis_named_of() {
  name_list all;
  for (const auto& dim : Sh::dim_axes)
    for (auto name : dim) all.push_back(name);
  for (auto name : Sh::partial_axes) all.push_back(name);
  return all;
}

template <MeshType M>
constexpr bool all_names_in_mesh(const name_list& names) {
  for (auto name : names)
    if (!M::has_axis(name)) return false;
  return true;
}

template <MeshType M>
constexpr axis_list resolve_names(const name_list& names) {
  axis_list axes;
  for (auto name : names) axes.push_back(M::index_of(name));
  return axes;
}

enum class ShardingError { none, wrong_rank, unknown_axis, mesh_too_large };

template <MeshType M, TensorShardingType Sh, std::size_t Rank>
constexpr ShardingError sharding_error() {
  if (M::ndim > max_mesh_axes) return ShardingError::mesh_too_large;
  if (Sh::rank != Rank) return ShardingError::wrong_rank;
  if (!all_names_in_mesh<M>(every_axis_named_of<Sh>())) return ShardingError::unknown_axis;
  return ShardingError::none;
}

/// One axis name of a sharding, checked against the mesh. A template per name so that the
/// name is on the first error line (mesh_has_no_axis_named<Name>, see mesh.hpp), and the
/// message with the fix right after it.
template <MeshType M, fixed_string Name>
struct checked_axis_name {
  static_assert(sizeof(unknown_axis_report<Name, M::has_axis(Name.view())>) > 0);
  static_assert(M::has_axis(Name.view()),
                "shardwise: the sharding names an axis that the Mesh does not have (the error above names it); "
                "check the spelling against the Mesh's Axis<\"name\", extent> list");
};

// Completing a checker instantiates its static_asserts (a sizeof is never 0). Not base
// classes: a sharding may repeat a type (two Replicated dimensions).
template <MeshType M, typename Param>
struct checked_axis_names {};  // Replicated
template <MeshType M, fixed_string... Names>
struct checked_axis_names<M, Split<Names...>> {
  static_assert(((sizeof(checked_axis_name<M, Names>) > 0) && ...));
};
template <MeshType M, fixed_string... Names>
struct checked_axis_names<M, SplitFirstLarger<Names...>> {
  static_assert(((sizeof(checked_axis_name<M, Names>) > 0) && ...));
};
template <MeshType M, fixed_string Name, std::int64_t B, int F>
struct checked_axis_names<M, BlockCyclic<Name, B, F>> {
  static_assert(sizeof(checked_axis_name<M, Name>) > 0);
};
template <MeshType M, fixed_string... Names>
struct checked_axis_names<M, Partial<Names...>> {
  static_assert(((sizeof(checked_axis_name<M, Names>) > 0) && ...));
};

/// Every name of the sharding, one check (and one error) each; instantiated only when a name
/// is unknown, so that a sharding with another problem gets that problem's message alone.
template <bool Check, MeshType M, TensorShardingType Sh>
struct checked_sharding_names {};
template <MeshType M, typename... Params>
struct checked_sharding_names<true, M, TensorSharding<Params...>> {
  static_assert(((sizeof(checked_axis_names<M, Params>) > 0) && ...));
};

/// Instantiating this checks Sh against the mesh and a tensor rank, one message per problem.
template <MeshType M, TensorShardingType Sh, std::size_t Rank>
struct checked_sharding {
  static constexpr ShardingError error = sharding_error<M, Sh, Rank>();
  static_assert(error != ShardingError::mesh_too_large,
                "shardwise: a mesh used for sharding can have at most 16 axes");
  static_assert(error != ShardingError::wrong_rank,
                "shardwise: the TensorSharding has the wrong number of dimensions; a matrix needs "
                "exactly two, TensorSharding<rows, columns> (a Partial<...> does not count)");
  static_assert(sizeof(checked_sharding_names<error == ShardingError::unknown_axis, M, Sh>) > 0);
  static constexpr bool value = error == ShardingError::none;
};

template <MeshType M, TensorShardingType Sh>
constexpr resolved_sharding<Sh::rank> resolve_sharding() {
  resolved_sharding<Sh::rank> result;
  for (std::size_t d = 0; d < Sh::rank; ++d) result.dims[d] = resolve_names<M>(Sh::dim_axes[d]);
  result.partial = resolve_names<M>(Sh::partial_axes);
  return result;
}

}  // namespace detail
}  // namespace shardwise
