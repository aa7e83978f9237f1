// shardwise/block_placement.hpp: where this rank's block of a distributed array lies.
//
// The placement every array type shares, whatever its layout policy: this rank's block of an
// array (its extents, its offsets and, for an owning block, its contiguous strides) from the
// sharding's axes and block-cyclic cycles on a mesh coordinate (layout.hpp's block_geometry);
// whether a view's element strides are usable; and how generate walks a block to call the
// element function with global indices. Out of DistributedArray so that it is compiled once,
// not once per array type (the out-of-line functions go to the compiled runtime,
// detail/separate_compilation.hpp). Pure compile-time vocabulary: no MPI, no Eigen.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "shardwise/detail/failure.hpp"
#include "shardwise/detail/separate_compilation.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/sharding.hpp"

namespace shardwise::detail {

/// The dimensions of an array of sharding Sh (`rank` of them) placed otherwise than Split's
/// blocks: BlockCyclic<axis, NB, First>'s block sizes and first blocks' coordinates,
/// SplitFirstLarger's blocks (0 for the others).
template <typename Sh>
constexpr array_cycles cycles_of(std::size_t rank) {
  array_cycles c;
  if constexpr (is_tensor_sharding_v<Sh>)
    for (std::size_t d = 0; d < rank && d < Sh::rank; ++d) {
      c.block[d] = Sh::dim_cycle[d];
      c.first[d] = Sh::dim_first[d];
    }
  return c;
}
/// Whether Sh holds a pending sum (Partial); false for what is not a TensorSharding.
template <typename Sh>
constexpr bool pending_sum() {
  if constexpr (is_tensor_sharding_v<Sh>) return Sh::is_partial;
  else return false;
}

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

/// Of a Partial split as `axes`, whether the rank at `geo` holds the value: the rank at coordinate
/// 0 along the Partial axes does, the others hold zeros.
[[nodiscard]] inline bool holds_share(const tensor_axes& axes, const block_geometry& geo) {
  for (int axis : axes.partial)
    if (geo.coordinate[static_cast<std::size_t>(axis)] != 0) return false;
  return true;
}

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

/// Writes this rank's block at `out` (contiguous in `storage`, `local` extents) of an array of
/// global `extents` placed by `axes` and `cycles` on `geo`: each element is `element(i, j,
/// ...)` of its global index, taken from each dimension's held runs (one run for a block, runs
/// of NB for a block-cyclic dimension), in the block's storage order.
template <typename Scalar, std::size_t Rank, typename Element>
void generate_block(Scalar* out, const std::array<std::int64_t, Rank>& extents,
                    const std::array<std::int64_t, Rank>& local, const tensor_axes& axes, const array_cycles& cycles,
                    const dim_order& storage, const block_geometry& geo, Element& element) {
  std::array<std::vector<std::int64_t>, Rank> global_of{};
  for (std::size_t d = 0; d < Rank; ++d)
    for (const IndexRun& run : held_runs(extents[d], axes.dim(static_cast<int>(d)), cycles, static_cast<int>(d), geo))
      for (std::int64_t k = 0; k < run.length; ++k) global_of[d].push_back(run.global + k);
  std::array<std::int64_t, Rank> local_index{}, index{};
  std::int64_t count = 1;
  for (std::size_t d = 0; d < Rank; ++d) {
    index[d] = local[d] > 0 ? global_of[d][0] : 0;
    count *= local[d];
  }
  for (std::int64_t e = 0; e < count; ++e) {
    out[e] = static_cast<Scalar>(std::apply(element, index));
    for (int i = storage.rank; i-- > 0;) {
      const auto d = static_cast<std::size_t>(storage[i]);
      if (++local_index[d] < local[d]) {
        index[d] = global_of[d][static_cast<std::size_t>(local_index[d])];
        break;
      }
      local_index[d] = 0;
      index[d] = global_of[d][0];
    }
  }
}

}  // namespace shardwise::detail
