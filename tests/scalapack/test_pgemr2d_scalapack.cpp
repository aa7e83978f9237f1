// shardwise::scalapack::pgemr2d against the real thing: the same random copies go to
// ScaLAPACK's psgemr2d_/pdgemr2d_/pcgemr2d_/pzgemr2d_ (Debian's libscalapack-openmpi) and to
// shardwise, and the two B's must be bit for bit the same (a copy is exact), inside sub(B) and
// out (LLD padding included); the bytes each process sent must be the model's
// (pgemr2d_sent_bytes).
//
// ICTXT is every grid of the world's P processes in row- and column-major order; per ICTXT,
// random copies between two grids made with BLACS_GRIDMAP from random processes in random
// places (a process may be in A's grid, B's, both or neither; one copy in four uses ICTXT's grid
// for both): M, N from 0 to 70, IA, JA, IB, JB from 1 to 6 inside larger matrices, MB and NB in
// {1, 2, 7, 64} chosen separately for A and B, random RSRC/CSRC, LLD with padding, A's elements
// outside sub(A) NaN (which must not be read). Then refusals: M < 0, sub(A) past A, M different
// on one process: refused on every process, B unchanged.
//
//   mpiexec -n P test_pgemr2d_scalapack [copies per ICTXT]
//   mpiexec -n P test_pgemr2d_scalapack bad_submatrix   PDGEMR2D with sub(A) past A: linked with
//                                                       the drop-in, the call must reach
//                                                       ScaLAPACK, which reports it and exits
//   mpiexec -n P test_pgemr2d_dropin library [copies per ICTXT]
//       the same random copies through the drop-in's entry points (the program linked with
//       libshardwise_scalapack first; pdgemr2d_, pdgemr2d or PDGEMR2D, ... drawn at random)
//       against ScaLAPACK's own routines (found in libscalapack), and none handed to ScaLAPACK
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "scalapack_differential.hpp"
#include "shardwise/scalapack/pgemr2d.hpp"

/// The drop-in's count of calls handed to ScaLAPACK (only in a program linked with it).
extern "C" long long shardwise_pgemr2d_fallbacks(void) __attribute__((weak));

namespace {

namespace sc = shardwise::scalapack;
using differential::random_scalar;
using differential::Tally;

/// Whether "ours" is the drop-in's entry points (the program is linked with it) rather than
/// shardwise::scalapack::pgemr2d; ScaLAPACK's own routines are then found in libscalapack itself.
bool through_library = false;

template <typename T>
using pgemr2d_function = void (*)(const int*, const int*, const T*, const int*, const int*, const int*, T*,
                                  const int*, const int*, const int*, const int*);

template <typename T>
void reference_pgemr2d(const int* m, const int* n, const T* a, const int* ia, const int* ja, const int* da, T* b,
                       const int* ib, const int* jb, const int* db, const int* ictxt) {
  if constexpr (std::is_same_v<T, float>) psgemr2d_(m, n, a, ia, ja, da, b, ib, jb, db, ictxt);
  else if constexpr (std::is_same_v<T, double>) pdgemr2d_(m, n, a, ia, ja, da, b, ib, jb, db, ictxt);
  else if constexpr (std::is_same_v<T, std::complex<float>>) pcgemr2d_(m, n, a, ia, ja, da, b, ib, jb, db, ictxt);
  else pzgemr2d_(m, n, a, ia, ja, da, b, ib, jb, db, ictxt);
}

template <typename T>
const char* routine() {
  if constexpr (std::is_same_v<T, float>) return "psgemr2d";
  else if constexpr (std::is_same_v<T, double>) return "pdgemr2d";
  else if constexpr (std::is_same_v<T, std::complex<float>>) return "pcgemr2d";
  else return "pzgemr2d";
}

/// A grid made with BLACS_GRIDMAP (or ICTXT's own), and this process's place in it.
struct MappedGrid {
  int context = -1;
  sc::Grid place;  // rows, cols; row, col -1 outside
  bool own = false;
  [[nodiscard]] bool member() const { return context >= 0 && place.row >= 0; }
};

/// A matrix's local array on a grid: inside the rectangle `inside` a function of the global
/// index, NaN outside it when `nan_outside`, LLD padding -7; a process outside the grid has a
/// descriptor with CTXT_ -1 and one element.
template <typename T>
struct LocalArray {
  std::vector<T> data{T(-5)};
  int desc[9] = {1, -1, 0, 0, 1, 1, 0, 0, 1};
};

template <typename T>
LocalArray<T> make_array(const MappedGrid& g, int rows, int cols, int mb, int nb, int rsrc, int csrc, int pad,
                         std::uint64_t seed, sc::detail::Rect inside, bool nan_outside) {
  LocalArray<T> x;
  if (!g.member()) return x;
  const sc::BlockCyclicDim r{rows, mb, rsrc, g.place.rows}, c{cols, nb, csrc, g.place.cols};
  const auto local_rows = static_cast<int>(r.local_extent(g.place.row));
  const auto local_cols = static_cast<int>(c.local_extent(g.place.col));
  const int lld = std::max(1, local_rows) + pad;
  const int d[9] = {1, g.context, rows, cols, mb, nb, rsrc, csrc, lld};
  std::copy(std::begin(d), std::end(d), x.desc);
  x.data.assign(static_cast<std::size_t>(lld) * static_cast<std::size_t>(std::max(1, local_cols)), T(-7));
  for (int lj = 0; lj < local_cols; ++lj)
    for (int li = 0; li < local_rows; ++li) {
      const std::int64_t gi = r.global_index(li, g.place.row), gj = c.global_index(lj, g.place.col);
      std::mt19937_64 rng(seed * 1000003u + static_cast<std::uint64_t>(gi * 7919 + gj));
      x.data[static_cast<std::size_t>(lj) * static_cast<std::size_t>(lld) + static_cast<std::size_t>(li)] =
          nan_outside && !differential::within(inside, gi, gj) ? T(std::numeric_limits<float>::quiet_NaN())
                                                                : random_scalar<T>(rng);
    }
  return x;
}

/// A grid of `count` random processes of the world in random places (the same on every rank:
/// every rank draws from the same generator). Collective over the world.
MappedGrid map_grid(std::mt19937_64& rng, int size) {
  const int count = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(size));
  std::vector<int> divisors;
  for (int d = 1; d <= count; ++d)
    if (count % d == 0) divisors.push_back(d);
  const int rows = divisors[rng() % divisors.size()], cols = count / rows;
  std::vector<int> processes(static_cast<std::size_t>(size));
  std::iota(processes.begin(), processes.end(), 0);
  std::shuffle(processes.begin(), processes.end(), rng);
  MappedGrid g;
  g.own = true;
  Cblacs_get(0, 0, &g.context);
  Cblacs_gridmap(&g.context, processes.data(), rows, rows, cols);  // process (i, j): processes[i + j * rows]
  g.place.rows = rows, g.place.cols = cols, g.place.row = -1, g.place.col = -1;
  if (g.context >= 0) {
    int r = 0, c = 0;
    Cblacs_gridinfo(g.context, &r, &c, &g.place.row, &g.place.col);
    if (g.place.row >= r || g.place.col >= c) g.place.row = g.place.col = -1;
  }
  return g;
}

template <typename T>
void run_case(const MappedGrid& ga, const MappedGrid& gb, int ictxt, std::mt19937_64& rng,
              const std::string& text, Tally& tally) {
  auto pick = [&](std::initializer_list<int> options) {
    return *(options.begin() + static_cast<std::ptrdiff_t>(rng() % options.size()));
  };
  auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1)); };
  const int m = uniform(0, 6) == 0 ? uniform(0, 2) : uniform(1, 70);
  const int n = uniform(0, 6) == 0 ? uniform(0, 2) : uniform(1, 70);
  const int ia = uniform(1, 6), ja = uniform(1, 6), ib = uniform(1, 6), jb = uniform(1, 6);
  const std::initializer_list<int> blocks = {1, 2, 7, 64};
  const std::uint64_t seed = rng();
  const sc::detail::Rect sub_a{ia - 1, ja - 1, m, n};
  const int a_rows = ia - 1 + m + uniform(0, 3), a_cols = ja - 1 + n + uniform(0, 3);
  const int b_rows = ib - 1 + m + uniform(0, 3), b_cols = jb - 1 + n + uniform(0, 3);
  const int mba = pick(blocks), nba = pick(blocks), ra = uniform(0, ga.place.rows - 1), ca = uniform(0, ga.place.cols - 1);
  const int mbb = pick(blocks), nbb = pick(blocks), rb = uniform(0, gb.place.rows - 1), cb = uniform(0, gb.place.cols - 1);
  const int pad_a = uniform(0, 2), pad_b = uniform(0, 2);
  const auto a = make_array<T>(ga, a_rows, a_cols, mba, nba, ra, ca, pad_a, seed, sub_a, true);
  const auto b = make_array<T>(gb, b_rows, b_cols, mbb, nbb, rb, cb, pad_b, seed + 1, {0, 0, b_rows, b_cols}, false);
  auto b_ref = b, b_sw = b;
  // A third of the calls give shardwise DTYPE 2 twins of A and B (differential::Passed).
  const bool twins = uniform(0, 2) == 0;
  differential::Passed<T> a_ours(ga.place, rng, twins, a.data, a.desc, ia, ja, ga.member()),
      b_ours(gb.place, rng, twins, b_sw.data, b_sw.desc, ib, jb, gb.member());
  sc::PgemmOutcome outcome;
  std::int64_t sent = 0, modeled = 0;  // the model is checked on shardwise::scalapack::pgemr2d's calls
  if (through_library) {
    const auto scalapack = differential::routine_in<pgemr2d_function<T>>(routine<T>(), false, rng);
    const auto ours = differential::routine_in<pgemr2d_function<T>>(routine<T>(), true, rng);
    if (scalapack == nullptr || ours == nullptr) {
      std::printf("FAIL: %s not found (in libscalapack, or the drop-in's)\n", routine<T>());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    scalapack(&m, &n, a.data.data(), &ia, &ja, a.desc, b_ref.data.data(), &ib, &jb, b_ref.desc, &ictxt);
    ours(&m, &n, a_ours.data(), &a_ours.i(), &a_ours.j(), a_ours.desc(), b_ours.data(), &b_ours.i(), &b_ours.j(),
         b_ours.desc(), &ictxt);
  } else {
    reference_pgemr2d<T>(&m, &n, a.data.data(), &ia, &ja, a.desc, b_ref.data.data(), &ib, &jb, b_ref.desc, &ictxt);
    const std::int64_t sent_before = sc::pgemr2d_stats().sent_bytes;
    outcome = sc::pgemr2d<T>(m, n, a_ours.data(), a_ours.i(), a_ours.j(), a_ours.desc(), b_ours.data(), b_ours.i(),
                             b_ours.j(), b_ours.desc(), ictxt);
    sent = sc::pgemr2d_stats().sent_bytes - sent_before;
    modeled = sc::pgemr2d_sent_bytes<T>(m, n, a_ours.i(), a_ours.j(), a_ours.desc(), b_ours.i(), b_ours.j(),
                                        b_ours.desc());
  }
  const int twin_padding_changed = b_ours.put_back(b_sw.data);
  int flags[3] = {(outcome.result != sc::PgemmResult::computed) + twin_padding_changed, 0, sent != modeled};
  flags[1] = b_sw.data.size() != b_ref.data.size() ||
             std::memcmp(b_sw.data.data(), b_ref.data.data(), b_sw.data.size() * sizeof(T)) != 0;
  MPI_Allreduce(MPI_IN_PLACE, flags, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  ++tally.cases;
  if (flags[0] + flags[1] + flags[2] != 0) {
    ++tally.failures;
    int world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    if (world == 0)
      std::printf("FAIL %s ICTXT %s, A on %dx%d, B on %dx%d: m %d n %d IA,JA %d,%d IB,JB %d,%d A MB %d NB %d RSRC %d "
                  "CSRC %d, B MB %d NB %d RSRC %d CSRC %d%s: %d not computed, %d processes whose B differs, %d whose "
                  "bytes differ from the model%s%s\n",
                  routine<T>(), text.c_str(), ga.place.rows, ga.place.cols, gb.place.rows, gb.place.cols, m, n, ia,
                  ja, ib, jb, mba, nba, ra, ca, mbb, nbb, rb, cb, twins ? ", DTYPE 2 twins" : "", flags[0], flags[1], flags[2],
                  outcome.reason.empty() ? "" : ", not covered: ", outcome.reason.c_str());
  }
}

/// Calls out of the rules: refused on every process with the reason, B unchanged.
void check_refusals(const MappedGrid& g, Tally& tally) {
  int world = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const auto x = make_array<double>(g, 9, 9, 2, 2, 0, 0, 0, 5, {0, 0, 9, 9}, false);
  auto refused = [&](const char* what, const std::string& expected, int m, int ia) {
    auto b = x;
    const sc::PgemmOutcome o =
        sc::pgemr2d<double>(m, 4, x.data.data(), ia, 1, x.desc, b.data.data(), 1, 1, x.desc, g.context);
    int bad = o.result != sc::PgemmResult::not_covered || o.reason.find(expected) == std::string::npos || b.data != x.data;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    ++tally.cases;
    if (bad) {
      ++tally.failures;
      std::printf("FAIL refusal (%s) on rank %d: '%s'\n", what, world, o.reason.c_str());
    }
  };
  refused("M < 0", "M and N must not be negative", -1, 1);
  refused("sub(A) past A", "sub(A) reaches past", 4, 7);
  if (size > 1) refused("M differs", "disagree on M", world == size - 1 ? 3 : 4, 1);
}

/// PDGEMR2D with sub(A) past A on a 1 x P grid: ScaLAPACK prints "??MR2D:Bad submatrix" and exits.
int bad_submatrix(int size) {
  MappedGrid g;
  Cblacs_get(0, 0, &g.context);
  Cblacs_gridinit(&g.context, "R", 1, size);
  Cblacs_gridinfo(g.context, &g.place.rows, &g.place.cols, &g.place.row, &g.place.col);
  const auto x = make_array<double>(g, 9, 9, 2, 2, 0, 0, 0, 5, {0, 0, 9, 9}, false);
  auto b = x;
  const int m = 4, n = 4, ia = 7, one = 1;
  pdgemr2d_(&m, &n, x.data.data(), &ia, &one, x.desc, b.data.data(), &one, &one, x.desc, &g.context);
  std::printf("test_pgemr2d_scalapack: PDGEMR2D with sub(A) past A returned\n");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const differential::Run run = differential::start(argc, argv);
  const int size = run.size, copies = run.calls;
  if (run.mode == "bad_submatrix") return differential::finish(bad_submatrix(size));
  through_library = run.through_library;
  Tally tally;
  for (int p = 1; p <= size; ++p) {
    if (size % p != 0) continue;
    for (const char* order : {"R", "C"}) {
      MappedGrid ictxt;
      Cblacs_get(0, 0, &ictxt.context);
      Cblacs_gridinit(&ictxt.context, order, p, size / p);
      Cblacs_gridinfo(ictxt.context, &ictxt.place.rows, &ictxt.place.cols, &ictxt.place.row, &ictxt.place.col);
      const std::string text = std::to_string(p) + "x" + std::to_string(size / p) + " order " + order;
      std::mt19937_64 rng(static_cast<std::uint64_t>(p * 131 + order[0]));
      for (int i = 0; i < copies; ++i) {
        const bool same = rng() % 4 == 0;  // both on ICTXT's grid
        const MappedGrid ga = same ? ictxt : map_grid(rng, size), gb = same ? ictxt : map_grid(rng, size);
        run_case<double>(ga, gb, ictxt.context, rng, text, tally);
        run_case<std::complex<double>>(ga, gb, ictxt.context, rng, text, tally);
        if (i % 2 == 0) {
          run_case<float>(ga, gb, ictxt.context, rng, text, tally);
          run_case<std::complex<float>>(ga, gb, ictxt.context, rng, text, tally);
        }
        for (const MappedGrid* g : {&ga, &gb})
          if (g->own && g->context >= 0) Cblacs_gridexit(g->context);
      }
      if (p == 1 && order[0] == 'R' && !through_library) check_refusals(ictxt, tally);
      Cblacs_gridexit(ictxt.context);
    }
  }
  if (through_library)
    return differential::finish_through_library(run, tally, shardwise_pgemr2d_fallbacks, "copies", "ScaLAPACK");
  // Every refusal the test made, and no other: the random calls are all computed.
  return differential::finish_redistribution(run, tally, sc::pgemr2d_stats(), "copies", "ScaLAPACK");
}
