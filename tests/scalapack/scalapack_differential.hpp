// Helpers of the differential tests of the drop-in's routines against Debian's ScaLAPACK
// (test_pgemm_scalapack, test_ptran_scalapack, test_pgemr2d_scalapack, test_psymm_scalapack,
// test_psyrk_scalapack): their command line, random local arrays with sentinels, the comparison
// of two results, the loop over every grid, and the routines' spellings in the drop-in and in
// libscalapack. The ScaLAPACK prototypes: shardwise/scalapack/prototypes.h.
#pragma once

#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "shardwise/scalapack/blacs.hpp"
#include "shardwise/scalapack/block_cyclic_copy.hpp"
#include "shardwise/scalapack/psymm.hpp"
#include "shardwise/scalapack/prototypes.h"

namespace differential {

namespace sc = shardwise::scalapack;

/// A differential test's run, as its command line asks for it:
///   PROGRAM [CALLS]           random calls against ScaLAPACK's own routine, CALLS per grid and
///                             grid order (default 40), shardwise::scalapack's engine as "ours"
///   PROGRAM library [CALLS]   the same through the drop-in's entry points (a program linked
///                             with libshardwise_scalapack)
///   PROGRAM MODE              a test's own MODE (one bad argument: bad_m, bad_uplo, ...)
struct Run {
  int world = 0, size = 0;       ///< this process's rank in MPI_COMM_WORLD, and its size
  std::string mode;              ///< the first argument, empty without one
  bool through_library = false;  ///< mode "library"
  int calls = 40;
};

/// MPI_Init, then the run the command line asks for.
inline Run start(int& argc, char**& argv) {
  MPI_Init(&argc, &argv);
  Run run;
  MPI_Comm_rank(MPI_COMM_WORLD, &run.world);
  MPI_Comm_size(MPI_COMM_WORLD, &run.size);
  if (argc > 1) run.mode = argv[1];
  run.through_library = run.mode == "library";
  const int calls_at = run.through_library ? 2 : 1;
  if (argc > calls_at) run.calls = std::atoi(argv[calls_at]);
  return run;
}

/// MPI_Finalize, then `status` (main's return value).
inline int finish(int status) {
  MPI_Finalize();
  return status;
}

template <typename T>
bool is_nan(const T& x) {
  if constexpr (shardwise::detail::is_complex_v<T>) return std::isnan(x.real()) || std::isnan(x.imag());
  else return std::isnan(x);
}

/// Bit for bit the same (NaN equal to NaN).
template <typename T>
bool identical(const T& x, const T& y) {
  return std::memcmp(&x, &y, sizeof(T)) == 0;
}

template <typename T>
T random_scalar(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  if constexpr (shardwise::detail::is_complex_v<T>) {
    const double re = u(rng), im = u(rng);
    return T(static_cast<typename T::value_type>(re), static_cast<typename T::value_type>(im));
  } else {
    return static_cast<T>(u(rng));
  }
}

/// Whether global (i, j) lies in the rectangle `r` (rows, columns from 0).
inline bool within(const sc::detail::Rect& r, std::int64_t i, std::int64_t j) {
  return i >= r.row0 && i < r.row0 + r.rows && j >= r.col0 && j < r.col0 + r.cols;
}

/// The tolerance relative to the largest element: 1e-12 for double, 1e-5 for float.
template <typename T>
constexpr double tolerance() {
  return (std::is_same_v<T, float> || std::is_same_v<T, std::complex<float>>) ? 1e-5 : 1e-12;
}

/// A global matrix's local array on this process, with its descriptor.
template <typename T>
struct LocalArray {
  std::vector<T> data;
  int desc[9]{};
  sc::BlockCyclicDim rows, cols;

  /// The global (row, column) of local element `offset`; (-1, -1) in the LLD padding.
  [[nodiscard]] std::pair<std::int64_t, std::int64_t> global(const sc::Grid& g, std::size_t offset) const {
    const auto li = static_cast<std::int64_t>(offset % static_cast<std::size_t>(desc[8]));
    const auto lj = static_cast<std::int64_t>(offset / static_cast<std::size_t>(desc[8]));
    if (li >= rows.local_extent(g.row) || lj >= cols.local_extent(g.col)) return {-1, -1};
    return {rows.global_index(li, g.row), cols.global_index(lj, g.col)};
  }
};

/// Elements a function of their global index and `seed`; `nan(i, j)`: NaN there instead; LLD
/// padding -7.
template <typename T, typename Nan>
LocalArray<T> make_array(const sc::Grid& g, int context, int rows, int cols, int mb, int nb, int rsrc, int csrc,
                         int pad, std::uint64_t seed, Nan&& nan) {
  LocalArray<T> x;
  x.rows = {rows, mb, rsrc, g.rows}, x.cols = {cols, nb, csrc, g.cols};
  const auto local_rows = static_cast<int>(x.rows.local_extent(g.row));
  const auto local_cols = static_cast<int>(x.cols.local_extent(g.col));
  const int lld = std::max(1, local_rows) + pad;
  const int d[9] = {1, context, rows, cols, mb, nb, rsrc, csrc, lld};
  std::copy(std::begin(d), std::end(d), x.desc);
  x.data.assign(static_cast<std::size_t>(lld) * static_cast<std::size_t>(std::max(1, local_cols)), T(-7));
  const T not_a_number = T(std::numeric_limits<float>::quiet_NaN());
  for (int lj = 0; lj < local_cols; ++lj)
    for (int li = 0; li < local_rows; ++li) {
      const std::int64_t gi = x.rows.global_index(li, g.row), gj = x.cols.global_index(lj, g.col);
      std::mt19937_64 rng(seed * 1000003u + static_cast<std::uint64_t>(gi * 7919 + gj));
      x.data[static_cast<std::size_t>(lj) * static_cast<std::size_t>(lld) + static_cast<std::size_t>(li)] =
          nan(gi, gj) ? not_a_number : random_scalar<T>(rng);
    }
  return x;
}

/// A DTYPE 2 (BLOCK_CYCLIC_2D_INB) twin of a DTYPE 1 local array: the same matrix without its
/// first `rows` rows and `cols` columns (fewer than MB and NB: IMB = MB - rows, INB = NB - cols),
/// so that a call on the twin with IA - rows, JA - cols is the call on the original with IA, JA.
/// Its local array is the original's without those rows and columns, which the first block's
/// process row and column held; LLD is kept, so each local column ends in `rows` more rows of
/// padding there (-7).
template <typename T>
struct FirstBlockTwin {
  std::vector<T> data;
  int desc[11]{};
  int row_cut = 0, col_cut = 0;  ///< the local rows and columns cut on this process
  std::size_t columns = 0;       ///< the twin's local columns

  /// Writes the twin's elements back into the original's local array (`original`, the
  /// original's LLD and layout); the number of the twin's own padding elements that changed.
  int put_back(T* original) const {
    const auto lld = static_cast<std::size_t>(desc[10]), rows = lld - static_cast<std::size_t>(row_cut);
    int changed = 0;
    for (std::size_t j = 0; j < columns; ++j) {
      for (std::size_t i = 0; i < rows; ++i)
        original[(j + static_cast<std::size_t>(col_cut)) * lld + i + static_cast<std::size_t>(row_cut)] = data[j * lld + i];
      for (std::size_t i = rows; i < lld; ++i) changed += !identical(data[j * lld + i], T(-7));
    }
    return changed;
  }
};

/// The twin of the DTYPE 1 local array `data` with descriptor `desc` on grid `g` without the
/// matrix's first `rows` rows and `cols` columns (see FirstBlockTwin).
template <typename T>
FirstBlockTwin<T> first_block_twin(const sc::Grid& g, const std::vector<T>& data, const int* desc, int rows, int cols) {
  FirstBlockTwin<T> x;
  const int lld = desc[8];
  const int twin[11] = {2, desc[1], desc[2] - rows, desc[3] - cols, desc[4] - rows, desc[5] - cols, desc[4], desc[5],
                        desc[6], desc[7], lld};
  std::copy(std::begin(twin), std::end(twin), x.desc);
  x.row_cut = g.row == desc[6] ? rows : 0;
  x.col_cut = g.col == desc[7] ? cols : 0;
  const auto l = static_cast<std::size_t>(lld);
  const std::size_t local_cols = data.size() / l - static_cast<std::size_t>(x.col_cut);
  x.columns = local_cols;
  x.data.assign(l * std::max<std::size_t>(1, local_cols), T(-7));
  for (std::size_t j = 0; j < local_cols; ++j)
    for (std::size_t i = 0; i + static_cast<std::size_t>(x.row_cut) < l; ++i)
      x.data[j * l + i] = data[(j + static_cast<std::size_t>(x.col_cut)) * l + i + static_cast<std::size_t>(x.row_cut)];
  return x;
}

/// An operand as the call under test gets it: the original local array, descriptor, I and J,
/// or (`twinned`) its DTYPE 2 twin, cut at random within the first block and before sub(X).
/// `twinned` must be drawn alike on every process (from the grid's shared rng), which then
/// draws the cut alike; a process outside the grid (`member` false) passes the original.
template <typename T>
class Passed {
 public:
  Passed(const sc::Grid& g, std::mt19937_64& rng, bool twinned, const std::vector<T>& data, const int* desc, int i,
         int j, bool member = true)
      : original_(data), original_desc_(desc), i_(i), j_(j) {
    if (!twinned) return;
    const auto rows = static_cast<int>(rng() % 64), cols = static_cast<int>(rng() % 64);
    if (!member) return;
    twinned_ = true;
    twin_ = first_block_twin(g, data, desc, rows % std::min(desc[4], i), cols % std::min(desc[5], j));
    i_ -= rows % std::min(desc[4], i), j_ -= cols % std::min(desc[5], j);
  }
  [[nodiscard]] T* data() { return twinned_ ? twin_.data.data() : const_cast<T*>(original_.data()); }
  [[nodiscard]] const int* desc() const { return twinned_ ? twin_.desc : original_desc_; }
  [[nodiscard]] const int& i() const { return i_; }
  [[nodiscard]] const int& j() const { return j_; }
  /// After the call: the twin's elements into `original`; how many of its padding changed.
  int put_back(std::vector<T>& original) const { return twinned_ ? twin_.put_back(original.data()) : 0; }

 private:
  const std::vector<T>& original_;
  const int* original_desc_;
  FirstBlockTwin<T> twin_;
  int i_, j_;
  bool twinned_ = false;
};

/// The comparison of two results of one call from the same `before`, over the grid: the
/// largest reference element and difference where `writable(i, j)` (global indices), and the
/// elements elsewhere (LLD padding included) not bit for bit as before, plus NaN mismatches.
struct Verdict {
  double largest = 0, worst = 0;
  int bad = 0;
  template <typename T>
  [[nodiscard]] bool fails() const {
    return bad != 0 || worst > tolerance<T>() * std::max(1.0, largest);
  }
};

template <typename T, typename Writable>
Verdict compare(const sc::Grid& g, const LocalArray<T>& before, const LocalArray<T>& ref, const LocalArray<T>& ours,
                Writable&& writable) {
  Verdict v;
  for (std::size_t i = 0; i < before.data.size(); ++i) {
    const auto [gi, gj] = before.global(g, i);
    if (gi < 0 || !writable(gi, gj)) {
      v.bad += !identical(ours.data[i], before.data[i]) || !identical(ref.data[i], before.data[i]);
      continue;
    }
    if (is_nan(ref.data[i]) || is_nan(ours.data[i])) {
      v.bad += is_nan(ref.data[i]) != is_nan(ours.data[i]);
      continue;
    }
    v.largest = std::max(v.largest, static_cast<double>(std::abs(ref.data[i])));
    v.worst = std::max(v.worst, static_cast<double>(std::abs(ref.data[i] - ours.data[i])));
  }
  double both[2] = {v.largest, v.worst};
  MPI_Allreduce(MPI_IN_PLACE, both, 2, MPI_DOUBLE, MPI_MAX, g.comm);
  MPI_Allreduce(MPI_IN_PLACE, &v.bad, 1, MPI_INT, MPI_SUM, g.comm);
  v.largest = both[0], v.worst = both[1];
  return v;
}

struct Tally {
  int cases = 0, failures = 0;
};

/// The end of a run through the drop-in (`library`): rank 0 prints the calls (`what`) made
/// against `peer`'s own routine, how many differ, and how many the drop-in handed to it (its
/// counter `handed_over`, a weak symbol: -1 in a program not linked with the drop-in); then
/// finish(), passed when none differs and none was handed over.
inline int finish_through_library(const Run& run, const Tally& tally, long long (*handed_over)(), const char* what,
                                  const char* peer) {
  const long long handed = handed_over == nullptr ? -1 : handed_over();
  if (run.world == 0)
    std::printf("%d ranks: %d %s through the drop-in against %s, %d differ; %lld handed to %s\n", run.size,
                tally.cases, what, peer, tally.failures, handed, peer);
  return finish(tally.failures == 0 && handed == 0 ? 0 : 1);
}

/// The end of a redistribution's run (p?gemr2d, p?tran) computed by shardwise: rank 0 prints
/// the calls (`what`) made against `peer`'s routine, how many differ, and the routine's counts
/// (`stats`); then finish(), passed when none differs, every call was computed but the
/// refusals the test made (3 on several ranks, 2 on one), some were redistributed, and, on
/// several ranks, bytes were sent.
inline int finish_redistribution(const Run& run, const Tally& tally, const sc::RedistributionStats& stats,
                                 const char* what, const char* peer) {
  if (run.world == 0)
    std::printf("%d ranks: %d %s against %s, %d differ; %lld redistributed (%.1f KiB sent by rank 0, %lld "
                "messages), %lld without communication, %lld not covered\n",
                run.size, tally.cases, what, peer, tally.failures, static_cast<long long>(stats.redistributed),
                static_cast<double>(stats.sent_bytes) / 1024, static_cast<long long>(stats.messages),
                static_cast<long long>(stats.without_communication), static_cast<long long>(stats.not_covered));
  const std::int64_t refusals = run.size > 1 ? 3 : 2;
  const bool sent = run.size == 1 || stats.sent_bytes > 0;
  const bool passed = tally.failures == 0 && stats.not_covered == refusals && stats.redistributed > 0 && sent;
  return finish(passed ? 0 : 1);
}

/// The end of a level-3 routine's run (p?symm, p?syrk) computed through pgemm(): rank 0 prints
/// the calls made against PBLAS, how many differ, and the routine's counts (`stats`); then
/// finish(), passed when none differs, the refusals are exactly the test's (`refusals`) and
/// some calls were computed.
inline int finish_level3(const Run& run, const Tally& tally, const sc::Level3Stats& stats, std::int64_t refusals) {
  if (run.world == 0)
    std::printf("%d ranks: %d calls against PBLAS, %d differ; %lld computed (%lld pgemm calls; rank 0 sent %.1f KiB "
                "in the routine's copies, %.1f KiB in pgemm), %lld without communication, %lld not covered\n",
                run.size, tally.cases, tally.failures, static_cast<long long>(stats.computed),
                static_cast<long long>(stats.gemm_calls), static_cast<double>(stats.copy_bytes) / 1024,
                static_cast<double>(stats.gemm_bytes) / 1024, static_cast<long long>(stats.without_communication),
                static_cast<long long>(stats.not_covered));
  return finish(tally.failures == 0 && stats.not_covered == refusals && stats.computed > 0 ? 0 : 1);
}

/// In a program linked with the drop-in: ScaLAPACK's own routine `name` (found in libscalapack
/// itself), or (`drop_in`) one of the drop-in's three spellings of it, drawn at random.
template <typename Function>
Function routine_in(std::string name, bool drop_in, std::mt19937_64& rng) {
  if (!drop_in) {
    static void* scalapack = dlopen("libscalapack-openmpi.so.2.2", RTLD_LAZY | RTLD_NOLOAD);
    return scalapack == nullptr ? nullptr : reinterpret_cast<Function>(dlsym(scalapack, (name + "_").c_str()));
  }
  const auto spelling = rng() % 3;  // pdsymm_, pdsymm, PDSYMM
  if (spelling == 0) name += "_";
  if (spelling == 2)
    std::transform(name.begin(), name.end(), name.begin(), [](char c) { return c >= 'a' ? static_cast<char>(c - 32) : c; });
  return reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name.c_str()));
}

/// A new BLACS grid of `rows` x `cols` of the world's processes, in `order`: its context and this
/// process's place in it. Every process must be in the grid; the job fails when the BLACS does
/// not number the grid's communicator row-major (grid_of).
struct BlacsGrid {
  int context = -1;
  sc::Grid grid;
};
inline BlacsGrid make_grid(int rows, int cols, const char* order = "R") {
  BlacsGrid g;
  Cblacs_get(0, 0, &g.context);
  Cblacs_gridinit(&g.context, order, rows, cols);
  const std::optional<sc::Grid> grid = sc::grid_of(g.context);
  if (!grid) {
    std::printf("FAIL: the grid's communicator is not numbered row-major\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  g.grid = *grid;
  return g;
}

/// Calls `body(grid, context, rng, grid_text)` on every grid of the world's processes, in both
/// orders, with a fixed seed per grid.
template <typename Body>
void for_each_grid(Body&& body) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int p = 1; p <= size; ++p) {
    if (size % p != 0) continue;
    for (const char* order : {"R", "C"}) {
      const BlacsGrid g = make_grid(p, size / p, order);
      const std::string grid_text = std::to_string(p) + "x" + std::to_string(size / p) + " order " + order;
      std::mt19937_64 rng(static_cast<std::uint64_t>(p * 131 + order[0]));
      body(g.grid, g.context, rng, grid_text);
      Cblacs_gridexit(g.context);
    }
  }
}

}  // namespace differential
