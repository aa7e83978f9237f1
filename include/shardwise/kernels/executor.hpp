// shardwise/kernels/executor.hpp: runs a program (plan/program.hpp) on one rank.
//
// One executor for every operation: matmul, einsum, reshard and the layers all hand it a
// program, which is constexpr data, and it interprets the steps at run time. It is a
// template over the scalar type only, so a program adds no code: every plan of a
// translation unit shares one compiled executor per scalar. The work per step is what a
// person would write by hand for that step: a collective on contiguous blocks (the
// equal-block MPI collective when the blocks are equal, the v-variant otherwise), or GEMMs
// on strided Eigen::Map / BLAS matrices over contiguous buffers; blocks are copied only
// where the program says an order must change. Scratch space comes from the per-thread
// Workspace and is reused from call to call, so a call in a loop allocates nothing.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "shardwise/comm/any_communicator.hpp"
#include "shardwise/detail/separate_compilation.hpp"
#include "shardwise/kernels/gemm.hpp"
#include "shardwise/kernels/permute.hpp"
#include "shardwise/kernels/workspace.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/plan/cost.hpp"
#include "shardwise/plan/program.hpp"
#include "shardwise/plan/step.hpp"
#include "shardwise/process_group_mesh.hpp"

namespace shardwise::detail {

/// The blocks an operation works on: A and B (a contraction's inputs), C (a reshard's
/// input) and the storage of this rank's block of the result, which the result overwrites or,
/// with `accumulate`, is added to (gradients summed over micro-batches). `alpha` and `beta`
/// make it BLAS's out = alpha * result + beta * out (gemm); they apply to this rank's block of
/// the finished result, after any reduction, so beta * out enters once (for a Partial output
/// too: the sum over the group of alpha * p_i + beta * c_i is alpha * P + beta * C).
///
/// `strides` (one per A, B, C; null: contiguous in the program's initial order) are the
/// element strides of an input that is a view of memory the caller keeps (shardwise/view.hpp):
/// a leading dimension larger than the block, or a transposed block. The executor reads such
/// an input where it lies when a step can (a GEMM on a matrix with one unit stride), and
/// packs it into contiguous scratch where a step needs contiguous data (a collective's send
/// buffer): the same pack the program names for an operand in another order.
template <typename Scalar>
struct operation_io {
  const Scalar* a = nullptr;
  const Scalar* b = nullptr;
  const Scalar* c = nullptr;
  Scalar* out = nullptr;
  bool accumulate = false;  ///< out += result: alpha 1, beta 1
  Scalar alpha = Scalar(1);
  Scalar beta = Scalar(0);
  std::array<const tensor_extents*, 3> strides{};
};

/// All-gather of blocks of `counts` elements: the equal-block collective when it applies (MPI
/// has faster algorithms for it), the v-variant otherwise. The same bytes either way.
template <typename Scalar>
[[gnu::noinline]] void gather_blocks(AnyCommunicator& comm, const Scalar* send, std::span<const std::int64_t> counts, Scalar* out,
                   std::int64_t total) {
  const auto own = static_cast<std::size_t>(counts[static_cast<std::size_t>(comm.rank())]);
  const std::span<const Scalar> in(send, own);
  const std::span<Scalar> all(out, static_cast<std::size_t>(total));
  if (std::all_of(counts.begin(), counts.end(), [&](std::int64_t c) { return c == counts[0]; }))
    comm.all_gather(in, all);
  else
    comm.all_gather_v(in, all, counts);
}

/// Reduce-scatter into blocks of `counts` elements (the equal-block collective when it applies).
template <typename Scalar>
[[gnu::noinline]] void scatter_blocks(AnyCommunicator& comm, const Scalar* send, std::int64_t total, std::span<const std::int64_t> counts,
                    Scalar* out) {
  const std::span<const Scalar> in(send, static_cast<std::size_t>(total));
  const std::span<Scalar> own(out, static_cast<std::size_t>(counts[static_cast<std::size_t>(comm.rank())]));
  if (std::all_of(counts.begin(), counts.end(), [&](std::int64_t c) { return c == counts[0]; }))
    comm.reduce_scatter_block(in, own);
  else
    comm.reduce_scatter(in, own, counts);
}

/// A block as a batch of equally strided matrices (see plan/program.hpp's GemmRole).
template <typename T>
struct batched_matrix {
  matrix_view<T> matrix;
  std::int64_t count = 1, stride = 0;
  [[nodiscard]] matrix_view<T> at(std::int64_t i) const {
    matrix_view<T> m = matrix;
    m.data += i * stride;
    return m;
  }
};

/// The matrices of a block of `extents` with element `strides`, whose dimensions play `roles`
/// and are nested as `order` says (see gemm_readable()).
template <typename T>
[[gnu::noinline]] batched_matrix<T> as_matrices(T* data, const tensor_extents& extents, const dim_order& order,
                              const tensor_extents& strides, const std::array<GemmRole, max_tensor_rank>& roles) {
  std::int64_t size[3] = {1, 1, 1}, innermost_stride[3] = {0, 0, 0};
  bool spans[3] = {false, false, false};  // the group has a dimension of extent other than 1
  for (int i = 0; i < order.rank; ++i) {
    const auto d = static_cast<std::size_t>(order[i]);
    const auto role = static_cast<std::size_t>(roles[d]);
    size[role] *= extents[d];
    // The last one seen is the group's innermost; a view's dimension of extent 1 may have any
    // stride (contiguous blocks give it the next one's), so it does not count.
    if (extents[d] != 1 || !spans[role]) innermost_stride[role] = strides[d];
    spans[role] = spans[role] || extents[d] != 1;
  }
  const auto batch = static_cast<std::size_t>(GemmRole::batch), rows = static_cast<std::size_t>(GemmRole::rows),
             cols = static_cast<std::size_t>(GemmRole::cols);
  const bool row_major =
      order.rank == 0 || roles[static_cast<std::size_t>(order[order.rank - 1])] == GemmRole::cols;
  // BLAS wants the leading dimension at least the inner extent and at least 1, even when the
  // matrix is a single row or column (or empty) and the stride is meaningless.
  const std::int64_t inner = row_major ? size[cols] : size[rows];
  const std::int64_t outer_stride = row_major ? innermost_stride[rows] : innermost_stride[cols];
  const std::int64_t ld = std::max<std::int64_t>({outer_stride, inner, 1});
  return {{data, size[rows], size[cols], ld, row_major}, size[batch], innermost_stride[batch]};
}

/// The matrices of a contiguous block of `extents` stored in `order`.
template <typename T>
batched_matrix<T> as_matrices(T* data, const tensor_extents& extents, const dim_order& order,
                              const std::array<GemmRole, max_tensor_rank>& roles) {
  return as_matrices(data, extents, order, strides_of(extents, order), roles);
}

/// Whether a block of `extents` with element `strides`, whose dimensions are nested as `order`
/// says (an order the program made GEMM-ready), is a batch of strided matrices as it lies: the
/// innermost dimension has unit stride, each role's dimensions merge into one (a stride is the
/// next one's times its extent), and each role's dimensions lie outside the inner ones (no
/// overlap). A dimension of extent 1 fits anywhere. Then a GEMM reads it with a leading
/// dimension and nothing is copied.
[[gnu::noinline]] inline bool gemm_readable(const tensor_extents& extents, const dim_order& order,
                                            const tensor_extents& strides,
                                            const std::array<GemmRole, max_tensor_rank>& roles) {
  std::int64_t reach = 1;  // elements spanned by the dimensions inside the current one
  int previous = -1;
  for (int i = order.rank; i-- > 0;) {
    const auto d = static_cast<std::size_t>(order[i]);
    if (extents[d] <= 1) continue;
    if (strides[d] < reach) return false;
    if (previous < 0 && strides[d] != 1) return false;
    if (previous >= 0 && roles[d] == roles[static_cast<std::size_t>(previous)] &&
        strides[d] != strides[static_cast<std::size_t>(previous)] * extents[static_cast<std::size_t>(previous)])
      return false;
    reach = strides[d] * extents[d];
    previous = static_cast<int>(d);
  }
  return true;
}

/// Whether two stride sets place every element of a block of `extents` at the same offset
/// (a dimension of extent 1 may have any stride).
inline bool same_layout(const tensor_extents& x, const tensor_extents& y, const tensor_extents& extents, int rank) {
  if (element_count(extents, rank) == 0) return true;
  for (int d = 0; d < rank; ++d) {
    const auto i = static_cast<std::size_t>(d);
    if (extents[i] != 1 && x[i] != y[i]) return false;
  }
  return true;
}

/// Copies a strided matrix into contiguous storage of the same order.
template <typename Scalar>
void copy_matrix(matrix_view<const Scalar> from, Scalar* to) {
  if (from.row_major) copy_strided(from.data, from.ld, 1, to, from.rows, from.cols);
  else copy_strided(from.data, from.ld, 1, to, from.cols, from.rows);  // its transpose, row-major: the same memory
}

/// Runs one program on one rank (see the top of this file). `Fused`: whether the program has
/// ring or SUMMA steps; only then are their kernels compiled.
template <typename Scalar, bool Fused>
class executor {
 public:
  executor(const program& p, group_mesh_state& groups, const operand_extents& global, const operation_io<Scalar>& io)
      : p_(p), groups_(groups), geo_(groups.geometry()), global_(global), axes_(p.start), out_(io.out),
        alpha_(io.alpha), beta_(io.accumulate ? Scalar(1) : io.beta),
        combine_(io.accumulate || io.alpha != Scalar(1) || io.beta != Scalar(0)) {
    data_ = {io.a, io.b, io.c};
    order_ = p.initial_order;
    // A view whose strides are those of a contiguous block in its order (the transpose of an
    // owning matrix, a buffer without padding) is run exactly as an owning block.
    for (std::size_t i = 0; i < 3; ++i) {
      if (io.strides[i] == nullptr) continue;
      const auto op = static_cast<Operand>(i);
      strides_[i] = *io.strides[i];
      strided_[i] = !same_layout(strides_[i], strides_of(local(op), order_[i]), local(op), axes_[op].rank);
    }
  }

  [[gnu::noinline]] void run() {
    for (std::size_t i = 0; i < p_.steps.size(); ++i) {
      const Step& s = p_.steps[i];
      const lowered_step& l = p_.lowered[i];
      switch (s.kind) {
        case StepKind::all_gather:
        case StepKind::reduce_scatter: along_dimension(s, l); break;
        case StepKind::all_reduce: all_reduce(s, l); break;
        case StepKind::local_gemm: contract(l, i + 1 == p_.steps.size()); break;
        case StepKind::slice: slice(s, l); break;
        case StepKind::ring_all_gather_gemm:
        case StepKind::ring_gemm_reduce_scatter:
        case StepKind::summa_gemm:
          if constexpr (Fused) {
            if (s.kind == StepKind::ring_all_gather_gemm) ring_gather_contract(s, l);
            else if (s.kind == StepKind::ring_gemm_reduce_scatter) ring_contract_scatter(s, l);
            else summa(s, l);
          }
          break;
      }
      apply_step(s, axes_);
    }
    const auto c = index_of(Operand::C);
    if (data_[c] == out_) return;
    if (!combine_) return copy_held(Operand::C, out_, p_.output_order);
    const std::int64_t n = count(Operand::C);
    const Scalar* sum = data_[c];
    if (!(order_[c] == p_.output_order) || strided_[c]) {
      Scalar* ordered = scratch<Scalar>(Slot::unpack, n);
      copy_held(Operand::C, ordered, p_.output_order);
      sum = ordered;
    }
    if (alpha_ == Scalar(1) && beta_ == Scalar(1)) add_into(out_, sum, n);
    else scale_add_into(out_, sum, n, alpha_, beta_);
  }

 private:
  static constexpr int ring_tag = 0x5707;

  [[nodiscard]] tensor_extents local(Operand op) const {
    return local_extents(axes_[op], global_[index_of(op)], geo_);
  }
  [[nodiscard]] std::int64_t count(Operand op) const { return element_count(local(op), axes_[op].rank); }
  [[nodiscard]] const std::array<GemmRole, max_tensor_rank>& roles(Operand op) const { return p_.roles[index_of(op)]; }
  [[nodiscard]] AnyCommunicator& group(const axis_list& axes) { return groups_.group_along(axes); }

  void hold(Operand op, const Scalar* data, const dim_order& order) {
    data_[index_of(op)] = data;
    order_[index_of(op)] = order;
    strided_[index_of(op)] = false;  // everything the executor writes is contiguous
  }

  /// The element strides of the block `op` is held in now.
  [[nodiscard]] tensor_extents strides(Operand op) const {
    const auto i = index_of(op);
    return strided_[i] ? strides_[i] : strides_of(local(op), order_[i]);
  }
  /// Copies the block `op` is held in now into contiguous storage `order` at `to`.
  void copy_held(Operand op, Scalar* to, const dim_order& order) const {
    const auto i = index_of(op);
    if (strided_[i]) permute_copy_strided(data_[i], strides_[i], to, order, local(op));
    else permute_copy(data_[i], order_[i], to, order, local(op));
  }
  /// `op` as a batch of matrices, where it is held now.
  [[nodiscard]] batched_matrix<const Scalar> held_matrices(Operand op) const {
    const auto i = index_of(op);
    return as_matrices(data_[i], local(op), order_[i], strides(op), roles(op));
  }

  /// A scratch buffer of n elements for A or B other than the one holding its block now: each
  /// alternates between two slots (growing the slot in use would free the block it holds).
  Scalar* spare(Operand op, std::int64_t n) {
    bool& second = in_second_slot_[index_of(op)];
    second = !second;
    if (op == Operand::A) return scratch<Scalar>(second ? Slot::a_1 : Slot::a_0, n);
    return scratch<Scalar>(second ? Slot::b_1 : Slot::b_0, n);
  }

  /// The operand contiguous in storage `order`: itself, or a packed copy that it now is.
  const Scalar* pack(Operand op, const dim_order& order) {
    const auto i = index_of(op);
    if (order_[i] == order && !strided_[i]) return data_[i];
    const std::int64_t n = count(op);
    Scalar* packed = op == Operand::C ? scratch<Scalar>(Slot::c_pack, n) : spare(op, n);
    copy_held(op, packed, order);
    hold(op, packed, order);
    if (op == Operand::C) c_owned_ = true;
    return packed;
  }
  /// The operand ready for a GEMM in `order`: a strided view that a GEMM can read as it lies
  /// stays where it is (no copy); anything else as pack().
  void pack_for_gemm(Operand op, const dim_order& order) {
    const auto i = index_of(op);
    if (strided_[i] && order_[i] == order && gemm_readable(local(op), order, strides_[i], roles(op))) return;
    pack(op, order);
  }

  /// Where a step writes C: the result, or the ping-pong buffer C is not in now. A result that
  /// is added to goes through a buffer (only a GEMM adds in place, see contract()).
  Scalar* c_target(bool writes_output, std::int64_t n) {
    if (writes_output && !combine_) return out_;
    c_in_ping_ = !c_in_ping_;
    return scratch<Scalar>(c_in_ping_ ? Slot::c_ping : Slot::c_pong, n);
  }
  void hold_c(Scalar* data, const dim_order& order) {
    hold(Operand::C, data, order);
    c_owned_ = true;
  }

  /// Elements of each member's block in a collective along `dim` of `op` over `group_axes`.
  std::span<const std::int64_t> member_counts(Operand op, int dim, const axis_list& kept, const axis_list& group_axes) {
    std::vector<std::int64_t>& counts = Workspace::local().counts();
    counts.resize(static_cast<std::size_t>(geo_.group_size(group_axes)));
    for (std::size_t g = 0; g < counts.size(); ++g)
      counts[g] = member_block(axes_[op], global_[index_of(op)], geo_, dim, kept, group_axes, static_cast<int>(g));
    return {counts.data(), counts.size()};
  }

  // ---- collectives ------------------------------------------------------------------------

  /// AllGather (of any operand) or ReduceScatter (of C) along a dimension: pack the block so
  /// that the dimension is outermost, run the collective on contiguous pieces, and put the
  /// result in the order the program says (straight into the result when it can).
  [[gnu::noinline]] void along_dimension(const Step& s, const lowered_step& l) {
    const Operand op = s.operand;
    const bool gather = s.kind == StepKind::all_gather;
    const auto i = index_of(op);
    if (gather && (!(order_[i] == l.operand_order) || strided_[i]) && l.result_order == l.operand_order)
      return gather_packed_in_place(s, l);
    const Scalar* send = pack(op, l.operand_order);
    const std::int64_t before = count(op);
    const axis_list& kept = gather ? kept_after_gather(axes_[op], s.dim, s.axes.size()) : axes_[op].dim(s.dim);
    const auto counts = member_counts(op, s.dim, kept, s.axes);
    AnyCommunicator& comm = group(s.axes);
    operand_axes after_step = axes_;
    apply_step(s, after_step);
    const tensor_extents extents = local_extents(after_step[op], global_[index_of(op)], geo_);
    const std::int64_t after = element_count(extents, after_step[op].rank);
    Scalar* target = op == Operand::C ? c_target(l.writes_output, after) : spare(op, after);
    Scalar* landing = l.result_order == l.operand_order ? target : scratch<Scalar>(Slot::unpack, after);
    if (gather) gather_blocks(comm, send, counts, landing, after);
    else scatter_blocks(comm, send, before, counts, landing);
    if (landing != target) permute_copy(landing, l.operand_order, target, l.result_order, extents);
    hold(op, target, l.result_order);
    if (op == Operand::C) c_owned_ = true;
  }

  /// An AllGather of a block that is not in the order the collective needs: packed straight
  /// into its own place in the gathered block, then gathered in place (no buffer for the pack:
  /// the footprint model counts the gathered block only).
  [[gnu::noinline]] void gather_packed_in_place(const Step& s, const lowered_step& l) {
    const Operand op = s.operand;
    const axis_list kept = kept_after_gather(axes_[op], s.dim, s.axes.size());
    const auto counts = member_counts(op, s.dim, kept, s.axes);
    AnyCommunicator& comm = group(s.axes);
    operand_axes after_step = axes_;
    apply_step(s, after_step);
    const std::int64_t after = element_count(local_extents(after_step[op], global_[index_of(op)], geo_), after_step[op].rank);
    Scalar* target = op == Operand::C ? c_target(l.writes_output, after) : spare(op, after);
    std::int64_t offset = 0;
    for (int g = 0; g < comm.rank(); ++g) offset += counts[static_cast<std::size_t>(g)];
    copy_held(op, target + offset, l.operand_order);
    gather_blocks(comm, static_cast<const Scalar*>(target + offset), counts, target, after);
    hold(op, target, l.result_order);
    if (op == Operand::C) c_owned_ = true;
  }

  [[gnu::noinline]] void all_reduce(const Step& s, const lowered_step& l) {
    const std::int64_t n = count(Operand::C);
    const auto size = static_cast<std::size_t>(n);
    AnyCommunicator& comm = group(s.axes);
    if (strided_[index_of(Operand::C)]) pack(Operand::C, l.operand_order);  // a view's block, made contiguous
    const Scalar* c = data_[index_of(Operand::C)];
    Scalar* reduced;
    if (c_owned_) {  // in place: the usual case, C fresh from the GEMM
      reduced = const_cast<Scalar*>(c);
      comm.all_reduce(std::span<Scalar>(reduced, size));
    } else {  // a reshard's input: leave it as it is
      reduced = c_target(l.writes_output && l.operand_order == l.result_order, n);
      comm.all_reduce(std::span<const Scalar>(c, size), std::span<Scalar>(reduced, size));
    }
    if (!(l.result_order == l.operand_order)) {
      Scalar* target = c_target(l.writes_output, n);
      permute_copy(reduced, l.operand_order, target, l.result_order, local(Operand::C));
      reduced = target;
    }
    hold_c(reduced, l.result_order);
  }

  /// A slice: this rank keeps its part of `s.dim` over `s.axes`, a local copy (no communication).
  [[gnu::noinline]] void slice(const Step& s, const lowered_step& l) {
    const Operand op = s.operand;
    const auto i = index_of(op);
    const tensor_extents before = local(op);
    const axis_list& kept = axes_[op].dim(s.dim);
    const std::int64_t offset = geo_.gathered_offset(global_[i][static_cast<std::size_t>(s.dim)], kept, s.axes,
                                                     geo_.group_rank(s.axes));
    operand_axes after_step = axes_;
    apply_step(s, after_step);
    const tensor_extents extents = local_extents(after_step[op], global_[i], geo_);
    const std::int64_t n = element_count(extents, after_step[op].rank);
    Scalar* target = op == Operand::C ? c_target(l.writes_output, n) : spare(op, n);
    if (strided_[i]) {  // a view: its slice read straight through its strides, one copy as for a block
      permute_copy_strided(data_[i] + offset * strides_[i][static_cast<std::size_t>(s.dim)], strides_[i], target,
                           l.result_order, extents);
      hold(op, target, l.result_order);
      if (op == Operand::C) c_owned_ = true;
      return;
    }
    Scalar* landing = l.result_order == order_[i] ? target : scratch<Scalar>(Slot::unpack, n);
    copy_slice(data_[i], before, order_[i], s.dim, offset, landing, extents);
    if (landing != target) permute_copy(landing, order_[i], target, l.result_order, extents);
    hold(op, target, l.result_order);
    if (op == Operand::C) c_owned_ = true;
  }

  // ---- the local contraction ----------------------------------------------------------------

  /// C (order `oc`, at `c`) = A B over every batch, with A and B as they are held now.
  void gemm_all(Scalar* c, const dim_order& oc, bool accumulate) {
    const auto a = held_matrices(Operand::A);
    const auto b = held_matrices(Operand::B);
    const auto out = as_matrices(c, local(Operand::C), oc, roles(Operand::C));
    for (std::int64_t i = 0; i < out.count; ++i) gemm<Scalar>(out.at(i), a.at(i), b.at(i), accumulate);
  }

  [[gnu::noinline]] void contract(const lowered_step& l, bool last) {
    pack_for_gemm(Operand::A, l.operand_order);
    pack_for_gemm(Operand::B, l.b_order);
    if (alpha_ == Scalar(1) && beta_ == Scalar(1) && last && l.result_order == p_.output_order) {  // C += A B in place
      gemm_all(out_, l.result_order, true);
      return hold_c(out_, l.result_order);
    }
    Scalar* target = c_target(l.writes_output, count(Operand::C));
    gemm_all(target, l.result_order, false);
    hold_c(target, l.result_order);
  }

  // ---- ring variants: one block in flight while the previous one is multiplied -------------

  void ring_gather_contract(const Step& s, const lowered_step& l) {
    const Operand x = s.operand, other = x == Operand::A ? Operand::B : Operand::A;
    // The block that travels round the ring must be contiguous in the ring's order (packed, if
    // it is not, into the buffer that receives only from the second step on); the other is only
    // read by GEMMs.
    const dim_order ring_order = x == Operand::A ? l.operand_order : l.b_order;
    pack_for_gemm(other, other == Operand::A ? l.operand_order : l.b_order);
    const tensor_axes before = axes_[x];
    const axis_list kept = kept_after_gather(before, s.dim, s.axes.size());
    const std::int64_t global_k = global_[index_of(x)][static_cast<std::size_t>(s.dim)];
    AnyCommunicator& comm = group(s.axes);
    const int size = comm.size(), rank = comm.rank();
    const auto blocks = member_counts(x, s.dim, kept, s.axes);
    const std::int64_t widest = *std::max_element(blocks.begin(), blocks.end());
    // The other operand whole along k: its slice for block g is a range of its k rows or columns.
    const auto whole_other = held_matrices(other);
    Scalar* buffers[2] = {scratch<Scalar>(Slot::ring_0, widest), scratch<Scalar>(Slot::ring_1, widest)};
    const Scalar* block = data_[index_of(x)];
    if (!(order_[index_of(x)] == ring_order) || strided_[index_of(x)]) {
      copy_held(x, buffers[1], ring_order);
      block = buffers[1];
    }
    const dim_order x_order = ring_order;
    const std::int64_t c_count = count(Operand::C);
    Scalar* target = c_target(l.writes_output, c_count);
    const auto out = as_matrices(target, local(Operand::C), l.result_order, roles(Operand::C));

    auto multiply = [&](const Scalar* x_block, int g, bool accumulate) {
      tensor_extents extents = local(x);
      extents[static_cast<std::size_t>(s.dim)] = geo_.gathered_block(global_k, kept, s.axes, g);
      const auto xm = as_matrices(x_block, extents, x_order, roles(x));
      const std::int64_t offset = geo_.gathered_offset(global_k, kept, s.axes, g);
      const std::int64_t width = extents[static_cast<std::size_t>(s.dim)];
      for (std::int64_t i = 0; i < out.count; ++i) {
        const auto om = whole_other.at(i);
        if (x == Operand::A)
          gemm<Scalar>(out.at(i), xm.at(i), om.middle_rows(offset, width), accumulate);
        else
          gemm<Scalar>(out.at(i), om.middle_cols(offset, width), xm.at(i), accumulate);
      }
    };
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int step = 0; step < size; ++step) {
      const int held = (rank - step + size) % size;  // the block in hand
      if (step + 1 < size) {
        const int incoming = (held + size - 1) % size;
        Scalar* receive = buffers[step % 2];
        auto request = comm.start_sendrecv(
            std::span<const Scalar>(block, static_cast<std::size_t>(blocks[static_cast<std::size_t>(held)])), next,
            std::span<Scalar>(receive, static_cast<std::size_t>(blocks[static_cast<std::size_t>(incoming)])), prev,
            ring_tag);
        multiply(block, held, step > 0);
        request.wait();
        block = receive;
      } else {
        multiply(block, held, step > 0);
      }
    }
    if (geo_.extent(global_k, kept) == 0) std::fill_n(target, c_count, Scalar(0));  // k == 0: no GEMM ran
    hold_c(target, l.result_order);
  }

  void ring_contract_scatter(const Step& s, const lowered_step& l) {
    pack_for_gemm(Operand::A, l.operand_order);
    pack_for_gemm(Operand::B, l.b_order);
    // C is cut along s.dim, a dimension it gets from A's rows or B's columns.
    const bool from_a = roles(Operand::C)[static_cast<std::size_t>(s.dim)] == GemmRole::rows;
    const std::int64_t global_d = global_[2][static_cast<std::size_t>(s.dim)];
    const axis_list kept = axes_[Operand::C].dim(s.dim);
    AnyCommunicator& comm = group(s.axes);
    const int size = comm.size(), rank = comm.rank();
    const auto a = held_matrices(Operand::A);
    const auto b = held_matrices(Operand::B);
    auto chunk_extents = [&](int g) {
      tensor_extents extents = local(Operand::C);
      extents[static_cast<std::size_t>(s.dim)] = geo_.gathered_block(global_d, kept, s.axes, g);
      return extents;
    };
    auto chunk_size = [&](int g) { return element_count(chunk_extents(g), axes_[Operand::C].rank); };
    // This rank's share of chunk g of C: a slice of A's rows or of B's columns.
    auto contribute = [&](int g, Scalar* into) {
      const std::int64_t offset = geo_.gathered_offset(global_d, kept, s.axes, g);
      const std::int64_t width = geo_.gathered_block(global_d, kept, s.axes, g);
      const auto c = as_matrices(into, chunk_extents(g), l.result_order, roles(Operand::C));
      for (std::int64_t i = 0; i < c.count; ++i) {
        if (from_a) gemm<Scalar>(c.at(i), a.at(i).middle_rows(offset, width), b.at(i), false);
        else gemm<Scalar>(c.at(i), a.at(i), b.at(i).middle_cols(offset, width), false);
      }
    };
    std::int64_t widest = 0;
    for (int g = 0; g < size; ++g) widest = std::max(widest, chunk_size(g));
    Scalar* target = c_target(l.writes_output, chunk_size(rank));
    if (size == 1) {
      contribute(rank, target);
      hold_c(target, l.result_order);
      return;
    }
    Scalar* sending = scratch<Scalar>(Slot::ring_0, widest);
    Scalar* receiving = scratch<Scalar>(Slot::ring_1, widest);
    Scalar* working = scratch<Scalar>(Slot::ring_2, widest);
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    contribute(prev, sending);
    for (int step = 0; step + 1 < size; ++step) {
      const int sent = (rank - step - 1 + 2 * size) % size, arriving = (rank - step - 2 + 2 * size) % size;
      Scalar* into = step + 2 == size ? target : working;  // the last chunk to arrive is this rank's
      const auto n = static_cast<std::size_t>(chunk_size(arriving));
      auto request = comm.start_sendrecv(std::span<const Scalar>(sending, static_cast<std::size_t>(chunk_size(sent))),
                                         next, std::span<Scalar>(receiving, n), prev, ring_tag);
      contribute(arriving, into);
      request.wait();
      add_into(into, receiving, static_cast<std::int64_t>(n));
      working = sending;  // its send has completed
      sending = into;
    }
    hold_c(target, l.result_order);
  }

  // ---- SUMMA (matrices on a grid) ------------------------------------------------------------

  /// One panel of `rows x cols`, owned by group rank `root` (`mine` is its slice there), as a
  /// matrix every member of `group` can multiply with. No copy for a group of one or for a
  /// slice that is already contiguous: the root then broadcasts from its own block.
  static matrix_view<const Scalar> share_panel(AnyCommunicator& group, matrix_view<const Scalar> mine, std::int64_t rows,
                                               std::int64_t cols, bool row_major, int root, Scalar* buffer) {
    if (group.size() == 1) return mine;
    const auto n = static_cast<std::size_t>(rows * cols);
    const matrix_view<const Scalar> packed{buffer, rows, cols, std::max<std::int64_t>(1, row_major ? cols : rows), row_major};
    if (group.rank() == root) {
      const bool contiguous = row_major ? (rows <= 1 || mine.ld == cols) : (cols <= 1 || mine.ld == rows);
      if (contiguous) {  // a broadcast never writes the root's buffer
        group.broadcast(std::span<Scalar>(const_cast<Scalar*>(mine.data), n), root);
        return mine;
      }
      copy_matrix(mine, buffer);
    }
    group.broadcast(std::span<Scalar>(buffer, n), root);
    return packed;
  }

  void summa(const Step& s, const lowered_step& l) {
    // Panels are broadcast from the block with its leading dimension (share_panel packs them).
    pack_for_gemm(Operand::A, l.operand_order);
    pack_for_gemm(Operand::B, l.b_order);
    const std::int64_t k = global_[0][1];
    const auto a = held_matrices(Operand::A).matrix;
    const auto b = held_matrices(Operand::B).matrix;
    const std::int64_t a_offset = geo_.offset(k, s.axes), b_offset = geo_.offset(k, s.b_axes);
    AnyCommunicator& a_group = group(s.axes);   // A's panels travel along the row of the grid
    AnyCommunicator& b_group = group(s.b_axes);  // B's along the column
    const int width = p_.panel_width;
    Scalar* a_buffer = scratch<Scalar>(Slot::ring_0, a.rows * width);
    Scalar* b_buffer = scratch<Scalar>(Slot::ring_1, width * b.cols);
    Scalar* target = c_target(l.writes_output, count(Operand::C));
    const auto c = as_matrices(target, local(Operand::C), l.result_order, roles(Operand::C)).matrix;
    bool accumulate = false;
    const k_range range = layer_k_range(s, k, geo_);  // 2.5D: this layer's share of k
    for_each_summa_panel(
        k, a_group.size(), b_group.size(), width,
        [&](const summa_panel& panel) {
          const bool a_root = a_group.rank() == panel.a_root, b_root = b_group.rank() == panel.b_root;
          const auto a_panel = share_panel(a_group, a_root ? a.middle_cols(panel.begin - a_offset, panel.width) : a,
                                           a.rows, panel.width, a.row_major, panel.a_root, a_buffer);
          const auto b_panel = share_panel(b_group, b_root ? b.middle_rows(panel.begin - b_offset, panel.width) : b,
                                           panel.width, b.cols, b.row_major, panel.b_root, b_buffer);
          gemm<Scalar>(c, a_panel, b_panel, accumulate);
          accumulate = true;
        },
        range.first, range.last);
    if (!accumulate) std::fill_n(target, count(Operand::C), Scalar(0));  // no panel (k == 0, or an empty layer)
    hold_c(target, l.result_order);
  }

  const program& p_;
  group_mesh_state& groups_;
  const block_geometry& geo_;
  const operand_extents& global_;
  operand_axes axes_;
  std::array<const Scalar*, 3> data_{};
  std::array<dim_order, 3> order_{};
  std::array<bool, 3> strided_{};           // held in a caller's view with strides_ (not contiguous)
  std::array<tensor_extents, 3> strides_{};
  Scalar* out_;
  Scalar alpha_, beta_;
  bool combine_;  // out_ is combined with the result (alpha, beta), not overwritten by it
  bool c_owned_ = false;  // C's block is ours to overwrite (the result or a scratch buffer)
  bool c_in_ping_ = false;
  std::array<bool, 2> in_second_slot_{};  // A's and B's scratch slot in turn (see spare())
};

/// Runs the program `P` on this rank of `groups` for operands of global `extents`.
template <const program& P, typename Scalar>
void execute(group_mesh_state& groups, const operand_extents& extents, const operation_io<Scalar>& io) {
  executor<Scalar, P.fused>(P, groups, extents, io).run();
}

/// The instantiations shardwise/compiled_runtime.hpp compiles once (EXTERN empty) and the other
/// translation units then only declare (EXTERN `extern`) under SHARDWISE_SEPARATE_COMPILATION.
#define SHARDWISE_EXECUTOR_INSTANTIATIONS(EXTERN, Scalar)                                                     \
  EXTERN template class executor<Scalar, false>;                                                            \
  EXTERN template class executor<Scalar, true>;                                                             \
  EXTERN template void gather_blocks<Scalar>(AnyCommunicator&, const Scalar*, std::span<const std::int64_t>, \
                                             Scalar*, std::int64_t);                                        \
  EXTERN template void scatter_blocks<Scalar>(AnyCommunicator&, const Scalar*, std::int64_t,                 \
                                              std::span<const std::int64_t>, Scalar*);
#if SHARDWISE_EXTERN_RUNTIME
SHARDWISE_EXECUTOR_INSTANTIATIONS(extern, float)
SHARDWISE_EXECUTOR_INSTANTIATIONS(extern, double)
SHARDWISE_EXECUTOR_INSTANTIATIONS(extern, std::complex<float>)
SHARDWISE_EXECUTOR_INSTANTIATIONS(extern, std::complex<double>)
#endif

}  // namespace shardwise::detail
