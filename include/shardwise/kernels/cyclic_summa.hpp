// shardwise/kernels/cyclic_summa.hpp: C = A B on ScaLAPACK's layout, where it lies: SUMMA over
// the block-cyclic k blocks (PDGEMM's algorithm).
//
// A = [rows cyclic over r, k cyclic over c], B = [k cyclic over r, columns cyclic over c], C =
// [rows as A's, columns as B's], A's and B's k in blocks of one size KB. Each k block is one
// panel: the column of the grid that holds it (its first block's coordinate plus the block
// index, modulo the axis) broadcasts A's panel (this rank's rows x KB) along the grid's row, the
// row that holds B's panel (KB x this rank's columns) along the grid's column, and every rank
// adds the panels' product to its block of C. No redistribution: the operands stay in their
// column-major local arrays (any leading dimension); a panel is packed only where its rows are
// not contiguous (B's, or A's under a leading dimension larger than its rows) before it is sent.
// cyclic_summa_traffic() is its model, from the same panels. Given how many of C's rows each
// grid row holds and how many columns each grid column holds (cyclic_holders), a panel is sent
// only where a rank other than its root multiplies it (sub(C) on a few processes, as in a tiny
// ScaLAPACK call: no panel goes to a rank that holds no part of C).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "shardwise/kernels/gemm.hpp"
#include "shardwise/layout.hpp"
#include "shardwise/process_group_mesh.hpp"
#include "shardwise/traffic.hpp"

namespace shardwise::detail {

/// The k panels of a cyclic SUMMA: k indices in blocks of `block`, starting at global index
/// `a_start` of A's columns (block-cyclic over `columns`, the first block on `a_first`) and at
/// `b_start` of B's rows (over `rows`, the first on `b_first`); the two starts sit at the same
/// place within a block, so that each panel is one block (or a block's part) of both.
struct cyclic_panels {
  std::int64_t k = 0, block = 1;
  int a_first = 0, b_first = 0, columns = 1, rows = 1;
  std::int64_t a_start = 0, b_start = 0;

  [[nodiscard]] std::int64_t count() const {
    return k > 0 ? (a_start + k - 1) / block - a_start / block + 1 : 0;
  }
  /// Where panel p starts among A's global columns, and its width.
  [[nodiscard]] std::int64_t begin(std::int64_t p) const { return p == 0 ? a_start : (a_start / block + p) * block; }
  [[nodiscard]] std::int64_t width(std::int64_t p) const {
    return std::min((a_start / block + p + 1) * block, a_start + k) - begin(p);
  }
  /// The grid column that holds A's panel p, and where it starts among that column's local columns.
  [[nodiscard]] int a_root(std::int64_t p) const { return static_cast<int>((a_first + begin(p) / block) % columns); }
  [[nodiscard]] std::int64_t a_offset(std::int64_t p) const {
    const std::int64_t g = begin(p);
    return (g / (block * columns)) * block + g % block;
  }
  /// The grid row that holds B's panel p, and where it starts among that row's local rows.
  [[nodiscard]] int b_root(std::int64_t p) const {
    return static_cast<int>((b_first + (b_start + begin(p) - a_start) / block) % rows);
  }
  [[nodiscard]] std::int64_t b_offset(std::int64_t p) const {
    const std::int64_t g = b_start + begin(p) - a_start;
    return (g / (block * rows)) * block + g % block;
  }
};

/// C's rows held by each grid row and columns held by each grid column (empty: every rank
/// holds some): who multiplies a panel.
struct cyclic_holders {
  std::span<const std::int64_t> rows, columns;

  /// Whether a rank of the grid row (column) other than `root` multiplies A's (B's) panels.
  [[nodiscard]] static bool others(std::span<const std::int64_t> extents, int root) {
    if (extents.empty()) return true;
    for (std::size_t i = 0; i < extents.size(); ++i)
      if (static_cast<int>(i) != root && extents[i] > 0) return true;
    return false;
  }
  [[nodiscard]] bool a_sent(int root) const { return others(columns, root); }
  [[nodiscard]] bool b_sent(int root) const { return others(rows, root); }
};

/// Bytes and messages the rank at (row, column) of the grid sends in cyclic_summa: the two
/// broadcasts of every panel (chain broadcasts, as the counting communicator counts them), for
/// a block of C of `local_rows` x `local_cols`.
inline Traffic cyclic_summa_traffic(const cyclic_panels& panels, int row, int column, std::int64_t local_rows,
                                    std::int64_t local_cols, std::int64_t scalar_bytes,
                                    const cyclic_holders& holders = {}) {
  Traffic t;
  for (std::int64_t p = 0; p < panels.count(); ++p) {
    const std::int64_t w = panels.width(p);
    if (holders.a_sent(panels.a_root(p)))
      t += chain_broadcast_traffic(local_rows * w, panels.columns, column, panels.a_root(p), scalar_bytes);
    if (holders.b_sent(panels.b_root(p)))
      t += chain_broadcast_traffic(w * local_cols, panels.rows, row, panels.b_root(p), scalar_bytes);
  }
  return t;
}

/// C (local_rows x local_cols, column-major, leading dimension ldc) = A B: A's local array at
/// `a` (local_rows x its local k, leading dimension lda), B's at `b` (its local k x local_cols,
/// ldb), over the groups along the grid's row axes (`row_axes`, which deal C's rows) and column
/// axes; with `holders`, a panel goes only to ranks that multiply it. Collective over the grid.
template <typename Scalar, typename Buffer = std::vector<Scalar>>
void cyclic_summa(group_mesh_state& groups, const axis_list& row_axes, const axis_list& column_axes,
                  const cyclic_panels& panels, const Scalar* a, std::int64_t lda, const Scalar* b, std::int64_t ldb,
                  Scalar* c, std::int64_t ldc, std::int64_t local_rows, std::int64_t local_cols,
                  Buffer& a_buffer, Buffer& b_buffer, const cyclic_holders& holders = {}) {
  AnyCommunicator& along_row = groups.group_along(column_axes);  // the ranks of one grid row: A's panels
  AnyCommunicator& along_column = groups.group_along(row_axes);  // of one grid column: B's panels
  const int column = along_row.rank(), row = along_column.rank();
  bool accumulate = false;
  for (std::int64_t p = 0; p < panels.count(); ++p) {
    const std::int64_t w = panels.width(p);
    // A's panel: local_rows x w, column-major; read in place at the root when its columns are
    // contiguous (lda is the rows), packed otherwise.
    a_buffer.resize(static_cast<std::size_t>(std::max<std::int64_t>(1, local_rows * w)));
    Scalar* a_panel = a_buffer.data();
    if (column == panels.a_root(p)) {
      const Scalar* first = a + panels.a_offset(p) * lda;
      if (lda == local_rows || w == 1) a_panel = const_cast<Scalar*>(first);  // a broadcast never writes the root's
      else
        for (std::int64_t j = 0; j < w; ++j) std::copy_n(first + j * lda, local_rows, a_buffer.data() + j * local_rows);
    }
    if (along_row.size() > 1 && holders.a_sent(panels.a_root(p)))
      along_row.broadcast(std::span<Scalar>(a_panel, static_cast<std::size_t>(local_rows * w)), panels.a_root(p));
    // B's panel: w x local_cols, packed column-major (its rows are not contiguous in B).
    b_buffer.resize(static_cast<std::size_t>(std::max<std::int64_t>(1, w * local_cols)));
    if (row == panels.b_root(p)) {
      const Scalar* first = b + panels.b_offset(p);
      for (std::int64_t j = 0; j < local_cols; ++j) std::copy_n(first + j * ldb, w, b_buffer.data() + j * w);
    }
    if (along_column.size() > 1 && holders.b_sent(panels.b_root(p)))
      along_column.broadcast(std::span<Scalar>(b_buffer.data(), static_cast<std::size_t>(w * local_cols)),
                             panels.b_root(p));
    if (local_rows > 0 && local_cols > 0)
      gemm<Scalar>(matrix_view<Scalar>{c, local_rows, local_cols, std::max<std::int64_t>(1, ldc), false},
                   matrix_view<const Scalar>{a_panel, local_rows, w, std::max<std::int64_t>(1, local_rows), false},
                   matrix_view<const Scalar>{b_buffer.data(), w, local_cols, std::max<std::int64_t>(1, w), false},
                   accumulate);
    accumulate = true;
  }
  if (!accumulate)  // k = 0
    for (std::int64_t j = 0; j < local_cols; ++j) std::fill_n(c + j * ldc, local_rows, Scalar(0));
}

}  // namespace shardwise::detail
