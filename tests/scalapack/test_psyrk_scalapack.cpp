// shardwise::scalapack::psyrk against the real thing: the same random calls go to PBLAS's
// pssyrk_/pdsyrk_/pcsyrk_/pzsyrk_/pcherk_/pzherk_ (Debian's libscalapack-openmpi) and to
// shardwise, on the same descriptors, and the UPLO triangles of the two sub(C)s must agree
// (1e-12 relative to the largest element for double and complex<double>, 1e-5 for the single
// types); every other element of C (the other triangle of sub(C), the rest of C, LLD padding)
// must be bit for bit as it was.
//
// Every grid of the world's P processes, in row- and column-major order; per grid, random
// calls: UPLO, TRANS (each routine's: 'N', 'T', 'C' for the real types, 'N', 'T' for complex
// p?syrk, 'N', 'C' for p?herk), N and K from 0 to 70, IA, JA, IC, JC from 1 to 6 inside larger
// matrices, MB and NB in {1, 2, 7, 64} per matrix, random RSRC/CSRC, LLD with padding, 1 to 3
// column panels, alpha random, 0 or 1, beta random, 1 or 0 (then the triangle holds NaN, which
// must be overwritten); p?herk's alpha and beta real and C's diagonal with imaginary parts,
// which must come out zero. A is NaN outside sub(A). Then refusals: UPLO = 'X', TRANS = 'X',
// N < 0, different contexts, TRANS = 'C' for pzsyrk: refused on every process, C unchanged.
//
//   mpiexec -n P test_psyrk_scalapack [calls per grid]
//   mpiexec -n P test_psyrk_scalapack bad_uplo   PDSYRK with UPLO = 'X': linked with the
//                                                drop-in, the call must reach PBLAS, which
//                                                reports parameter 1 and aborts the job
//   mpiexec -n P test_psyrk_dropin library [calls per grid]
//       the same random calls through the drop-in's entry points (pdsyrk_, pdsyrk or PDSYRK,
//       ... drawn at random) against PBLAS's own routines, and none handed to PBLAS
#include <mpi.h>

#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "scalapack_differential.hpp"
#include "shardwise/scalapack/psyrk.hpp"

/// The drop-in's count of calls handed to PBLAS (only in a program linked with it).
extern "C" long long shardwise_psyrk_fallbacks(void) __attribute__((weak));

namespace {

using namespace differential;

bool through_library = false;

template <typename T>
struct real_of {
  using type = T;
};
template <typename R>
struct real_of<std::complex<R>> {
  using type = R;
};

/// The routine's alpha and beta: real for p?herk.
template <typename T, bool Hermitian>
using coefficient = std::conditional_t<Hermitian, typename real_of<T>::type, T>;

template <typename T, bool Hermitian>
std::string routine() {
  if constexpr (std::is_same_v<T, float>) return "pssyrk";
  else if constexpr (std::is_same_v<T, double>) return "pdsyrk";
  else if constexpr (std::is_same_v<T, std::complex<float>>) return Hermitian ? "pcherk" : "pcsyrk";
  else return Hermitian ? "pzherk" : "pzsyrk";
}

/// PBLAS's routine for T, called by name.
template <typename T, bool Hermitian>
auto linked_reference() {
  if constexpr (std::is_same_v<T, float>) return pssyrk_;
  else if constexpr (std::is_same_v<T, double>) return pdsyrk_;
  else if constexpr (std::is_same_v<T, std::complex<float>>) {
    if constexpr (Hermitian) return pcherk_;
    else return pcsyrk_;
  } else {
    if constexpr (Hermitian) return pzherk_;
    else return pzsyrk_;
  }
}

template <typename T, bool Hermitian>
using psyrk_function = decltype(linked_reference<T, Hermitian>());

template <typename T, bool Hermitian>
void run_case(const sc::Grid& g, int context, std::mt19937_64& rng, const std::string& grid_text, Tally& tally) {
  using S = coefficient<T, Hermitian>;
  auto pick = [&](std::initializer_list<char> options) {
    return *(options.begin() + static_cast<std::ptrdiff_t>(rng() % options.size()));
  };
  auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1)); };
  const bool complex = shardwise::detail::is_complex_v<T>;
  const char uplo = pick({'U', 'L', 'u', 'l'});
  const char trans = Hermitian ? pick({'N', 'C', 'n', 'c'}) : complex ? pick({'N', 'T', 'n', 't'})
                                                                      : pick({'N', 'T', 'C', 'n', 't', 'c'});
  const bool upper = uplo == 'U' || uplo == 'u', notrans = trans == 'N' || trans == 'n';
  const int n = uniform(0, 6) == 0 ? uniform(0, 2) : uniform(1, 70);
  const int k = uniform(0, 6) == 0 ? uniform(0, 2) : uniform(1, 70);
  const int a_rows = notrans ? n : k, a_cols = notrans ? k : n;
  const int ia = uniform(1, 6), ja = uniform(1, 6), ic = uniform(1, 6), jc = uniform(1, 6);
  const int panels = uniform(1, 3);
  const std::initializer_list<int> blocks = {1, 2, 7, 64};
  auto block = [&] { return *(blocks.begin() + static_cast<std::ptrdiff_t>(rng() % blocks.size())); };
  const int beta_kind = uniform(0, 3);  // 0: zero with NaN in the triangle, 1: one, 2: random, 3: zero
  const S alpha = uniform(0, 9) == 0 ? S(0) : uniform(0, 4) == 0 ? S(1) : random_scalar<S>(rng);
  const S beta = beta_kind == 0 || beta_kind == 3 ? S(0) : beta_kind == 1 ? S(1) : random_scalar<S>(rng);
  const std::uint64_t seed = rng();
  const auto within = [](std::int64_t i, std::int64_t j, int i0, int j0, int rows, int cols) {
    return i >= i0 - 1 && i < i0 - 1 + rows && j >= j0 - 1 && j < j0 - 1 + cols;
  };
  const auto in_triangle = [&](std::int64_t i, std::int64_t j) {
    return within(i, j, ic, jc, n, n) && (upper ? i - ic <= j - jc : i - ic >= j - jc);
  };
  const auto a = make_array<T>(g, context, ia - 1 + a_rows + uniform(0, 3), ja - 1 + a_cols + uniform(0, 3), block(),
                               block(), uniform(0, g.rows - 1), uniform(0, g.cols - 1), uniform(0, 2), seed,
                               [&](std::int64_t i, std::int64_t j) {
                                 return alpha != S(0) && !within(i, j, ia, ja, a_rows, a_cols);
                               });
  const auto c = make_array<T>(g, context, ic - 1 + n + uniform(0, 3), jc - 1 + n + uniform(0, 3), block(), block(),
                               uniform(0, g.rows - 1), uniform(0, g.cols - 1), uniform(0, 2), seed + 1,
                               [&](std::int64_t i, std::int64_t j) { return beta_kind == 0 && in_triangle(i, j); });
  auto c_ref = c, c_sw = c;
  // A third of the calls give shardwise DTYPE 2 twins of A and C (differential::Passed).
  const bool twins = uniform(0, 2) == 0;
  differential::Passed<T> a_ours(g, rng, twins, a.data, a.desc, ia, ja), c_ours(g, rng, twins, c_sw.data, c_sw.desc, ic, jc);
  sc::PgemmOutcome outcome;
  if (through_library) {
    const auto pblas = routine_in<psyrk_function<T, Hermitian>>(routine<T, Hermitian>(), false, rng);
    const auto ours = routine_in<psyrk_function<T, Hermitian>>(routine<T, Hermitian>(), true, rng);
    if (pblas == nullptr || ours == nullptr) {
      std::printf("FAIL: %s not found (in libscalapack, or the drop-in's)\n", routine<T, Hermitian>().c_str());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    pblas(&uplo, &trans, &n, &k, &alpha, a.data.data(), &ia, &ja, a.desc, &beta, c_ref.data.data(), &ic, &jc,
          c_ref.desc);
    ours(&uplo, &trans, &n, &k, &alpha, a_ours.data(), &a_ours.i(), &a_ours.j(), a_ours.desc(), &beta, c_ours.data(),
         &c_ours.i(), &c_ours.j(), c_ours.desc());
  } else {
    linked_reference<T, Hermitian>()(&uplo, &trans, &n, &k, &alpha, a.data.data(), &ia, &ja, a.desc, &beta,
                                     c_ref.data.data(), &ic, &jc, c_ref.desc);
    outcome = sc::psyrk<T>(Hermitian, uplo, trans, n, k, T(alpha), a_ours.data(), a_ours.i(), a_ours.j(),
                           a_ours.desc(), T(beta), c_ours.data(), c_ours.i(), c_ours.j(), c_ours.desc(), g, panels);
  }
  const int twin_padding_changed = c_ours.put_back(c_sw.data);
  const Verdict v = compare(g, c, c_ref, c_sw, in_triangle);
  int not_computed = (outcome.result != sc::PgemmResult::computed) + twin_padding_changed;
  MPI_Allreduce(MPI_IN_PLACE, &not_computed, 1, MPI_INT, MPI_SUM, g.comm);
  ++tally.cases;
  if (v.fails<T>() || not_computed != 0) {
    ++tally.failures;
    int world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world);
    if (world == 0)
      std::printf("FAIL %s grid %s: UPLO %c TRANS %c n %d k %d IA,JA %d,%d IC,JC %d,%d A MB %d NB %d RSRC %d CSRC "
                  "%d, C MB %d NB %d RSRC %d CSRC %d, %d panels, beta kind %d%s: max |diff| %.3g of %.3g, %d NaN "
                  "mismatches or changes outside the triangle%s%s\n",
                  routine<T, Hermitian>().c_str(), grid_text.c_str(), uplo, trans, n, k, ia, ja, ic, jc, a.desc[4],
                  a.desc[5], a.desc[6], a.desc[7], c.desc[4], c.desc[5], c.desc[6], c.desc[7], panels, beta_kind,
                  twins ? ", DTYPE 2 twins" : "", v.worst, v.largest, v.bad + not_computed, outcome.reason.empty() ? "" : ", not covered: ",
                  outcome.reason.c_str());
  }
}

/// Calls out of the rules: refused on every process with the reason, C unchanged.
int check_refusals(const sc::Grid& g, int context, Tally& tally) {
  const auto none = [](std::int64_t, std::int64_t) { return false; };
  const auto x = make_array<double>(g, context, 9, 9, 2, 2, 0, 0, 0, 5, none);
  const auto z = make_array<std::complex<double>>(g, context, 9, 9, 2, 2, 0, 0, 0, 5, none);
  int refusals = 0;
  auto check = [&](const char* what, const std::string& expected, const sc::PgemmOutcome& o, bool unchanged) {
    int bad = o.result != sc::PgemmResult::not_covered || o.reason.find(expected) == std::string::npos || !unchanged;
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    ++tally.cases, ++refusals;
    if (bad) {
      ++tally.failures;
      std::printf("FAIL refusal (%s): '%s'\n", what, o.reason.c_str());
    }
  };
  auto refused = [&](const char* what, const std::string& expected, char uplo, char trans, int n, int context_shift) {
    auto c = x;
    int d[9];
    std::copy(std::begin(x.desc), std::end(x.desc), d);
    d[1] += context_shift;
    check(what, expected,
          sc::psyrk<double>(false, uplo, trans, n, 4, 1.0, x.data.data(), 1, 1, d, 0.0, c.data.data(), 1, 1, x.desc, g),
          c.data == x.data);
  };
  refused("UPLO", "UPLO is not", 'X', 'N', 4, 0);
  refused("TRANS", "TRANS is not", 'L', 'X', 4, 0);
  refused("N < 0", "must not be negative", 'L', 'N', -1, 0);
  refused("contexts", "different BLACS contexts", 'U', 'T', 4, 1);
  auto c = z;
  check("pzsyrk TRANS = 'C'", "TRANS is not",
        sc::psyrk<std::complex<double>>(false, 'U', 'C', 4, 4, 1.0, z.data.data(), 1, 1, z.desc, 0.0, c.data.data(),
                                        1, 1, z.desc, g),
        c.data == z.data);
  return refusals;
}

/// PDSYRK with UPLO = 'X' (a 1 x P grid): never returns (PBLAS aborts the job).
int bad_uplo(int size) {
  const auto [context, g] = differential::make_grid(1, size);
  const auto x = make_array<double>(g, context, 9, 9, 2, 2, 0, 0, 0, 5, [](std::int64_t, std::int64_t) { return false; });
  auto c = x;
  const int n = 4, k = 4, one = 1;
  const double alpha = 1, beta = 0;
  pdsyrk_("X", "N", &n, &k, &alpha, x.data.data(), &one, &one, x.desc, &beta, c.data.data(), &one, &one, x.desc);
  std::printf("test_psyrk_scalapack: PDSYRK with UPLO = 'X' returned\n");
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
      run_case<double, false>(g, context, rng, grid_text, tally);
      run_case<std::complex<double>, false>(g, context, rng, grid_text, tally);
      run_case<std::complex<double>, true>(g, context, rng, grid_text, tally);
      if (i % 4 == 0) {
        run_case<float, false>(g, context, rng, grid_text, tally);
        run_case<std::complex<float>, false>(g, context, rng, grid_text, tally);
        run_case<std::complex<float>, true>(g, context, rng, grid_text, tally);
      }
    }
    if (g.rows == 1 && grid_text.back() == 'R' && !through_library) refusals += check_refusals(g, context, tally);
  });
  if (through_library)
    return differential::finish_through_library(run, tally, shardwise_psyrk_fallbacks, "calls", "PBLAS");
  return differential::finish_level3(run, tally, sc::psyrk_stats(), refusals);
}
