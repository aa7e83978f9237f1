// shardwise/kernels/redistribute.hpp: an array moved from one placement to any other.
//
// The planner's steps move blocks (gathers, slices, reductions). A block-cyclic dimension
// (ScaLAPACK's layout, BlockCyclic<axis, NB>) is not a block, so going to or from one is a
// redistribution: every rank sends each other rank of the group the elements that rank holds
// in the target placement, one message per pair (group size - 1 rounds of sendrecv, shifting
// the partner by one each round), and copies its own share locally. The same code serves
// block-cyclic <-> blocks (any NB, any first block, any axes), block-cyclic <-> block-cyclic
// with other block sizes, and to_global of a block-cyclic array (the target replicated).
//
// Where the source is replicated along an axis of the group (the target splits it), several
// ranks hold an element: the one that sends it to q is the one whose coordinates along those
// axes are q's, so each element travels once. A source replicated over the whole group is
// copied locally and nothing is sent (distribute).
//
// redistribution_traffic() is the model: the bytes and messages a rank sends, counted from the
// same index runs the kernel moves (tests check counted == modeled).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "shardwise/comm/any_communicator.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise::detail {

/// Where an array's elements are: the axes splitting each dimension, and which of them are
/// block-cyclic. No pending sum (a Partial is reduced first).
struct placement {
  tensor_axes axes{};
  array_cycles cycles{};
};

/// A run of indices of one dimension held by both a sender and a receiver: where it starts in
/// each one's block, and its length.
struct shared_run {
  std::int64_t from = 0, to = 0, length = 0;
};

/// Per dimension, the runs of indices that the rank at `from_geo` holds in `from` and the rank
/// at `to_geo` holds in `to`, in increasing global order.
inline std::array<std::vector<shared_run>, max_tensor_rank> shared_runs(const placement& from,
                                                                       const block_geometry& from_geo,
                                                                       const placement& to,
                                                                       const block_geometry& to_geo,
                                                                       const tensor_extents& extents) {
  std::array<std::vector<shared_run>, max_tensor_rank> shared;
  for (int d = 0; d < from.axes.rank; ++d) {
    const auto i = static_cast<std::size_t>(d);
    const std::vector<IndexRun> a = held_runs(extents[i], from.axes.dim(d), from.cycles, d, from_geo);
    const std::vector<IndexRun> b = held_runs(extents[i], to.axes.dim(d), to.cycles, d, to_geo);
    for (std::size_t x = 0, y = 0; x < a.size() && y < b.size();) {
      const std::int64_t begin = std::max(a[x].global, b[y].global);
      const std::int64_t end = std::min(a[x].global + a[x].length, b[y].global + b[y].length);
      if (begin < end) shared[i].push_back({a[x].local + begin - a[x].global, b[y].local + begin - b[y].global, end - begin});
      if (a[x].global + a[x].length < b[y].global + b[y].length) ++x;
      else ++y;
    }
  }
  return shared;
}

/// Elements in the runs (their product over the dimensions).
inline std::int64_t shared_count(const std::array<std::vector<shared_run>, max_tensor_rank>& shared, int rank) {
  std::int64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    std::int64_t n = 0;
    for (const shared_run& r : shared[static_cast<std::size_t>(d)]) n += r.length;
    count *= n;
  }
  return count;
}

/// Visits the shared elements in one order both sides follow (dimension 0 outermost, runs and
/// indices increasing): f(offset in the sender's block, offset in the receiver's block), the
/// offsets from each side's element strides.
template <typename F>
void for_each_shared(const std::array<std::vector<shared_run>, max_tensor_rank>& shared, int rank,
                     const tensor_extents& from_strides, const tensor_extents& to_strides, F&& f, int d = 0,
                     std::int64_t from_at = 0, std::int64_t to_at = 0) {
  if (d == rank) {
    f(from_at, to_at);
    return;
  }
  const auto i = static_cast<std::size_t>(d);
  for (const shared_run& r : shared[i])
    for (std::int64_t k = 0; k < r.length; ++k)
      for_each_shared(shared, rank, from_strides, to_strides, f, d + 1, from_at + (r.from + k) * from_strides[i],
                      to_at + (r.to + k) * to_strides[i]);
}

/// The axes a redistribution runs over: those either placement uses, in mesh order.
inline axis_list redistribution_axes(const placement& from, const placement& to) {
  return in_mesh_order(concat(from.axes.used(), to.axes.used()));
}

/// Whether the rank at `sender` is the one that sends the rank at `receiver` its elements: the
/// two agree along the axes the target uses and the source does not (the source is replicated
/// along them, so that is where several ranks hold an element).
inline bool sends_to(const placement& from, const placement& to, const block_geometry& sender,
                     const block_geometry& receiver) {
  const axis_list used_by_source = from.axes.used();
  for (int a : to.axes.used())
    if (!contains(used_by_source, a) && sender.coordinate[static_cast<std::size_t>(a)] !=
                                            receiver.coordinate[static_cast<std::size_t>(a)])
      return false;
  return true;
}

/// The bytes and messages the rank at `geo` sends to redistribute an array of `extents` from
/// `from` to `to` with scalars of `scalar_bytes`: the model of redistribute().
inline Traffic redistribution_traffic(const placement& from, const placement& to, const tensor_extents& extents,
                                      const block_geometry& geo, std::int64_t scalar_bytes) {
  const axis_list group = redistribution_axes(from, to);
  const int size = geo.group_size(group), me = geo.group_rank(group);
  if (size == 1 || from.axes.used().empty()) return {};  // one rank, or a source every rank holds
  Traffic t;
  for (int shift = 1; shift < size; ++shift) {
    const block_geometry receiver = geo.member(group, (me + shift) % size);
    std::int64_t n = 0;
    if (sends_to(from, to, geo, receiver)) n = shared_count(shared_runs(from, geo, to, receiver, extents), from.axes.rank);
    t += message_traffic(n, scalar_bytes);
  }
  return t;
}

/// Send and receive buffers kept from call to call (per thread: a virtual cluster's ranks are
/// threads), so that a redistribution in a loop allocates only on its first call.
template <typename Scalar>
struct redistribution_buffer_pair {
  std::vector<Scalar> send, receive;
};
template <typename Scalar>
redistribution_buffer_pair<Scalar>& redistribution_buffers() {
  thread_local redistribution_buffer_pair<Scalar> buffers;
  return buffers;
}

/// Moves this rank's block of an array of `extents` from placement `from` (at `source`, element
/// strides `source_strides`) to placement `to` (into `target`, strides `target_strides`), every
/// rank of the group along redistribution_axes(from, to) taking part. Collective.
template <typename Scalar>
void redistribute(group_mesh_state& groups, const placement& from, const placement& to, const tensor_extents& extents,
                  const Scalar* source, const tensor_extents& source_strides, Scalar* target,
                  const tensor_extents& target_strides, std::vector<Scalar>& send_buffer,
                  std::vector<Scalar>& receive_buffer) {
  const block_geometry& geo = groups.geometry();
  const int rank = from.axes.rank;
  // This rank's own share: a local copy.
  for_each_shared(shared_runs(from, geo, to, geo, extents), rank, source_strides, target_strides,
                  [&](std::int64_t f, std::int64_t t) { target[t] = source[f]; });
  const axis_list group_axes = redistribution_axes(from, to);
  const int size = geo.group_size(group_axes), me = geo.group_rank(group_axes);
  if (size == 1 || from.axes.used().empty()) return;
  AnyCommunicator& group = groups.group_along(group_axes);
  for (int shift = 1; shift < size; ++shift) {
    const block_geometry receiver = geo.member(group_axes, (me + shift) % size);
    const block_geometry sender = geo.member(group_axes, (me - shift + size) % size);
    send_buffer.clear();
    if (sends_to(from, to, geo, receiver))
      for_each_shared(shared_runs(from, geo, to, receiver, extents), rank, source_strides, target_strides,
                      [&](std::int64_t f, std::int64_t) { send_buffer.push_back(source[f]); });
    const auto incoming = sends_to(from, to, sender, geo) ? shared_runs(from, sender, to, geo, extents)
                                                          : std::array<std::vector<shared_run>, max_tensor_rank>{};
    const std::int64_t n = sends_to(from, to, sender, geo) ? shared_count(incoming, rank) : 0;
    receive_buffer.resize(static_cast<std::size_t>(n));
    group.sendrecv(std::span<const Scalar>(send_buffer), (me + shift) % size, std::span<Scalar>(receive_buffer),
                   (me - shift + size) % size, 0x7d1);
    if (n == 0) continue;
    const Scalar* next = receive_buffer.data();
    for_each_shared(incoming, rank, source_strides, target_strides, [&](std::int64_t, std::int64_t t) { target[t] = *next++; });
  }
}

}  // namespace shardwise::detail
