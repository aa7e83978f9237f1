// shardwise::scalapack::ptran against the real thing: the same random calls go to PBLAS's
// pstran_/pdtran_/pctranu_/pztranu_/pctranc_/pztranc_ (Debian's libscalapack-openmpi) and to
// shardwise, on the same descriptors, and the two sub(C)s must agree (1e-12 relative to the
// largest element for double and complex<double>, 1e-5 for the single types); C's elements
// outside sub(C), LLD padding included, must be bit for bit as they were, and the bytes each
// process sent must be the model's (ptran_sent_bytes).
//
// Every grid of the world's P processes, in row- and column-major order; per grid, random
// calls: M, N from 0 to 70 (uneven, often not a multiple of the blocks), IA, JA, IC, JC from 1
// to 6 inside larger matrices, MB and NB in {1, 2, 7, 64} chosen separately for A and C, random
// RSRC/CSRC, LLD with padding, alpha random, 0 or 1, beta random, 1 or 0 (then C holds NaN,
// which must be overwritten), A's elements outside sub(A) NaN (which must not be read). Then
// refusals: M < 0, A and C on different contexts, M different on one process: refused on every
// process, C unchanged.
//
//   mpiexec -n P test_ptran_scalapack [calls per grid]
//   mpiexec -n P test_ptran_scalapack bad_m    PDTRAN with M = -1: linked with the drop-in, the
//                                              call must reach PBLAS, which reports parameter 1
//                                              and aborts the job, as without the drop-in
//   mpiexec -n P test_ptran_dropin library [calls per grid]
//       the same random calls through the drop-in's entry points (the program linked with
//       libshardwise_scalapack first; pdtran_, pdtran or PDTRAN, ... drawn at random) against
//       PBLAS's own routines (found in libscalapack), and none handed to PBLAS
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "scalapack_differential.hpp"
#include "shardwise/scalapack/ptran.hpp"

/// The drop-in's count of calls handed to PBLAS (only in a program linked with it).
extern "C" long long shardwise_ptran_fallbacks(void) __attribute__((weak));

namespace {

namespace sc = shardwise::scalapack;
using differential::for_each_grid;
using differential::LocalArray;
using differential::random_scalar;
using differential::Tally;
using differential::within;

/// Whether "ours" is the drop-in's entry points (the program is linked with it) rather than
/// shardwise::scalapack::ptran; PBLAS's own routines are then found in libscalapack itself.
bool through_library = false;

template <typename T>
using ptran_function = void (*)(const int*, const int*, const T*, const T*, const int*, const int*, const int*,
                                const T*, T*, const int*, const int*, const int*);

template <typename T>
void reference_ptran(bool conjugate, const int* m, const int* n, const T* alpha, const T* a, const int* ia,
                     const int* ja, const int* da, const T* beta, T* c, const int* ic, const int* jc, const int* dc) {
  if constexpr (std::is_same_v<T, float>) pstran_(m, n, alpha, a, ia, ja, da, beta, c, ic, jc, dc);
  else if constexpr (std::is_same_v<T, double>) pdtran_(m, n, alpha, a, ia, ja, da, beta, c, ic, jc, dc);
  else if constexpr (std::is_same_v<T, std::complex<float>>)
    (conjugate ? pctranc_ : pctranu_)(m, n, alpha, a, ia, ja, da, beta, c, ic, jc, dc);
  else (conjugate ? pztranc_ : pztranu_)(m, n, alpha, a, ia, ja, da, beta, c, ic, jc, dc);
}

template <typename T>
const char* routine(bool conjugate) {
  if constexpr (std::is_same_v<T, float>) return "pstran";
  else if constexpr (std::is_same_v<T, double>) return "pdtran";
  else if constexpr (std::is_same_v<T, std::complex<float>>) return conjugate ? "pctranc" : "pctranu";
  else return conjugate ? "pztranc" : "pztranu";
}

/// A global matrix's local array (differential::make_array): NaN everywhere when `nan`, outside
/// the rectangle `inside` (rows, columns from 0) when `nan_outside`.
template <typename T>
LocalArray<T> make_array(const sc::Grid& g, int context, int rows, int cols, int mb, int nb, int rsrc, int csrc,
                         int pad, std::uint64_t seed, bool nan, sc::detail::Rect inside, bool nan_outside) {
  return differential::make_array<T>(g, context, rows, cols, mb, nb, rsrc, csrc, pad, seed,
                                     [&](std::int64_t i, std::int64_t j) { return nan || (nan_outside && !within(inside, i, j)); });
}

template <typename T>
void run_case(const sc::Grid& g, int context, std::mt19937_64& rng, bool conjugate, const std::string& grid_text,
              Tally& tally) {
  auto pick = [&](std::initializer_list<int> options) {
    return *(options.begin() + static_cast<std::ptrdiff_t>(rng() % options.size()));
  };
  auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1)); };
  const int m = uniform(0, 6) == 0 ? uniform(0, 2) : uniform(1, 70);
  const int n = uniform(0, 6) == 0 ? uniform(0, 2) : uniform(1, 70);
  const int ia = uniform(1, 6), ja = uniform(1, 6), ic = uniform(1, 6), jc = uniform(1, 6);
  const int a_rows = ia - 1 + n + uniform(0, 3), a_cols = ja - 1 + m + uniform(0, 3);
  const int c_rows = ic - 1 + m + uniform(0, 3), c_cols = jc - 1 + n + uniform(0, 3);
  const std::initializer_list<int> blocks = {1, 2, 7, 64};
  const int beta_kind = uniform(0, 3);  // 0: zero with NaN in C, 1: one, 2: random, 3: zero
  const T alpha = uniform(0, 9) == 0 ? T(0) : uniform(0, 4) == 0 ? T(1) : random_scalar<T>(rng);
  const T beta = beta_kind == 0 || beta_kind == 3 ? T(0) : beta_kind == 1 ? T(1) : random_scalar<T>(rng);
  const std::uint64_t seed = rng();
  const sc::detail::Rect sub_a{ia - 1, ja - 1, n, m}, sub_c{ic - 1, jc - 1, m, n};
  const auto a = make_array<T>(g, context, a_rows, a_cols, pick(blocks), pick(blocks), uniform(0, g.rows - 1),
                               uniform(0, g.cols - 1), uniform(0, 2), seed, false, sub_a, alpha != T(0));
  const auto c = make_array<T>(g, context, c_rows, c_cols, pick(blocks), pick(blocks), uniform(0, g.rows - 1),
                               uniform(0, g.cols - 1), uniform(0, 2), seed + 1, beta_kind == 0, sub_c, false);
  auto c_ref = c, c_sw = c;
  // A third of the calls give shardwise DTYPE 2 twins of A and C (differential::Passed).
  const bool twins = uniform(0, 2) == 0;
  differential::Passed<T> a_ours(g, rng, twins, a.data, a.desc, ia, ja), c_ours(g, rng, twins, c_sw.data, c_sw.desc, ic, jc);
  sc::PgemmOutcome outcome;
  std::int64_t sent = 0, modeled = 0;  // the model is checked on shardwise::scalapack::ptran's calls
  if (through_library) {
    const auto pblas = differential::routine_in<ptran_function<T>>(routine<T>(conjugate), false, rng);
    const auto ours = differential::routine_in<ptran_function<T>>(routine<T>(conjugate), true, rng);
    if (pblas == nullptr || ours == nullptr) {
      std::printf("FAIL: %s not found (in libscalapack, or the drop-in's)\n", routine<T>(conjugate));
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    pblas(&m, &n, &alpha, a.data.data(), &ia, &ja, a.desc, &beta, c_ref.data.data(), &ic, &jc, c_ref.desc);
    ours(&m, &n, &alpha, a_ours.data(), &a_ours.i(), &a_ours.j(), a_ours.desc(), &beta, c_ours.data(), &c_ours.i(),
         &c_ours.j(), c_ours.desc());
  } else {
    reference_ptran<T>(conjugate, &m, &n, &alpha, a.data.data(), &ia, &ja, a.desc, &beta, c_ref.data.data(), &ic,
                       &jc, c_ref.desc);
    const std::int64_t sent_before = sc::ptran_stats().sent_bytes;
    outcome = sc::ptran<T>(conjugate, m, n, alpha, a_ours.data(), a_ours.i(), a_ours.j(), a_ours.desc(), beta,
                           c_ours.data(), c_ours.i(), c_ours.j(), c_ours.desc(), g);
    sent = sc::ptran_stats().sent_bytes - sent_before;
    modeled = sc::ptran_sent_bytes<T>(m, n, alpha, a_ours.i(), a_ours.j(), a_ours.desc(), c_ours.i(), c_ours.j(),
                                      c_ours.desc(), g);
  }
  const int twin_padding_changed = c_ours.put_back(c_sw.data);

  const differential::Verdict v =
      differential::compare(g, c, c_ref, c_sw, [&](std::int64_t i, std::int64_t j) { return within(sub_c, i, j); });
  int flags[2] = {(outcome.result != sc::PgemmResult::computed) + twin_padding_changed, sent != modeled};
  MPI_Allreduce(MPI_IN_PLACE, flags, 2, MPI_INT, MPI_SUM, g.comm);
  flags[0] += v.bad;
  const double both[2] = {v.largest, v.worst};
  ++tally.cases;
  if (flags[0] != 0 || flags[1] != 0 || v.fails<T>()) {
    ++tally.failures;
    int world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    if (world == 0)
      std::printf("FAIL %s grid %s: m %d n %d IA,JA %d,%d IC,JC %d,%d A MB %d NB %d RSRC %d CSRC %d, C MB %d NB %d "
                  "RSRC %d CSRC %d, beta kind %d%s: max |diff| %.3g of %.3g, %d NaN mismatches or changes outside "
                  "sub(C), %d processes whose bytes differ from the model%s%s\n",
                  routine<T>(conjugate), grid_text.c_str(), m, n, ia, ja, ic, jc, a.desc[4], a.desc[5], a.desc[6],
                  a.desc[7], c.desc[4], c.desc[5], c.desc[6], c.desc[7], beta_kind, twins ? ", DTYPE 2 twins" : "", both[1], both[0], flags[0],
                  flags[1], outcome.reason.empty() ? "" : ", not covered: ", outcome.reason.c_str());
  }
}

/// Calls out of the rules: refused on every process with the reason, C unchanged.
void check_refusals(const sc::Grid& g, int context, Tally& tally) {
  int world = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const sc::detail::Rect all{0, 0, 9, 9};
  const auto x = make_array<double>(g, context, 9, 9, 2, 2, 0, 0, 0, 5, false, all, false);
  auto refused = [&](const char* what, const std::string& expected, int m, int context_shift) {
    auto c = x;
    int d[9];
    std::copy(std::begin(x.desc), std::end(x.desc), d);
    d[1] += context_shift;
    const sc::PgemmOutcome o = sc::ptran<double>(false, m, 4, 1.0, x.data.data(), 1, 1, d, 0.0, c.data.data(), 1, 1,
                                                 x.desc, g);
    int bad = o.result != sc::PgemmResult::not_covered || o.reason.find(expected) == std::string::npos || c.data != x.data;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    ++tally.cases;
    if (bad) {
      ++tally.failures;
      std::printf("FAIL refusal (%s) on rank %d: '%s'\n", what, world, o.reason.c_str());
    }
  };
  refused("M < 0", "M and N must not be negative", -1, 0);
  refused("contexts", "different BLACS contexts", 4, 1);
  if (size > 1) refused("M differs", world == size - 1 ? "sub(A) reaches past" : "another process", world == size - 1 ? 12 : 4, 0);
}

/// PDTRAN with M = -1 (a 1 x P grid): never returns (PBLAS aborts the job).
int bad_m(int size) {
  const auto [context, g] = differential::make_grid(1, size);
  const auto x = make_array<double>(g, context, 9, 9, 2, 2, 0, 0, 0, 5, false, {0, 0, 9, 9}, false);
  auto c = x;
  const int m = -1, n = 4, one = 1;
  const double alpha = 1, beta = 0;
  pdtran_(&m, &n, &alpha, x.data.data(), &one, &one, x.desc, &beta, c.data.data(), &one, &one, x.desc);
  std::printf("test_ptran_scalapack: PDTRAN with M = -1 returned\n");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const differential::Run run = differential::start(argc, argv);
  const int size = run.size, cases = run.calls;
  if (run.mode == "bad_m") return differential::finish(bad_m(size));
  through_library = run.through_library;
  Tally tally;
  for_each_grid([&](const sc::Grid& grid, int context, std::mt19937_64& rng, const std::string& grid_text) {
    for (int i = 0; i < cases; ++i) {
      run_case<double>(grid, context, rng, false, grid_text, tally);
      run_case<std::complex<double>>(grid, context, rng, false, grid_text, tally);
      run_case<std::complex<double>>(grid, context, rng, true, grid_text, tally);
      if (i % 4 == 0) {
        run_case<float>(grid, context, rng, false, grid_text, tally);
        run_case<std::complex<float>>(grid, context, rng, false, grid_text, tally);
        run_case<std::complex<float>>(grid, context, rng, true, grid_text, tally);
      }
    }
    if (grid_text == "1x" + std::to_string(size) + " order R" && !through_library) check_refusals(grid, context, tally);
  });
  if (through_library)
    return differential::finish_through_library(run, tally, shardwise_ptran_fallbacks, "calls", "PBLAS");
  // Every refusal the test made, and no other: the random calls are all computed.
  return differential::finish_redistribution(run, tally, sc::ptran_stats(), "calls", "PBLAS");
}
