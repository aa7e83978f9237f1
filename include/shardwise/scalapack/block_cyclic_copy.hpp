// shardwise/scalapack/block_cyclic_copy.hpp: a submatrix copied from one block-cyclic layout
// into another, possibly transposed and on another grid: what p?tran and p?gemr2d share.
//
// Every element of the source submatrix goes to the process that holds its place in the
// target submatrix, in one exchange over a communicator holding both grids' processes
// (pair_exchange.hpp: one message per pair of processes that share elements; a process's own
// share goes straight from its source array to its target array, through no buffer, while the
// messages travel). Per pair, the elements are the
// product of two lists of index runs, one per dimension: the runs of the source's rows
// (columns) that the sender holds and whose place the receiver holds among the target's rows
// (columns), or columns (rows) for a transpose; both sides walk them in the same order (source
// columns outer, source rows inner, so that the sender reads contiguous runs), and the receiver
// combines each element into its place (a copy, or alpha/beta for p?tran).
//
// copy_sent_elements() is the model of what a rank sends: the elements of the source it holds
// less those whose target place it holds itself, counted by a different route (NUMROC-style
// counts and one self intersection) than the per-pair runs the exchange packs.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <vector>

#include "shardwise/kernels/redistribute.hpp"
#include "shardwise/scalapack/pair_exchange.hpp"
#include "shardwise/scalapack/pgemm.hpp"

namespace shardwise::scalapack {

/// What the calls of one routine (p?tran or p?gemr2d) did on this process, since the start or
/// the last reset.
struct RedistributionStats {
  std::int64_t calls = 0;                  ///< Calls.
  std::int64_t redistributed = 0;          ///< Calls that ran the exchange.
  std::int64_t without_communication = 0;  ///< Calls answered locally (M or N = 0, alpha = 0).
  std::int64_t not_covered = 0;            ///< Calls refused (the drop-in hands them to ScaLAPACK).
  std::int64_t sent_bytes = 0;             ///< Bytes this process sent to other processes.
  std::int64_t messages = 0;               ///< Non-empty messages this process sent to others.
};

namespace detail {

/// A run of indices two processes share (redistribute.hpp's): local index on each side, length.
using shardwise::detail::shared_run;

/// One side of a copy: a submatrix of a block-cyclic matrix on a grid, and where the grid's
/// processes are in the copy's communicator.
struct BlockCyclicSide {
  BlockCyclicDim rows, cols;         ///< The whole matrix's distributions over the grid.
  std::int64_t row0 = 0, col0 = 0;  ///< The submatrix's first global row and column (0-based).
  std::int64_t ld = 1;              ///< LLD of this process's local array.
  std::vector<int> ranks;           ///< ranks[p * cols.processes + q]: rank of grid process (p, q).
  int row = -1, col = -1;           ///< This process's place in the grid; -1 when outside it.

  [[nodiscard]] bool holds() const { return row >= 0 && col >= 0; }
};

/// The indices of [0, count) held by process `p` along `from` (shifted by `from_first`) and by
/// process `q` along `to` (shifted by `to_first`): runs with their local index on each side.
inline std::vector<shared_run> shared_runs_1d(const BlockCyclicDim& from, int p, std::int64_t from_first,
                                              const BlockCyclicDim& to, int q, std::int64_t to_first,
                                              std::int64_t count) {
  std::vector<shared_run> shared;
  if (count <= 0) return shared;
  const std::vector<IndexRun> a = owned_runs(from, p, from_first, count), b = owned_runs(to, q, to_first, count);
  for (std::size_t x = 0, y = 0; x < a.size() && y < b.size();) {
    const std::int64_t a_begin = a[x].global - from_first, b_begin = b[y].global - to_first;
    const std::int64_t begin = std::max(a_begin, b_begin);
    const std::int64_t end = std::min(a_begin + a[x].length, b_begin + b[y].length);
    if (begin < end) shared.push_back({a[x].local + begin - a_begin, b[y].local + begin - b_begin, end - begin});
    if (a_begin + a[x].length < b_begin + b[y].length) ++x;
    else ++y;
  }
  return shared;
}

inline std::int64_t run_total(const std::vector<shared_run>& runs) {
  std::int64_t n = 0;
  for (const shared_run& r : runs) n += r.length;
  return n;
}

/// The target's m x n submatrix gets the source's (n x m when transposed).
struct CopyShape {
  std::int64_t m = 0, n = 0;
  bool transposed = false;
  [[nodiscard]] std::int64_t source_rows() const { return transposed ? n : m; }
  [[nodiscard]] std::int64_t source_cols() const { return transposed ? m : n; }
};

/// The elements source process (ps, qs) sends target process (pt, qt): runs of the source's
/// rows and of its columns, each with its local index on the target.
struct PairRuns {
  std::vector<shared_run> rows, cols;
  [[nodiscard]] std::int64_t count() const { return run_total(rows) * run_total(cols); }
};

inline PairRuns pair_runs(const CopyShape& shape, const BlockCyclicSide& source, int ps, int qs,
                          const BlockCyclicSide& target, int pt, int qt) {
  // A transpose pairs the source's rows with the target's columns and the other way round.
  const BlockCyclicDim& to_rows = shape.transposed ? target.cols : target.rows;
  const BlockCyclicDim& to_cols = shape.transposed ? target.rows : target.cols;
  const int at_rows = shape.transposed ? qt : pt, at_cols = shape.transposed ? pt : qt;
  const std::int64_t first_rows = shape.transposed ? target.col0 : target.row0;
  const std::int64_t first_cols = shape.transposed ? target.row0 : target.col0;
  PairRuns r;
  r.rows = shared_runs_1d(source.rows, ps, source.row0, to_rows, at_rows, first_rows, shape.source_rows());
  if (!r.rows.empty())
    r.cols = shared_runs_1d(source.cols, qs, source.col0, to_cols, at_cols, first_cols, shape.source_cols());
  return r;
}

/// The model: elements this process sends to other processes in copy() (as the source's
/// process (source.row, source.col) and, when it is in the target's grid too, its own share).
inline std::int64_t copy_sent_elements(const CopyShape& shape, const BlockCyclicSide& source,
                                       const BlockCyclicSide& target) {
  if (!source.holds()) return 0;
  const std::int64_t held =
      held_count(source.rows, source.cols, source.row, source.col,
                 Rect{source.row0, source.col0, shape.source_rows(), shape.source_cols()});
  if (!target.holds()) return held;
  return held - pair_runs(shape, source, source.row, source.col, target, target.row, target.col).count();
}

/// Buffers kept from call to call, per scalar type.
template <typename Scalar>
struct copy_workspace {
  std::vector<Scalar> send, receive;
  std::vector<std::int64_t> send_elements, receive_elements;
  std::vector<int> send_counts, send_offsets, receive_counts, receive_offsets;
  std::vector<PairRuns> outgoing, incoming;  ///< per rank of the communicator
  std::vector<MPI_Request> requests;          ///< the exchange's messages
};

template <typename Scalar>
copy_workspace<Scalar>& copy_buffers() {
  static copy_workspace<Scalar> w;
  return w;
}

/// Whether every count of a copy fits MPI's int: no process sends or receives more than the
/// submatrix.
inline bool copy_fits_int(const CopyShape& shape) { return shape.m * shape.n <= INT_MAX; }

/// Combines one pair's elements into the target, tile by tile (a row run by a column run, at
/// most a block each way), so that a transpose's strided writes stay within a few cache lines.
/// `tile(cr, column, rr, row)`: the address of the tile's first source element, by its runs and
/// its index among the pair's source columns and rows; a tile's rows are consecutive, its
/// columns `stride` apart (the message's height, or A's LLD).
template <typename Scalar, typename Combine, typename Tile>
void combine_pair(const PairRuns& runs, bool transposed, std::int64_t target_ld, Scalar* c, Combine& combine,
                  Tile&& tile, std::int64_t stride) {
  std::int64_t column = 0;
  for (const shared_run& cr : runs.cols) {
    std::int64_t row = 0;
    for (const shared_run& rr : runs.rows) {
      const Scalar* first = tile(cr, column, rr, row);
      if (!transposed) {
        for (std::int64_t j = 0; j < cr.length; ++j) {
          const Scalar* from = first + j * stride;
          Scalar* into = c + rr.to + (cr.to + j) * target_ld;
          for (std::int64_t i = 0; i < rr.length; ++i) combine(into[i], from[i]);
        }
      } else {
        // Source column j -> target row, in 8 x 8 pieces: a power-of-two LLD maps a whole
        // column of the tile's target lines to one cache set, which 8 lines still fit.
        constexpr std::int64_t piece = 8;
        for (std::int64_t j0 = 0; j0 < cr.length; j0 += piece)
          for (std::int64_t i0 = 0; i0 < rr.length; i0 += piece) {
            const std::int64_t j_end = std::min(cr.length, j0 + piece), i_end = std::min(rr.length, i0 + piece);
            for (std::int64_t j = j0; j < j_end; ++j) {
              const Scalar* from = first + j * stride;
              Scalar* into = c + (cr.to + j) + rr.to * target_ld;
              for (std::int64_t i = i0; i < i_end; ++i) combine(into[i * target_ld], from[i]);
            }
          }
      }
      row += rr.length;
    }
    column += cr.length;
  }
}

/// The copy, collective over `comm` (every process of both grids, and any other process of
/// the communicator, which takes part with nothing to send or receive): target element
/// t := combine(t, v) for each element v of op(sub(source)). `combine` gets the target element
/// and the value as it was in the source (a transpose moves it, the caller conjugates).
/// The bytes sent to other processes and the non-empty messages go to `stats`.
template <typename Scalar, typename Combine>
void copy(MPI_Comm comm, const CopyShape& shape, const BlockCyclicSide& source, const Scalar* a,
          const BlockCyclicSide& target, Scalar* c, Combine&& combine, RedistributionStats& stats) {
  int ranks = 0, me = 0;
  MPI_Comm_size(comm, &ranks);
  MPI_Comm_rank(comm, &me);
  auto& w = copy_buffers<Scalar>();
  const auto size = static_cast<std::size_t>(ranks);
  w.send_elements.assign(size, 0);
  w.receive_elements.assign(size, 0);
  w.outgoing.assign(size, {});
  w.incoming.assign(size, {});
  const int source_cols = source.cols.processes, target_cols = target.cols.processes;
  if (source.holds())
    for (int pt = 0; pt < target.rows.processes; ++pt)
      for (int qt = 0; qt < target_cols; ++qt) {
        const auto d = static_cast<std::size_t>(target.ranks[static_cast<std::size_t>(pt * target_cols + qt)]);
        w.outgoing[d] = pair_runs(shape, source, source.row, source.col, target, pt, qt);
        w.send_elements[d] = w.outgoing[d].count();
      }
  if (target.holds())
    for (int ps = 0; ps < source.rows.processes; ++ps)
      for (int qs = 0; qs < source_cols; ++qs) {
        const auto s = static_cast<std::size_t>(source.ranks[static_cast<std::size_t>(ps * source_cols + qs)]);
        w.incoming[s] = pair_runs(shape, source, ps, qs, target, target.row, target.col);
        w.receive_elements[s] = w.incoming[s].count();
      }
  // This process's own share skips the buffers: combined straight from A below.
  const auto self = static_cast<std::size_t>(me);
  const bool own_share = w.send_elements[self] > 0;
  w.send_elements[self] = w.receive_elements[self] = 0;
  std::int64_t send_total = 0, receive_total = 0;
  for (std::size_t r = 0; r < size; ++r) {
    send_total += w.send_elements[r];
    receive_total += w.receive_elements[r];
    if (static_cast<int>(r) != me && w.send_elements[r] > 0) ++stats.messages;
  }
  set_counts(w.send_elements, w.send_counts, w.send_offsets);
  set_counts(w.receive_elements, w.receive_counts, w.receive_offsets);
  w.send.resize(static_cast<std::size_t>(std::max<std::int64_t>(send_total, 1)));
  w.receive.resize(static_cast<std::size_t>(std::max<std::int64_t>(receive_total, 1)));

  // Pack: per destination, source columns outer, rows inner (contiguous reads of A).
  Scalar* packed = w.send.data();
  for (std::size_t d = 0; d < size; ++d) {
    if (w.send_elements[d] == 0) continue;
    for (const shared_run& cr : w.outgoing[d].cols)
      for (std::int64_t j = 0; j < cr.length; ++j) {
        const Scalar* column = a + (cr.from + j) * source.ld;
        for (const shared_run& rr : w.outgoing[d].rows) packed = std::copy_n(column + rr.from, rr.length, packed);
      }
  }
  // The own share is combined while the messages travel.
  exchange_pairs<Scalar>(comm, me, {w.send.data(), w.send_counts, w.send_offsets},
                         {w.receive.data(), w.receive_counts, w.receive_offsets}, w.requests, [&] {
                           if (!own_share) return;
                           combine_pair(w.outgoing[self], shape.transposed, target.ld, c, combine,
                                        [&](const shared_run& cr, std::int64_t, const shared_run& rr, std::int64_t) {
                                          return a + cr.from * source.ld + rr.from;
                                        },
                                        source.ld);
                         });
  stats.sent_bytes += static_cast<std::int64_t>(sizeof(Scalar)) * send_total;

  // Unpack: each message is a column-major matrix (its source rows by its source columns).
  for (std::size_t r = 0; r < size; ++r) {
    if (w.receive_elements[r] == 0) continue;
    const std::int64_t height = run_total(w.incoming[r].rows);
    const Scalar* message = w.receive.data() + w.receive_offsets[r];
    combine_pair(w.incoming[r], shape.transposed, target.ld, c, combine,
                 [&](const shared_run&, std::int64_t column, const shared_run&, std::int64_t row) {
                   return message + column * height + row;
                 },
                 height);
  }
}

/// Whether every process of `comm` found the call within the rules (`ok`) and passed the same
/// `values`: one all-reduce (the minimum of each value and of its negation).
inline bool agree(MPI_Comm comm, bool ok, const std::vector<std::int64_t>& values) {
  std::vector<std::int64_t> both(2 * (values.size() + 1));
  const std::size_t half = values.size() + 1;
  both[0] = ok ? 0 : 1, both[half] = -both[0];
  for (std::size_t i = 0; i < values.size(); ++i) both[i + 1] = values[i], both[half + i + 1] = -values[i];
  MPI_Allreduce(MPI_IN_PLACE, both.data(), static_cast<int>(both.size()), MPI_INT64_T, MPI_MIN, comm);
  if (-both[half] != 0) return false;  // some process's verdict
  for (std::size_t i = 1; i < half; ++i)
    if (both[i] != -both[half + i]) return false;
  return true;
}

}  // namespace detail

}  // namespace shardwise::scalapack
