// shardwise::scalapack::psymm against the real thing: the same random calls go to PBLAS's
// pssymm_/pdsymm_/pcsymm_/pzsymm_/pchemm_/pzhemm_ (Debian's libscalapack-openmpi) and to
// shardwise, on the same descriptors, and the two sub(C)s must agree (1e-12 relative to the
// largest element for double and complex<double>, 1e-5 for the single types); C's elements
// outside sub(C), LLD padding included, must be bit for bit as they were, and the bytes each
// process sent in psymm's own copy must be the model's (psymm_sent_bytes).
//
// Every grid of the world's P processes, in row- and column-major order; per grid, random
// calls: SIDE, UPLO, M, N from 0 to 70, IA, JA, IB, JB, IC, JC from 1 to 6 inside larger
// matrices, MB and NB in {1, 2, 7, 64} per matrix, random RSRC/CSRC, LLD with padding, alpha
// random, 0 or 1, beta random, 1 or 0 (then C holds NaN, which must be overwritten). A is NaN
// outside sub(A)'s UPLO triangle and B outside sub(B) (neither may be read); p?hemm's diagonal
// has imaginary parts, which PBLAS takes as zero. Then refusals: UPLO = 'X', SIDE = 'Q', M < 0,
// different contexts: refused on every process, C unchanged.
//
//   mpiexec -n P test_psymm_scalapack [calls per grid]
//   mpiexec -n P test_psymm_scalapack bad_uplo   PDSYMM with UPLO = 'X': linked with the
//                                                drop-in, the call must reach PBLAS, which
//                                                reports parameter 2 and aborts the job
//   mpiexec -n P test_psymm_dropin library [calls per grid]
//       the same random calls through the drop-in's entry points (pdsymm_, pdsymm or PDSYMM,
//       ... drawn at random) against PBLAS's own routines, and none handed to PBLAS
#include <mpi.h>

#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "scalapack_differential.hpp"
#include "shardwise/scalapack/psymm.hpp"

/// The drop-in's count of calls handed to PBLAS (only in a program linked with it).
extern "C" long long shardwise_psymm_fallbacks(void) __attribute__((weak));

namespace {

using namespace differential;

bool through_library = false;

template <typename T>
std::string routine(bool hermitian) {
  if constexpr (std::is_same_v<T, float>) return "pssymm";
  else if constexpr (std::is_same_v<T, double>) return "pdsymm";
  else if constexpr (std::is_same_v<T, std::complex<float>>) return hermitian ? "pchemm" : "pcsymm";
  else return hermitian ? "pzhemm" : "pzsymm";
}

/// PBLAS's routine for T, called by name.
template <typename T>
auto linked_reference(bool hermitian) {
  if constexpr (std::is_same_v<T, float>) return pssymm_;
  else if constexpr (std::is_same_v<T, double>) return pdsymm_;
  else if constexpr (std::is_same_v<T, std::complex<float>>) return hermitian ? pchemm_ : pcsymm_;
  else return hermitian ? pzhemm_ : pzsymm_;
}

template <typename T>
using psymm_function = decltype(linked_reference<T>(false));

template <typename T>
void run_case(const sc::Grid& g, int context, std::mt19937_64& rng, bool hermitian, const std::string& grid_text,
              Tally& tally) {
  auto pick = [&](std::initializer_list<int> options) {
    return *(options.begin() + static_cast<std::ptrdiff_t>(rng() % options.size()));
  };
  auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1)); };
  const char side = pick({'L', 'R', 'l', 'r'}), uplo = pick({'U', 'L', 'u', 'l'});
  const bool left = side == 'L' || side == 'l', upper = uplo == 'U' || uplo == 'u';
  const int m = uniform(0, 6) == 0 ? uniform(0, 2) : uniform(1, 70);
  const int n = uniform(0, 6) == 0 ? uniform(0, 2) : uniform(1, 70);
  const int k = left ? m : n;
  const int ia = uniform(1, 6), ja = uniform(1, 6), ib = uniform(1, 6), jb = uniform(1, 6), ic = uniform(1, 6),
            jc = uniform(1, 6);
  const std::initializer_list<int> blocks = {1, 2, 7, 64};
  const int beta_kind = uniform(0, 3);  // 0: zero with NaN in C, 1: one, 2: random, 3: zero
  const T alpha = uniform(0, 9) == 0 ? T(0) : uniform(0, 4) == 0 ? T(1) : random_scalar<T>(rng);
  const T beta = beta_kind == 0 || beta_kind == 3 ? T(0) : beta_kind == 1 ? T(1) : random_scalar<T>(rng);
  const std::uint64_t seed = rng();
  const bool nan_outside = alpha != T(0);
  const auto a = make_array<T>(g, context, ia - 1 + k + uniform(0, 3), ja - 1 + k + uniform(0, 3), pick(blocks),
                               pick(blocks), uniform(0, g.rows - 1), uniform(0, g.cols - 1), uniform(0, 2), seed,
                               [&](std::int64_t i, std::int64_t j) {
                                 i -= ia - 1, j -= ja - 1;
                                 const bool stored = i >= 0 && i < k && j >= 0 && j < k && (upper ? i <= j : i >= j);
                                 return nan_outside && !stored;
                               });
  const auto within = [](std::int64_t i, std::int64_t j, int i0, int j0, int rows, int cols) {
    return i >= i0 - 1 && i < i0 - 1 + rows && j >= j0 - 1 && j < j0 - 1 + cols;
  };
  const auto b = make_array<T>(g, context, ib - 1 + m + uniform(0, 3), jb - 1 + n + uniform(0, 3), pick(blocks),
                               pick(blocks), uniform(0, g.rows - 1), uniform(0, g.cols - 1), uniform(0, 2), seed + 1,
                               [&](std::int64_t i, std::int64_t j) { return nan_outside && !within(i, j, ib, jb, m, n); });
  const auto c = make_array<T>(g, context, ic - 1 + m + uniform(0, 3), jc - 1 + n + uniform(0, 3), pick(blocks),
                               pick(blocks), uniform(0, g.rows - 1), uniform(0, g.cols - 1), uniform(0, 2), seed + 2,
                               [&](std::int64_t, std::int64_t) { return beta_kind == 0; });
  auto c_ref = c, c_sw = c;
  // A third of the calls give shardwise DTYPE 2 twins of A, B and C (differential::Passed).
  const bool twins = uniform(0, 2) == 0;
  differential::Passed<T> a_ours(g, rng, twins, a.data, a.desc, ia, ja), b_ours(g, rng, twins, b.data, b.desc, ib, jb),
      c_ours(g, rng, twins, c_sw.data, c_sw.desc, ic, jc);
  sc::PgemmOutcome outcome;
  std::int64_t sent = 0, modeled = 0;
  if (through_library) {
    const auto pblas = routine_in<psymm_function<T>>(routine<T>(hermitian), false, rng);
    const auto ours = routine_in<psymm_function<T>>(routine<T>(hermitian), true, rng);
    if (pblas == nullptr || ours == nullptr) {
      std::printf("FAIL: %s not found (in libscalapack, or the drop-in's)\n", routine<T>(hermitian).c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    pblas(&side, &uplo, &m, &n, &alpha, a.data.data(), &ia, &ja, a.desc, b.data.data(), &ib, &jb, b.desc, &beta,
          c_ref.data.data(), &ic, &jc, c_ref.desc);
    ours(&side, &uplo, &m, &n, &alpha, a_ours.data(), &a_ours.i(), &a_ours.j(), a_ours.desc(), b_ours.data(),
         &b_ours.i(), &b_ours.j(), b_ours.desc(), &beta, c_ours.data(), &c_ours.i(), &c_ours.j(), c_ours.desc());
  } else {
    linked_reference<T>(hermitian)(&side, &uplo, &m, &n, &alpha, a.data.data(), &ia, &ja, a.desc, b.data.data(), &ib,
                                   &jb, b.desc, &beta, c_ref.data.data(), &ic, &jc, c_ref.desc);
    const std::int64_t before = sc::psymm_stats().copy_bytes;
    outcome = sc::psymm<T>(hermitian, side, uplo, m, n, alpha, a_ours.data(), a_ours.i(), a_ours.j(), a_ours.desc(),
                           b_ours.data(), b_ours.i(), b_ours.j(), b_ours.desc(), beta, c_ours.data(), c_ours.i(),
                           c_ours.j(), c_ours.desc(), g);
    sent = sc::psymm_stats().copy_bytes - before;
    modeled = sc::psymm_sent_bytes<T>(side, m, n, alpha, a_ours.i(), a_ours.j(), a_ours.desc(), g);
  }
  const int twin_padding_changed = c_ours.put_back(c_sw.data);
  const Verdict v = compare(g, c, c_ref, c_sw, [&](std::int64_t i, std::int64_t j) { return within(i, j, ic, jc, m, n); });
  int flags[2] = {(outcome.result != sc::PgemmResult::computed) + twin_padding_changed, sent != modeled};
  MPI_Allreduce(MPI_IN_PLACE, flags, 2, MPI_INT, MPI_SUM, g.comm);
  ++tally.cases;
  if (v.fails<T>() || flags[0] != 0 || flags[1] != 0) {
    ++tally.failures;
    int world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    if (world == 0)
      std::printf("FAIL %s grid %s: SIDE %c UPLO %c m %d n %d IA,JA %d,%d IB,JB %d,%d IC,JC %d,%d A MB %d NB %d RSRC "
                  "%d CSRC %d, B MB %d NB %d, C MB %d NB %d, beta kind %d%s: max |diff| %.3g of %.3g, %d NaN "
                  "mismatches or changes outside sub(C), %d processes whose bytes differ from the model%s%s\n",
                  routine<T>(hermitian).c_str(), grid_text.c_str(), side, uplo, m, n, ia, ja, ib, jb, ic, jc,
                  a.desc[4], a.desc[5], a.desc[6], a.desc[7], b.desc[4], b.desc[5], c.desc[4], c.desc[5], beta_kind,
                  twins ? ", DTYPE 2 twins" : "", v.worst, v.largest, v.bad + flags[0], flags[1], outcome.reason.empty() ? "" : ", not covered: ",
                  outcome.reason.c_str());
  }
}

/// Calls out of the rules: refused on every process with the reason, C unchanged.
int check_refusals(const sc::Grid& g, int context, Tally& tally) {
  const auto x = make_array<double>(g, context, 9, 9, 2, 2, 0, 0, 0, 5, [](std::int64_t, std::int64_t) { return false; });
  int refusals = 0;
  auto refused = [&](const char* what, const std::string& expected, char side, char uplo, int m, int context_shift) {
    auto c = x;
    int d[9];
    std::copy(std::begin(x.desc), std::end(x.desc), d);
    d[1] += context_shift;
    const sc::PgemmOutcome o = sc::psymm<double>(false, side, uplo, m, 4, 1.0, x.data.data(), 1, 1, d, x.data.data(),
                                                 1, 1, x.desc, 0.0, c.data.data(), 1, 1, x.desc, g);
    int bad = o.result != sc::PgemmResult::not_covered || o.reason.find(expected) == std::string::npos || c.data != x.data;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    ++tally.cases, ++refusals;
    if (bad) {
      ++tally.failures;
      std::printf("FAIL refusal (%s): '%s'\n", what, o.reason.c_str());
    }
  };
  refused("UPLO", "UPLO is not", 'L', 'X', 4, 0);
  refused("SIDE", "SIDE is not", 'Q', 'U', 4, 0);
  refused("M < 0", "must not be negative", 'L', 'U', -1, 0);
  refused("contexts", "different BLACS contexts", 'R', 'L', 4, 1);
  return refusals;
}

/// PDSYMM with UPLO = 'X' (a 1 x P grid): never returns (PBLAS aborts the job).
int bad_uplo(int size) {
  const auto [context, g] = differential::make_grid(1, size);
  const auto x = make_array<double>(g, context, 9, 9, 2, 2, 0, 0, 0, 5, [](std::int64_t, std::int64_t) { return false; });
  auto c = x;
  const int m = 4, n = 4, one = 1;
  const double alpha = 1, beta = 0;
  pdsymm_("L", "X", &m, &n, &alpha, x.data.data(), &one, &one, x.desc, x.data.data(), &one, &one, x.desc, &beta,
          c.data.data(), &one, &one, x.desc);
  std::printf("test_psymm_scalapack: PDSYMM with UPLO = 'X' returned\n");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const differential::Run run = differential::start(argc, argv);
  const int size = run.size, cases = run.calls;
  if (run.mode == "bad_uplo") return differential::finish(bad_uplo(size));
  through_library = run.through_library;
  Tally tally;
  int refusals = 0;
  for_each_grid([&](const sc::Grid& g, int context, std::mt19937_64& rng, const std::string& grid_text) {
    for (int i = 0; i < cases; ++i) {
      run_case<double>(g, context, rng, false, grid_text, tally);
      run_case<std::complex<double>>(g, context, rng, false, grid_text, tally);
      run_case<std::complex<double>>(g, context, rng, true, grid_text, tally);
      if (i % 4 == 0) {
        run_case<float>(g, context, rng, false, grid_text, tally);
        run_case<std::complex<float>>(g, context, rng, false, grid_text, tally);
        run_case<std::complex<float>>(g, context, rng, true, grid_text, tally);
      }
    }
    if (g.rows == 1 && grid_text.back() == 'R' && !through_library) refusals += check_refusals(g, context, tally);
  });
  if (through_library)
    return differential::finish_through_library(run, tally, shardwise_psymm_fallbacks, "calls", "PBLAS");
  return differential::finish_level3(run, tally, sc::psymm_stats(), refusals);
}
