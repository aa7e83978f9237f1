// shardwise/layout.hpp: where the pieces of a sharded tensor are, as plain values.
//
// Where the blocks are, not how a rank stores its own: the layout policies of the array types
// (MatrixLayout, TensorLayout, SequenceMajor) are in layout_policy.hpp.
//
// Three small vocabularies that the planner, the cost model, the executor and the tensor
// types all share, so that none of them does its own arithmetic:
//   - axis lists (mesh axis indices, major first) and their algebra;
//   - block_geometry: one rank's coordinate in a mesh of run-time extents, and which block
//     of a dimension split over some axes it holds (detail/partition.hpp's rule);
//   - tensor_axes: the axes splitting each dimension of a tensor and its pending sum, and
//     dim_order: the order a tensor block's dimensions are stored in.
// Everything is constexpr and independent of the Mesh type, so that run-time code (the
// executor) is compiled once, not once per mesh. Pure compile-time: no MPI, no Eigen.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "shardwise/detail/partition.hpp"
#include "shardwise/detail/static_vector.hpp"
#include "shardwise/mesh.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise {

/// The most dimensions a sharded tensor can have.
inline constexpr std::size_t max_tensor_rank = 6;

namespace detail {

// ---- axis lists ---------------------------------------------------------------------------

constexpr bool contains(const axis_list& list, int axis) {
  for (int a : list)
    if (a == axis) return true;
  return false;
}
constexpr bool intersects(const axis_list& a, const axis_list& b) {
  for (int x : a)
    if (contains(b, x)) return true;
  return false;
}
constexpr bool intersects_names(const name_list& a, const name_list& b) {
  for (auto x : a)
    for (auto y : b)
      if (x == y) return true;
  return false;
}
constexpr bool is_subset(const axis_list& a, const axis_list& b) {
  for (int x : a)
    if (!contains(b, x)) return false;
  return true;
}
constexpr bool is_prefix(const axis_list& prefix, const axis_list& list) {
  if (prefix.size() > list.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (prefix[i] != list[i]) return false;
  return true;
}
/// The items from position `from` on.
constexpr axis_list tail(const axis_list& list, std::size_t from) {
  axis_list result;
  for (std::size_t i = from; i < list.size(); ++i) result.push_back(list[i]);
  return result;
}
/// All but the last `count` items.
constexpr axis_list without_tail(const axis_list& list, std::size_t count) {
  axis_list result;
  for (std::size_t i = 0; i + count < list.size(); ++i) result.push_back(list[i]);
  return result;
}
constexpr axis_list without(const axis_list& list, const axis_list& removed) {
  axis_list result;
  for (int a : list)
    if (!contains(removed, a)) result.push_back(a);
  return result;
}
constexpr axis_list concat(const axis_list& a, const axis_list& b) {
  axis_list result = a;
  for (int x : b) result.push_back(x);
  return result;
}
/// The axes of `list`, each once, in mesh order (ascending).
constexpr axis_list in_mesh_order(const axis_list& list) {
  axis_list sorted;
  for (int a = 0; a < static_cast<int>(max_mesh_axes); ++a)
    if (contains(list, a)) sorted.push_back(a);
  return sorted;
}

/// The longest list that both start with.
constexpr axis_list common_prefix(const axis_list& a, const axis_list& b) {
  axis_list result;
  for (std::size_t i = 0; i < a.size() && i < b.size() && a[i] == b[i]; ++i) result.push_back(a[i]);
  return result;
}

// ---- one rank's place in the mesh -------------------------------------------------------

/// A rank's coordinate in a mesh whose extents are plain run-time numbers. The one place that
/// turns axis lists into group sizes, group ranks and blocks: the cost model, the kernels,
/// the tensor types and ProcessGroupMesh all ask it. Its loops over axes are not inlined: a
/// kernel calls them a few times per step, and inlined (and unrolled at -O3) into every caller
/// they were a large part of what each translation unit compiled.
struct block_geometry {
  int ndim = 0;
  std::array<int, max_mesh_axes> extents{};
  std::array<int, max_mesh_axes> coordinate{};

  constexpr block_geometry() = default;
  /// The rank at `at` of `mesh`.
  template <MeshType M>
  constexpr block_geometry(const M& mesh, const typename M::coordinate_type& at) : ndim(static_cast<int>(M::ndim)) {
    static_assert(M::ndim <= max_mesh_axes, "shardwise: a mesh can have at most 16 axes (max_mesh_axes)");
    for (std::size_t a = 0; a < M::ndim; ++a) {
      extents[a] = mesh.extent(a);
      coordinate[a] = at[a];
    }
  }

  /// Ranks in the whole mesh (the product of its extents).
  [[nodiscard]] constexpr int size() const {
    int ranks = 1;
    for (int a = 0; a < ndim; ++a) ranks *= extents[static_cast<std::size_t>(a)];
    return ranks;
  }
  /// Ranks along `axes` (the product of their extents).
  [[gnu::noinline]] [[nodiscard]] constexpr int group_size(const axis_list& axes) const {
    int size = 1;
    for (int a : axes) size *= extents[static_cast<std::size_t>(a)];
    return size;
  }
  /// This rank's position along `axes`, first axis major: its rank in that group.
  [[gnu::noinline]] [[nodiscard]] constexpr int group_rank(const axis_list& axes) const {
    int rank = 0;
    for (int a : axes) rank = rank * extents[static_cast<std::size_t>(a)] + coordinate[static_cast<std::size_t>(a)];
    return rank;
  }
  /// The same place with group rank `g` along `axes` instead of this rank's (the other
  /// members of the group along `axes` that holds this rank).
  [[gnu::noinline]] [[nodiscard]] constexpr block_geometry member(const axis_list& axes, int g) const {
    block_geometry other = *this;
    for (std::size_t k = axes.size(); k-- > 0;) {
      const auto a = static_cast<std::size_t>(axes[k]);
      other.coordinate[a] = g % extents[a];
      g /= extents[a];
    }
    return other;
  }
  /// This rank's number in the whole mesh (C order: the last axis fastest).
  [[nodiscard]] constexpr int flat_rank() const {
    int rank = 0;
    for (std::size_t a = 0; a < static_cast<std::size_t>(ndim); ++a) rank = rank * extents[a] + coordinate[a];
    return rank;
  }

  /// Extent of this rank's block of a dimension of `global` items split over `axes`.
  [[gnu::noinline]] [[nodiscard]] constexpr std::int64_t extent(std::int64_t global, const axis_list& axes) const {
    return block_size(global, group_size(axes), group_rank(axes));
  }
  /// Offset of that block in the dimension.
  [[gnu::noinline]] [[nodiscard]] constexpr std::int64_t offset(std::int64_t global, const axis_list& axes) const {
    return block_begin(global, group_size(axes), group_rank(axes));
  }
  /// A dimension split over `kept ++ gathered`: the extent of the block that group rank `g`
  /// of `gathered` holds within this rank's block over `kept`.
  [[gnu::noinline]] [[nodiscard]] constexpr std::int64_t gathered_block(std::int64_t global, const axis_list& kept,
                                                      const axis_list& gathered, int g) const {
    const int parts = group_size(kept) * group_size(gathered);
    return block_size(global, parts, group_rank(kept) * group_size(gathered) + g);
  }
  /// ... and where that block starts within this rank's block over `kept`.
  [[gnu::noinline]] [[nodiscard]] constexpr std::int64_t gathered_offset(std::int64_t global, const axis_list& kept,
                                                       const axis_list& gathered, int g) const {
    const int parts = group_size(kept) * group_size(gathered);
    const int base = group_rank(kept) * group_size(gathered);
    return block_begin(global, parts, base + g) - block_begin(global, parts, base);
  }
};

// ---- a tensor's sharding as values, and its storage order -----------------------------------

/// The axes splitting each dimension of a tensor (major first) and the axes of its pending
/// sum: a TensorSharding resolved against a mesh, of any rank up to max_tensor_rank.
struct tensor_axes {
  int rank = 0;
  std::array<axis_list, max_tensor_rank> dims{};
  axis_list partial{};

  template <std::size_t Rank>
  static constexpr tensor_axes of(const resolved_sharding<Rank>& r) {
    static_assert(Rank <= max_tensor_rank, "shardwise: a tensor can have at most 6 dimensions");
    tensor_axes t;
    t.rank = static_cast<int>(Rank);
    for (std::size_t d = 0; d < Rank; ++d) t.dims[d] = r.dims[d];
    t.partial = r.partial;
    return t;
  }
  [[nodiscard]] constexpr const axis_list& dim(int d) const { return dims[static_cast<std::size_t>(d)]; }
  [[nodiscard]] constexpr axis_list& dim(int d) { return dims[static_cast<std::size_t>(d)]; }
  /// Every axis that splits a dimension or is pending.
  [[nodiscard]] constexpr axis_list used() const {
    axis_list all = partial;
    for (int d = 0; d < rank; ++d) all = concat(all, dim(d));
    return all;
  }
  friend constexpr bool operator==(const tensor_axes& a, const tensor_axes& b) {
    if (a.rank != b.rank || !(a.partial == b.partial)) return false;
    for (int d = 0; d < a.rank; ++d)
      if (!(a.dim(d) == b.dim(d))) return false;
    return true;
  }
};

/// Global extents of a tensor's dimensions.
using tensor_extents = std::array<std::int64_t, max_tensor_rank>;

/// The extents of this rank's block of a tensor.
[[gnu::noinline]] constexpr tensor_extents local_extents(const tensor_axes& t, const tensor_extents& global,
                                       const block_geometry& geo) {
  tensor_extents local{};
  for (int d = 0; d < t.rank; ++d) local[static_cast<std::size_t>(d)] = geo.extent(global[static_cast<std::size_t>(d)], t.dim(d));
  return local;
}
constexpr std::int64_t element_count(const tensor_extents& extents, int rank) {
  std::int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= extents[static_cast<std::size_t>(d)];
  return n;
}

/// The order a block's dimensions are stored in, outermost first: {0, 1} is a row-major
/// matrix, {1, 0} a column-major one. The innermost dimension is contiguous.
struct dim_order {
  int rank = 0;
  std::array<std::int8_t, max_tensor_rank> outer_to_inner{};

  /// Dimensions 0, 1, ... outermost first (row-major, Eigen::Tensor's RowMajor).
  static constexpr dim_order row_major(int rank) {
    dim_order o;
    o.rank = rank;
    for (int d = 0; d < rank; ++d) o.outer_to_inner[static_cast<std::size_t>(d)] = static_cast<std::int8_t>(d);
    return o;
  }
  /// The same with `dim` moved to the outside: what a collective along `dim` needs, so that
  /// the ranks' blocks are contiguous pieces of the result.
  [[nodiscard]] constexpr dim_order with_outer(int dim) const {
    dim_order o;
    o.rank = rank;
    o.outer_to_inner[0] = static_cast<std::int8_t>(dim);
    std::size_t next = 1;
    for (int i = 0; i < rank; ++i)
      if (outer_to_inner[static_cast<std::size_t>(i)] != dim) o.outer_to_inner[next++] = outer_to_inner[static_cast<std::size_t>(i)];
    return o;
  }
  [[nodiscard]] constexpr int operator[](int i) const { return outer_to_inner[static_cast<std::size_t>(i)]; }
  [[nodiscard]] constexpr int outermost() const { return rank > 0 ? outer_to_inner[0] : -1; }
  /// Where dimension `dim` is, counted from the outside.
  [[nodiscard]] constexpr int position(int dim) const {
    for (int i = 0; i < rank; ++i)
      if (outer_to_inner[static_cast<std::size_t>(i)] == dim) return i;
    return -1;
  }
  friend constexpr bool operator==(const dim_order& a, const dim_order& b) {
    if (a.rank != b.rank) return false;
    for (int i = 0; i < a.rank; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
};

/// The storage order of a matrix stored as Eigen's `order` (Eigen::RowMajor is 1).
constexpr dim_order matrix_order(int eigen_order) {
  dim_order o = dim_order::row_major(2);
  if (eigen_order == 0) o = o.with_outer(1);  // column-major: the columns outermost
  return o;
}

/// The storage order of an activation block [b, s, m] kept as a matrix of tokens x m whose
/// tokens are sequence-major (s outer, b inner): a row-major block (Eigen's 1) is [s, b, m],
/// a column-major one [m, s, b].
constexpr dim_order activation_order(int eigen_order) {
  dim_order o;
  o.rank = 3;
  if (eigen_order == 0) o.outer_to_inner = {2, 1, 0};
  else o.outer_to_inner = {1, 0, 2};
  return o;
}

/// Element strides of a block with `extents` stored in `order`.
[[gnu::noinline]] constexpr tensor_extents strides_of(const tensor_extents& extents, const dim_order& order) {
  tensor_extents strides{};
  std::int64_t stride = 1;
  for (int i = order.rank; i-- > 0;) {
    strides[static_cast<std::size_t>(order[i])] = stride;
    stride *= extents[static_cast<std::size_t>(order[i])];
  }
  return strides;
}

// ---- a sharding value back as a type ---------------------------------------------------------

template <MeshType M, const tensor_axes& T, int D, typename Positions>
struct dim_sharding_of;
template <MeshType M, const tensor_axes& T, int D>
struct dim_sharding_of<M, T, D, std::index_sequence<>> {
  using type = Replicated;
};
template <MeshType M, const tensor_axes& T, int D, std::size_t... I>
struct dim_sharding_of<M, T, D, std::index_sequence<I...>> {
  using type = Split<M::template axis_type<static_cast<std::size_t>(T.dims[D][I])>::fixed_name...>;
};

template <MeshType M, const tensor_axes& T, typename Positions>
struct partial_of_axes;
template <MeshType M, const tensor_axes& T, std::size_t... I>
struct partial_of_axes<M, T, std::index_sequence<I...>> {
  using type = Partial<M::template axis_type<static_cast<std::size_t>(T.partial[I])>::fixed_name...>;
};

template <MeshType M, const tensor_axes& T, typename Dims, bool HasPartial = !T.partial.empty()>
struct sharding_of_axes;
template <MeshType M, const tensor_axes& T, std::size_t... D>
struct sharding_of_axes<M, T, std::index_sequence<D...>, false> {
  using type = TensorSharding<typename dim_sharding_of<M, T, D, std::make_index_sequence<T.dims[D].size()>>::type...>;
};
template <MeshType M, const tensor_axes& T, std::size_t... D>
struct sharding_of_axes<M, T, std::index_sequence<D...>, true> {
  using type = TensorSharding<typename dim_sharding_of<M, T, D, std::make_index_sequence<T.dims[D].size()>>::type...,
                              typename partial_of_axes<M, T, std::make_index_sequence<T.partial.size()>>::type>;
};

}  // namespace detail

// ---- block-cyclic dimensions -------------------------------------------------------------------

/// One dimension of a block-cyclic distribution: `extent` indices in blocks of `block`, the
/// first block on process `source` of `processes`.
struct BlockCyclicDim {
  std::int64_t extent = 0;  ///< Global extent (M or N of the descriptor).
  std::int64_t block = 1;   ///< Block size (MB or NB).
  int source = 0;           ///< Process of the first block (RSRC or CSRC).
  int processes = 1;        ///< Processes along this dimension of the grid.

  /// The process that holds global index i (INDXG2P).
  [[nodiscard]] constexpr int owner(std::int64_t i) const {
    return static_cast<int>((source + i / block) % processes);
  }
  /// Where global index i sits in its owner's local array (INDXG2L).
  [[nodiscard]] constexpr std::int64_t local_index(std::int64_t i) const {
    return (i / (block * processes)) * block + i % block;
  }
  /// The global index of local index l on process p (INDXL2G).
  [[nodiscard]] constexpr std::int64_t global_index(std::int64_t l, int p) const {
    const std::int64_t distance = (processes + p - source) % processes;
    return ((l / block) * processes + distance) * block + l % block;
  }
  /// How many indices process p holds (NUMROC).
  [[nodiscard]] constexpr std::int64_t local_extent(int p) const {
    const std::int64_t distance = (processes + p - source) % processes;
    const std::int64_t blocks = extent / block;
    std::int64_t count = (blocks / processes) * block;
    const std::int64_t extra = blocks % processes;
    if (distance < extra) count += block;
    else if (distance == extra) count += extent % block;
    return count;
  }
};

/// A run of consecutive global indices held by one process: they are consecutive locally too.
struct IndexRun {
  std::int64_t global = 0;  ///< First global index.
  std::int64_t local = 0;   ///< Its local index on the process.
  std::int64_t length = 0;  ///< Indices in the run (at most one block).
};

/// The runs of [first, first + count) that process p holds, in increasing order.
inline std::vector<IndexRun> owned_runs(const BlockCyclicDim& d, int p, std::int64_t first, std::int64_t count) {
  std::vector<IndexRun> runs;
  const std::int64_t end = first + count;
  for (std::int64_t g = first; g < end;) {
    const std::int64_t b = g / d.block;
    const int owner = static_cast<int>((d.source + b) % d.processes);
    if (owner == p) {
      const std::int64_t block_end = std::min(end, (b + 1) * d.block);
      runs.push_back({g, d.local_index(g), block_end - g});
      g = block_end;
    } else {
      g = (b + (d.processes + p - owner) % d.processes) * d.block;  // p's next block
    }
  }
  return runs;
}


// ---- local layout policies ---------------------------------------------------------------------

namespace detail {

/// An array's dimensions placed otherwise than Split's blocks, as values (what tensor_axes does
/// not say): per dimension the block size of a block-cyclic one, first_larger_parts (-1) for
/// SplitFirstLarger's blocks, 0 for Split's blocks (or whole); and the coordinate of a
/// block-cyclic dimension's first block.
struct array_cycles {
  std::array<std::int64_t, max_tensor_rank> block{};
  std::array<int, max_tensor_rank> first{};
  [[nodiscard]] constexpr bool any() const {
    for (std::int64_t b : block)
      if (b != 0) return true;
    return false;
  }
};

/// Where this rank's block of a SplitFirstLarger dimension starts, and its extent.
constexpr std::pair<std::int64_t, std::int64_t> first_larger_block(std::int64_t global, const axis_list& axes,
                                                                   const block_geometry& geo) {
  const int parts = geo.group_size(axes), part = geo.group_rank(axes);
  return {first_larger_begin(global, parts, part), first_larger_size(global, parts, part)};
}

/// The indices of dimension `d` (of `global` indices, split over `axes`, placed as
/// `cycles.block[d]` says) that the rank at `geo` holds, as runs of consecutive global indices
/// that are consecutive in its block too: one run for a block, runs of at most NB for a
/// block-cyclic dimension.
inline std::vector<IndexRun> held_runs(std::int64_t global, const axis_list& axes, const array_cycles& cycles, int d,
                                       const block_geometry& geo) {
  const auto i = static_cast<std::size_t>(d);
  if (cycles.block[i] <= 0) {
    const auto [offset, n] = cycles.block[i] == 0 ? std::pair{geo.offset(global, axes), geo.extent(global, axes)}
                                                  : first_larger_block(global, axes, geo);
    if (n == 0) return {};
    return {IndexRun{offset, 0, n}};
  }
  const BlockCyclicDim dim{global, cycles.block[i], cycles.first[i], geo.group_size(axes)};
  return owned_runs(dim, geo.group_rank(axes), 0, global);
}

/// The number of indices of that dimension the rank at `geo` holds.
constexpr std::int64_t held_extent(std::int64_t global, const axis_list& axes, const array_cycles& cycles, int d,
                                   const block_geometry& geo) {
  const auto i = static_cast<std::size_t>(d);
  if (cycles.block[i] == 0) return geo.extent(global, axes);
  if (cycles.block[i] < 0) return first_larger_block(global, axes, geo).second;
  return BlockCyclicDim{global, cycles.block[i], cycles.first[i], geo.group_size(axes)}.local_extent(geo.group_rank(axes));
}

}  // namespace detail

/// The TensorSharding type of a sharding computed as a value (a constexpr tensor_axes with
/// static storage, such as a planner's answer): the way back from values to types.
template <MeshType M, const detail::tensor_axes& T>
using sharding_of_t =
    typename detail::sharding_of_axes<M, T, std::make_index_sequence<static_cast<std::size_t>(T.rank)>>::type;

}  // namespace shardwise
