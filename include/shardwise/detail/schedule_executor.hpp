// shardwise/detail/schedule_executor.hpp: runs a schedule from policy.hpp.
//
// The executor is instantiated per plan: the steps, and the storage order of every
// intermediate block, are compile-time constants, so each policy (with its
// shardings and variant) compiles to its own straight-line kernel: collectives on
// contiguous buffers and Eigen GEMMs on Eigen::Map with noalias(). Scratch space
// comes from detail::Workspace and is reused from call to call.
//
// Storage orders: a block about to be gathered or reduce-scattered along a
// dimension is kept with that dimension outer, so every rank's part is one
// contiguous range. The last step writes straight into the result's storage when
// the orders agree; otherwise it goes through a scratch buffer and one copy.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>

#include "shardwise/comm/any_communicator.hpp"
#include "shardwise/detail/gemm.hpp"
#include "shardwise/detail/workspace.hpp"
#include "shardwise/policy.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace shardwise::detail {

/// The order in which `dim` is outer: rows outer is row-major.
constexpr int outer_order(int dim) { return dim == 0 ? Eigen::RowMajor : Eigen::ColMajor; }

/// Storage order of A, B and C before each step (index i) and after the last (index N),
/// and which step writes the final C block.
struct order_table {
  std::array<int, 13> a{}, b{}, c{};
  std::array<bool, 12> writes_output{};
};

constexpr bool rewrites_c(StepKind k) { return k != StepKind::all_gather; }

constexpr order_table compute_orders(const Schedule& steps, int order_a, int order_b, int order_c_in,
                                     int order_c_out) {
  order_table t;
  const std::size_t n = steps.size();
  t.a[0] = order_a;
  t.b[0] = order_b;
  t.c[0] = order_c_in;
  // A step writes the output when only in-place all-reduces follow it.
  for (std::size_t i = 0; i < n; ++i) {
    const Step& s = steps[i];
    bool last = s.kind != StepKind::all_gather || s.operand == Operand::C;
    for (std::size_t j = i + 1; j < n; ++j)
      if (steps[j].kind != StepKind::all_reduce) last = false;
    t.writes_output[i] = last && (s.kind != StepKind::all_reduce || i == 0 || !t.writes_output[i - 1]);
  }
  // The order a step wants its C input in: outer along its dimension for a gather or scatter.
  auto wanted = [&](std::size_t j) {
    for (; j < n; ++j) {
      const Step& s = steps[j];
      if (s.kind == StepKind::all_reduce) continue;
      if ((s.kind == StepKind::all_gather && s.operand == Operand::C) || s.kind == StepKind::reduce_scatter)
        return outer_order(s.dim);
      break;
    }
    return order_c_out;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const Step& s = steps[i];
    t.a[i + 1] = t.a[i];
    t.b[i + 1] = t.b[i];
    t.c[i + 1] = t.c[i];
    switch (s.kind) {
      case StepKind::all_gather:
        if (s.operand == Operand::A) t.a[i + 1] = outer_order(s.dim);
        else if (s.operand == Operand::B) t.b[i + 1] = outer_order(s.dim);
        else t.c[i + 1] = t.writes_output[i] ? order_c_out : outer_order(s.dim);
        break;
      case StepKind::reduce_scatter:
        t.c[i + 1] = t.writes_output[i] ? order_c_out : outer_order(s.dim);
        break;
      case StepKind::all_reduce:
        if (t.writes_output[i]) t.c[i + 1] = order_c_out;
        break;
      case StepKind::local_gemm:
      case StepKind::ring_all_gather_gemm:
      case StepKind::ring_gemm_reduce_scatter:
      case StepKind::summa_gemm:
        t.c[i + 1] = t.writes_output[i] ? order_c_out : wanted(i + 1);
        break;
    }
  }
  return t;
}

template <typename Scalar, int Order>
using matrix_map = Eigen::Map<Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Order>>;
template <typename Scalar, int Order>
using const_matrix_map = Eigen::Map<const Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Order>>;

/// Copies a rows x cols block from one storage order to another (or the same).
template <typename Scalar, int From, int To>
void copy_block(const Scalar* from, Scalar* to, std::int64_t rows, std::int64_t cols) {
  if (from == to) return;
  matrix_map<Scalar, To>(to, rows, cols) = const_matrix_map<Scalar, From>(from, rows, cols);
}

/// `block` in storage order To: itself when it already is, else a copy in the pack buffer
/// (a collective needs the dimension it cuts along to be the outer one).
template <typename Scalar, int From, int To>
const Scalar* in_order(const Scalar* block, std::int64_t rows, std::int64_t cols) {
  if constexpr (From == To) {
    return block;
  } else {
    Scalar* packed = scratch<Scalar>(Slot::pack, rows * cols);
    copy_block<Scalar, From, To>(block, packed, rows, cols);
    return packed;
  }
}

/// Element counts of each group rank's block when a dimension of `global` items,
/// split over `kept ++ group`, is gathered over `group` (times the other extent).
template <MeshType M>
std::span<const std::int64_t> block_counts(const block_geometry<M>& geo, std::int64_t global,
                                           const axis_list& kept, const axis_list& group, std::int64_t other) {
  std::vector<std::int64_t>& counts = Workspace::local().counts();
  const int size = geo.group_size(group);
  counts.resize(static_cast<std::size_t>(size));
  for (int g = 0; g < size; ++g) counts[static_cast<std::size_t>(g)] = geo.gathered_block(global, kept, group, g) * other;
  return {counts.data(), counts.size()};
}

/// All-gather of blocks of `counts` elements: the equal-block collective when it applies
/// (MPI has faster algorithms for it), the v-variant otherwise. The same bytes either way.
template <typename Scalar>
void gather_blocks(AnyCommunicator& comm, const Scalar* send, std::span<const std::int64_t> counts, Scalar* out,
                   std::int64_t total) {
  const auto own = static_cast<std::size_t>(counts[static_cast<std::size_t>(comm.rank())]);
  const std::span<const Scalar> in(send, own);
  const std::span<Scalar> all(out, static_cast<std::size_t>(total));
  if (std::all_of(counts.begin(), counts.end(), [&](std::int64_t c) { return c == counts[0]; }))
    comm.all_gather(in, all);
  else
    comm.all_gather_v(in, all, counts);
}

/// Reduce-scatter into blocks of `counts` elements (equal-block collective when it applies).
template <typename Scalar>
void scatter_blocks(AnyCommunicator& comm, const Scalar* send, std::int64_t total, std::span<const std::int64_t> counts,
                    Scalar* out) {
  const std::span<const Scalar> in(send, static_cast<std::size_t>(total));
  const std::span<Scalar> own(out, static_cast<std::size_t>(counts[static_cast<std::size_t>(comm.rank())]));
  if (std::all_of(counts.begin(), counts.end(), [&](std::int64_t c) { return c == counts[0]; }))
    comm.reduce_scatter_block(in, own);
  else
    comm.reduce_scatter(in, own, counts);
}

constexpr axis_list without_tail(const axis_list& list, std::size_t count) {
  axis_list result;
  for (std::size_t i = 0; i + count < list.size(); ++i) result.push_back(list[i]);
  return result;
}

/// Runs the schedule of `Plan` on one rank. OrderA, OrderB: storage of the local
/// operands; OrderCIn: of an initial C (reshard plans); OrderC: of the result.
template <typename Plan, typename Scalar, MeshType M, int OrderA, int OrderB, int OrderCIn, int OrderC>
class schedule_executor {
  static constexpr Schedule steps = Plan::schedule;
  static constexpr std::size_t step_count = steps.size();
  static constexpr order_table orders = compute_orders(steps, OrderA, OrderB, OrderCIn, OrderC);
  static constexpr int ring_tag = 0x5707;

  struct state {
    ProcessGroupMesh<M>& groups;
    block_geometry<M> geo;
    MatmulShape shape;
    operand_state axes;
    const Scalar* a;
    const Scalar* b;
    const Scalar* c;  // the current C block
    Scalar* out;      // the result's storage
    bool c_owned = false;   // st.c is ours to overwrite (the result or a scratch buffer)
    bool c_in_ping = false;

    std::int64_t rows(Operand op, const std::array<axis_list, 2>& ax) const {
      return geo.extent(global_extents(op, shape)[0], ax[0]);
    }
    std::int64_t cols(Operand op, const std::array<axis_list, 2>& ax) const {
      return geo.extent(global_extents(op, shape)[1], ax[1]);
    }
    /// Where a step writes C: the result, or the scratch buffer C is not in now.
    Scalar* c_target(bool writes_output, std::int64_t count) {
      if (writes_output) return out;
      c_in_ping = !c_in_ping;
      return scratch<Scalar>(c_in_ping ? Slot::c_ping : Slot::c_pong, count);
    }
    void set_c(Scalar* block) {
      c = block;
      c_owned = true;
    }
  };

 public:
  /// a, b: local operand blocks (unused by reshard plans); c: initial C block (reshard
  /// plans only); out: storage for this rank's result block.
  static void run(ProcessGroupMesh<M>& groups, MatmulShape shape, const operand_state& initial,
                  const Scalar* a, const Scalar* b, const Scalar* c, Scalar* out) {
    state st{groups, {groups.mesh(), groups.coordinate()}, shape, initial, a, b, c, out};
    [&]<std::size_t... I>(std::index_sequence<I...>) { (run_step<I>(st), ...); }(std::make_index_sequence<step_count>{});
    if (st.c != out) {
      const std::int64_t rows = st.rows(Operand::C, st.axes.c), cols = st.cols(Operand::C, st.axes.c);
      copy_block<Scalar, orders.c[step_count], OrderC>(st.c, out, rows, cols);
    }
  }

 private:
  static AnyCommunicator& group(state& st, const axis_list& axes) { return st.groups.group_along_axis_indices(axes); }

  template <std::size_t I>
  static void run_step(state& st) {
    constexpr Step s = steps[I];
    if constexpr (s.kind == StepKind::all_gather) {
      if constexpr (s.operand == Operand::C) gather_c<I>(st);
      else gather_input<I>(st);
    } else if constexpr (s.kind == StepKind::reduce_scatter) {
      reduce_scatter_c<I>(st);
    } else if constexpr (s.kind == StepKind::all_reduce) {
      all_reduce_c<I>(st);
    } else if constexpr (s.kind == StepKind::local_gemm) {
      local_gemm<I>(st);
    } else if constexpr (s.kind == StepKind::ring_all_gather_gemm) {
      ring_gather_gemm<I>(st);
    } else if constexpr (s.kind == StepKind::ring_gemm_reduce_scatter) {
      ring_gemm_scatter<I>(st);
    } else {
      summa_gemm<I>(st);
    }
  }

  // ---- AllGather of A or B along k ---------------------------------------------------

  template <std::size_t I>
  static void gather_input(state& st) {
    constexpr Step s = steps[I];
    constexpr bool is_a = s.operand == Operand::A;
    constexpr int from_order = is_a ? orders.a[I] : orders.b[I];
    constexpr int out_order = outer_order(s.dim);
    auto& ax = is_a ? st.axes.a : st.axes.b;
    const Scalar* local = is_a ? st.a : st.b;
    const std::int64_t rows = st.rows(s.operand, ax), cols = st.cols(s.operand, ax);
    const auto d = static_cast<std::size_t>(s.dim);
    const axis_list kept = without_tail(ax[d], s.axes.size());
    const std::int64_t other = s.dim == 0 ? cols : rows;
    AnyCommunicator& comm = group(st, s.axes);
    const auto counts = block_counts(st.geo, global_extents(s.operand, st.shape)[d], kept, s.axes, other);
    std::int64_t total = 0;
    for (std::int64_t c : counts) total += c;
    const Scalar* send = detail::in_order<Scalar, from_order, out_order>(local, rows, cols);
    Scalar* gathered = scratch<Scalar>(is_a ? Slot::gathered_a : Slot::gathered_b, total);
    gather_blocks(comm, send, counts, gathered, total);
    ax[d] = kept;
    (is_a ? st.a : st.b) = gathered;
  }

  // ---- the local GEMM ---------------------------------------------------------------------

  template <std::size_t I>
  static void local_gemm(state& st) {
    const std::int64_t m = st.rows(Operand::A, st.axes.a), k = st.cols(Operand::A, st.axes.a);
    const std::int64_t n = st.cols(Operand::B, st.axes.b);
    Scalar* target = st.c_target(orders.writes_output[I], m * n);
    gemm<Scalar, orders.a[I], orders.b[I], orders.c[I + 1]>(
        target, block_ref<Scalar, orders.a[I]>::whole(st.a, m, k), block_ref<Scalar, orders.b[I]>::whole(st.b, k, n),
        false);
    st.set_c(target);
  }

  // ---- collectives on C --------------------------------------------------------------

  template <std::size_t I>
  static void gather_c(state& st) {
    constexpr Step s = steps[I];
    constexpr int from_order = orders.c[I], natural = outer_order(s.dim), out_order = orders.c[I + 1];
    const auto d = static_cast<std::size_t>(s.dim);
    const std::int64_t rows = st.rows(Operand::C, st.axes.c), cols = st.cols(Operand::C, st.axes.c);
    const axis_list kept = without_tail(st.axes.c[d], s.axes.size());
    AnyCommunicator& comm = group(st, s.axes);
    const auto counts = block_counts(st.geo, global_extents(Operand::C, st.shape)[d], kept, s.axes,
                                     s.dim == 0 ? cols : rows);
    const Scalar* send = detail::in_order<Scalar, from_order, natural>(st.c, rows, cols);
    st.axes.c[d] = kept;
    const std::int64_t new_rows = st.rows(Operand::C, st.axes.c), new_cols = st.cols(Operand::C, st.axes.c);
    Scalar* target = st.c_target(orders.writes_output[I], new_rows * new_cols);
    Scalar* gathered = natural == out_order ? target : scratch<Scalar>(Slot::unpack, new_rows * new_cols);
    gather_blocks(comm, send, counts, gathered, new_rows * new_cols);
    copy_block<Scalar, natural, out_order>(gathered, target, new_rows, new_cols);
    st.set_c(target);
  }

  template <std::size_t I>
  static void reduce_scatter_c(state& st) {
    constexpr Step s = steps[I];
    constexpr int from_order = orders.c[I], natural = outer_order(s.dim), out_order = orders.c[I + 1];
    const auto d = static_cast<std::size_t>(s.dim);
    const std::int64_t rows = st.rows(Operand::C, st.axes.c), cols = st.cols(Operand::C, st.axes.c);
    AnyCommunicator& comm = group(st, s.axes);
    const auto counts = block_counts(st.geo, global_extents(Operand::C, st.shape)[d], st.axes.c[d], s.axes,
                                     s.dim == 0 ? cols : rows);
    const Scalar* send = detail::in_order<Scalar, from_order, natural>(st.c, rows, cols);
    st.axes.c[d] = concat(st.axes.c[d], s.axes);
    const std::int64_t new_rows = st.rows(Operand::C, st.axes.c), new_cols = st.cols(Operand::C, st.axes.c);
    Scalar* target = st.c_target(orders.writes_output[I], new_rows * new_cols);
    Scalar* reduced = natural == out_order ? target : scratch<Scalar>(Slot::unpack, new_rows * new_cols);
    scatter_blocks(comm, send, rows * cols, counts, reduced);
    copy_block<Scalar, natural, out_order>(reduced, target, new_rows, new_cols);
    st.set_c(target);
  }

  template <std::size_t I>
  static void all_reduce_c(state& st) {
    constexpr int from_order = orders.c[I], out_order = orders.c[I + 1];
    const std::int64_t rows = st.rows(Operand::C, st.axes.c), cols = st.cols(Operand::C, st.axes.c);
    const auto count = static_cast<std::size_t>(rows * cols);
    AnyCommunicator& comm = group(st, steps[I].axes);
    Scalar* reduced;
    if (st.c_owned) {  // in place: the usual case, C fresh from the GEMM
      reduced = const_cast<Scalar*>(st.c);
      comm.all_reduce(std::span<Scalar>(reduced, count));
    } else {  // a reshard's input: leave it as it is
      reduced = st.c_target(orders.writes_output[I] && from_order == out_order, rows * cols);
      comm.all_reduce(std::span<const Scalar>(st.c, count), std::span<Scalar>(reduced, count));
    }
    if constexpr (from_order != out_order) {
      Scalar* target = st.c_target(orders.writes_output[I], rows * cols);
      copy_block<Scalar, from_order, out_order>(reduced, target, rows, cols);
      reduced = target;
    }
    st.set_c(reduced);
  }

  // ---- ring variants: one block in flight while the previous one is multiplied -----------

  /// Offset of group rank g's block within this rank's block over `kept`.
  static std::int64_t block_offset(const state& st, std::int64_t global, const axis_list& kept,
                                   const axis_list& group_axes, int g) {
    const std::int64_t parts = st.geo.group_size(kept) * st.geo.group_size(group_axes);
    const std::int64_t base = st.geo.group_rank(kept) * st.geo.group_size(group_axes);
    return block_begin(global, parts, base + g) - block_begin(global, parts, base);
  }

  template <std::size_t I>
  static void ring_gather_gemm(state& st) {
    constexpr Step s = steps[I];
    constexpr bool gather_a = s.operand == Operand::A;
    constexpr int oa = orders.a[I], ob = orders.b[I], oc = orders.c[I + 1];
    constexpr int ox = gather_a ? oa : ob;
    auto& ax = gather_a ? st.axes.a : st.axes.b;
    const auto d = static_cast<std::size_t>(s.dim);
    const axis_list kept = without_tail(ax[d], s.axes.size());
    const std::int64_t k_global = st.shape.k;
    AnyCommunicator& comm = group(st, s.axes);
    const int size = comm.size(), rank = comm.rank();
    // Extents before the gather: X's block; after it: the full k (of the kept block).
    const std::int64_t other = gather_a ? st.rows(Operand::A, st.axes.a) : st.cols(Operand::B, st.axes.b);
    const Scalar* block = gather_a ? st.a : st.b;
    ax[d] = kept;
    const std::int64_t m = st.rows(Operand::A, st.axes.a), n = st.cols(Operand::B, st.axes.b);
    const std::int64_t k = st.cols(Operand::A, st.axes.a);
    std::int64_t widest = 0;
    for (int g = 0; g < size; ++g) widest = std::max(widest, st.geo.gathered_block(k_global, kept, s.axes, g));
    Scalar* buffers[2] = {scratch<Scalar>(Slot::ring_0, widest * other), scratch<Scalar>(Slot::ring_1, widest * other)};
    Scalar* target = st.c_target(orders.writes_output[I], m * n);

    auto multiply = [&](const Scalar* x, int g, bool accumulate) {
      const std::int64_t width = st.geo.gathered_block(k_global, kept, s.axes, g);
      const std::int64_t offset = block_offset(st, k_global, kept, s.axes, g);
      if constexpr (gather_a) {
        gemm<Scalar, ox, ob, oc>(target, block_ref<Scalar, ox>::whole(x, m, width),
                                 block_ref<Scalar, ob>::whole(st.b, k, n).middle_rows(offset, width), accumulate);
      } else {
        gemm<Scalar, oa, ox, oc>(target, block_ref<Scalar, oa>::whole(st.a, m, k).middle_cols(offset, width),
                                 block_ref<Scalar, ox>::whole(x, width, n), accumulate);
      }
    };
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int step = 0; step < size; ++step) {
      const int held = (rank - step + size) % size;  // the block in hand
      if (step + 1 < size) {
        const int incoming = (held + size - 1) % size;
        Scalar* receive = buffers[step % 2];
        auto request = comm.start_sendrecv(
            std::span<const Scalar>(block, static_cast<std::size_t>(st.geo.gathered_block(k_global, kept, s.axes, held) * other)),
            next,
            std::span<Scalar>(receive, static_cast<std::size_t>(st.geo.gathered_block(k_global, kept, s.axes, incoming) * other)),
            prev, ring_tag);
        multiply(block, held, step > 0);
        request.wait();
        block = receive;
      } else {
        multiply(block, held, step > 0);
      }
    }
    if (k == 0) matrix_map<Scalar, oc>(target, m, n).setZero();
    st.set_c(target);
  }

  template <std::size_t I>
  static void ring_gemm_scatter(state& st) {
    constexpr Step s = steps[I];
    constexpr int oa = orders.a[I], ob = orders.b[I], oc = orders.c[I + 1];
    const auto d = static_cast<std::size_t>(s.dim);
    const std::int64_t m = st.rows(Operand::A, st.axes.a), k = st.cols(Operand::A, st.axes.a);
    const std::int64_t n = st.cols(Operand::B, st.axes.b);
    const std::int64_t global = global_extents(Operand::C, st.shape)[d];
    const axis_list kept = st.axes.c[d];
    AnyCommunicator& comm = group(st, s.axes);
    const int size = comm.size(), rank = comm.rank();
    const std::int64_t other = s.dim == 0 ? n : m;
    auto extent = [&](int g) { return st.geo.gathered_block(global, kept, s.axes, g); };
    // This rank's share of chunk g of C: a slice of A's rows or of B's columns.
    auto contribute = [&](int g, Scalar* into) {
      const std::int64_t offset = block_offset(st, global, kept, s.axes, g), width = extent(g);
      const auto a = block_ref<Scalar, oa>::whole(st.a, m, k);
      const auto b = block_ref<Scalar, ob>::whole(st.b, k, n);
      if constexpr (s.dim == 0) gemm<Scalar, oa, ob, oc>(into, a.middle_rows(offset, width), b, false);
      else gemm<Scalar, oa, ob, oc>(into, a, b.middle_cols(offset, width), false);
    };
    std::int64_t widest = 0;
    for (int g = 0; g < size; ++g) widest = std::max(widest, extent(g));
    st.axes.c[d] = concat(kept, s.axes);
    Scalar* target = st.c_target(orders.writes_output[I], extent(rank) * other);
    if (size == 1) {
      contribute(rank, target);
      st.set_c(target);
      return;
    }
    Scalar* sending = scratch<Scalar>(Slot::ring_0, widest * other);
    Scalar* receiving = scratch<Scalar>(Slot::ring_1, widest * other);
    Scalar* working = scratch<Scalar>(Slot::ring_2, widest * other);
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    contribute(prev, sending);
    for (int step = 0; step + 1 < size; ++step) {
      const int sent = (rank - step - 1 + 2 * size) % size, arriving = (rank - step - 2 + 2 * size) % size;
      Scalar* into = step + 2 == size ? target : working;  // the last chunk to arrive is this rank's
      const auto count = static_cast<std::size_t>(extent(arriving) * other);
      auto request = comm.start_sendrecv(std::span<const Scalar>(sending, static_cast<std::size_t>(extent(sent) * other)),
                                         next, std::span<Scalar>(receiving, count), prev, ring_tag);
      contribute(arriving, into);
      request.wait();
      using vector_map = Eigen::Map<Eigen::Array<Scalar, Eigen::Dynamic, 1>>;
      vector_map(into, static_cast<Eigen::Index>(count)) +=
          Eigen::Map<const Eigen::Array<Scalar, Eigen::Dynamic, 1>>(receiving, static_cast<Eigen::Index>(count));
      working = sending;  // its send has completed
      sending = into;
    }
    st.set_c(target);
  }

  // ---- SUMMA ------------------------------------------------------------------------------

  /// One panel of `rows x cols`, owned by group rank `root` (`mine` is its slice there), as a
  /// block every member of `group` can multiply with, in the operand's own storage order.
  /// No copy for a group of one or for a slice that is already contiguous: the root then
  /// broadcasts from its own block.
  template <int Order>
  static block_ref<Scalar, Order> share_panel(AnyCommunicator& group, block_ref<Scalar, Order> mine, std::int64_t rows,
                                              std::int64_t cols, int root, Scalar* buffer) {
    if (group.size() == 1) return mine;
    const auto count = static_cast<std::size_t>(rows * cols);
    const bool contiguous = Order == Eigen::ColMajor ? (cols <= 1 || mine.stride == rows) : (rows <= 1 || mine.stride == cols);
    if (group.rank() == root && contiguous) {
      // A broadcast never writes the root's buffer.
      group.broadcast(std::span<Scalar>(const_cast<Scalar*>(mine.data), count), root);
      return mine;
    }
    if (group.rank() == root) matrix_map<Scalar, Order>(buffer, rows, cols) = mine.map();
    group.broadcast(std::span<Scalar>(buffer, count), root);
    return block_ref<Scalar, Order>::whole(buffer, rows, cols);
  }

  template <std::size_t I>
  static void summa_gemm(state& st) {
    constexpr Step s = steps[I];
    constexpr int oa = orders.a[I], ob = orders.b[I], oc = orders.c[I + 1];
    constexpr int width_limit = Plan::summa_panel_width;
    const std::int64_t m = st.rows(Operand::A, st.axes.a), ka = st.cols(Operand::A, st.axes.a);
    const std::int64_t kb = st.rows(Operand::B, st.axes.b), n = st.cols(Operand::B, st.axes.b);
    const std::int64_t a_offset = st.geo.offset(st.shape.k, s.axes), b_offset = st.geo.offset(st.shape.k, s.axes2);
    AnyCommunicator& row_group = group(st, s.axes);   // A's panels travel along the row of the grid
    AnyCommunicator& col_group = group(st, s.axes2);  // B's along the column
    const int a_rank = row_group.rank(), b_rank = col_group.rank();
    Scalar* a_buffer = scratch<Scalar>(Slot::ring_0, m * width_limit);
    Scalar* b_buffer = scratch<Scalar>(Slot::ring_1, width_limit * n);
    Scalar* target = st.c_target(orders.writes_output[I], m * n);
    const auto a = block_ref<Scalar, oa>::whole(st.a, m, ka);
    const auto b = block_ref<Scalar, ob>::whole(st.b, kb, n);
    bool accumulate = false;
    for_each_summa_panel(st.shape.k, row_group.size(), col_group.size(), width_limit, [&](const summa_panel& p) {
      const auto a_panel = share_panel<oa>(row_group, a_rank == p.a_root ? a.middle_cols(p.begin - a_offset, p.width)
                                                                                          : block_ref<Scalar, oa>{},
                                                            m, p.width, p.a_root, a_buffer);
      const auto b_panel = share_panel<ob>(col_group, b_rank == p.b_root ? b.middle_rows(p.begin - b_offset, p.width)
                                                                                          : block_ref<Scalar, ob>{},
                                                            p.width, n, p.b_root, b_buffer);
      gemm<Scalar, oa, ob, oc>(target, a_panel, b_panel, accumulate);
      accumulate = true;
    });
    if (!accumulate) matrix_map<Scalar, oc>(target, m, n).setZero();  // k == 0
    st.axes.a[1] = {};
    st.axes.b[0] = {};
    st.set_c(target);
  }
};

}  // namespace shardwise::detail
