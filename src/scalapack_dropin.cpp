// libshardwise_scalapack: ScaLAPACK's psgemm_, pdgemm_, pcgemm_ and pzgemm_ (also without the
// underscore and in upper case), computed by shardwise (shardwise/scalapack/pgemm.hpp).
// Also PBLAS's p?tran/p?tranu/p?tranc, ScaLAPACK's p?gemr2d, PBLAS's p?symm/p?hemm and
// p?syrk/p?herk (sections at the end of this file).
//
// A program that calls p?gemm is switched over by linking, not by editing it: put this
// library before ScaLAPACK,
//     mpicc prog.c -lshardwise_scalapack -lscalapack-openmpi
// and its calls (and ScaLAPACK's own internal calls to p?gemm) come here. What shardwise does
// not compute goes to the next p?gemm in link order (ScaLAPACK's, through dlsym(RTLD_NEXT)),
// and is counted: arguments out of ScaLAPACK's rules (so that ScaLAPACK reports them as it
// always has), a call on a process outside C's grid (an invalid DESCC context: ScaLAPACK
// reports it and aborts the job, INFO -1002 or -1902), descriptors of a type other than dense block-cyclic, A, B and C on different
// contexts, arguments that differ across ranks, a BLACS whose grid communicator is numbered
// otherwise, no plan within the memory budget, an operand of more than 2^31 - 1 elements.
//
// A call that one process holds entirely (sub(A), sub(B) and sub(C) on the same process, e.g.
// sub(C) a single block) is computed by that process alone, with no agreement across the ranks
// (each decides from the arguments, which ScaLAPACK requires to be the same everywhere), as
// PDGEMM does; the report counts these calls as "local". A call that needs communication
// takes one small all-reduce before its own: the ranks' arguments agreed (ScaLAPACK checks
// nothing across ranks; this is what refuses arguments that differ, with one reason
// everywhere) together with each way's modeled cost, which decides the way per call (in place,
// partial products summed for TRANSA/TRANSB 'T'/'C', or redistributed; see pgemm.hpp).
//
// Environment:
//   SHARDWISE_PGEMM_REPORT=1       at exit, rank 0 of MPI_COMM_WORLD prints what its calls did
//   SHARDWISE_PGEMM_BUDGET_MIB=N   the plans' memory per rank (default: see pgemm.hpp)
//   SHARDWISE_PGEMM_AGREEMENT=once_per_shape   the agreement at a call shape's first call only
//                                  (ScaLAPACK's contract: the same arguments on every process;
//                                  the default, every_call, refuses arguments that differ)
#include <dlfcn.h>

#include <complex>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "shardwise/scalapack/blacs.hpp"
#include "shardwise/scalapack/pgemm.hpp"
#include "shardwise/scalapack/pgemr2d.hpp"
#include "shardwise/scalapack/psymm.hpp"
#include "shardwise/scalapack/psyrk.hpp"
#include "shardwise/scalapack/ptran.hpp"
// The entry points' prototypes: a definition below that takes other types does not compile.
#include "shardwise/scalapack/prototypes.h"

namespace {

namespace sc = shardwise::scalapack;

template <typename T>
using pgemm_function = void (*)(const char*, const char*, const int*, const int*, const int*, const T*, const T*,
                                const int*, const int*, const int*, const T*, const int*, const int*, const int*,
                                const T*, T*, const int*, const int*, const int*);

std::int64_t fallbacks = 0;
int report_rank = -1;  // this process's rank in MPI_COMM_WORLD, once a call has come

void report() {
  if (report_rank != 0) return;
  const sc::PgemmStats s = sc::pgemm_stats();
  std::fprintf(stderr,
               "shardwise p?gemm (rank 0): %lld calls: %lld planned by shardwise, %lld without a product, %lld handed "
               "to ScaLAPACK; %lld local (one process holds the whole product: no communication); %.1f MiB "
               "redistributed (%lld calls with processes relabeled), %.1f MiB in plans; %lld without the "
               "agreement%s\n",
               static_cast<long long>(s.calls), static_cast<long long>(s.planned),
               static_cast<long long>(s.without_product), static_cast<long long>(fallbacks),
               static_cast<long long>(s.local),
               static_cast<double>(s.redistributed_bytes) / (1 << 20), static_cast<long long>(s.relabeled),
               static_cast<double>(s.plan_bytes) / (1 << 20),
               static_cast<long long>(s.agreements_skipped),
               sc::detail::drop_in_machine() ? "; plans by predicted time on SHARDWISE_PGEMM_MACHINE" : "");
}

void first_call() {
  static const bool once = [] {
    const char* env = std::getenv("SHARDWISE_PGEMM_REPORT");
    if (env != nullptr && *env != '\0' && *env != '0') {
      MPI_Comm_rank(MPI_COMM_WORLD, &report_rank);
      std::atexit(report);
    }
    return true;
  }();
  static_cast<void>(once);
}

template <typename T>
void dropin(const char* next_name, const char* transa, const char* transb, const int* m, const int* n, const int* k,
            const T* alpha, const T* a, const int* ia, const int* ja, const int* desca, const T* b, const int* ib,
            const int* jb, const int* descb, const T* beta, T* c, const int* ic, const int* jc, const int* descc) {
  first_call();
  const int context = descc[1];
  std::string reason;
  try {
    // C's context is no grid this process is in: -1 or -2, a grid exited, or -1 from
    // BLACS_GRIDINIT on a process outside the grid. ScaLAPACK's p?gemm checks the contexts
    // before anything else (even M = 0) and does not return: PBLAS prints the error and aborts
    // every process (Cblacs_abort) with INFO = -1002 when A's context is invalid (so on a
    // process outside the grid) or -1902 when C's is not A's. The call goes to ScaLAPACK, which
    // does exactly that.
    const bool in_grid = sc::in_grid(context);
    const std::optional<sc::Grid> grid = in_grid ? sc::grid_of(context) : std::nullopt;
    if (!in_grid) {
      reason = "this process is not in the grid of C's BLACS context (DESCC's CTXT_)";
    } else if (!grid) {
      reason = "the BLACS grid's communicator is not numbered row-major";
    } else {
      const sc::PgemmOutcome outcome = sc::pgemm<T>(*transa, *transb, *m, *n, *k, *alpha, a, *ia, *ja, desca, b, *ib,
                                                     *jb, descb, *beta, c, *ic, *jc, descc, *grid);
      if (outcome.result == sc::PgemmResult::computed) return;
      reason = outcome.reason;
    }
  } catch (const std::exception& e) {
    // A failure in the middle of a collective call: no way back to a Fortran caller.
    std::fprintf(stderr, "shardwise %s: %s\n", next_name, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  ++fallbacks;
  static const auto next = reinterpret_cast<pgemm_function<T>>(dlsym(RTLD_NEXT, next_name));
  if (next == nullptr) {
    std::fprintf(stderr, "shardwise %s: %s, and no ScaLAPACK %s follows this library in link order to hand it to\n",
                 next_name, reason.c_str(), next_name);
    return;
  }
  next(transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc, descc);
}

}  // namespace

// The Fortran names (PBLAS's C routines take no hidden string lengths), then the plain and
// upper-case spellings some compilers and codes use.
#define SHARDWISE_PGEMM_ENTRY(name, T, next)                                                                         \
  extern "C" void name(const char* transa, const char* transb, const int* m, const int* n, const int* k,            \
                       const T* alpha, const T* a, const int* ia, const int* ja, const int* desca, const T* b,      \
                       const int* ib, const int* jb, const int* descb, const T* beta, T* c, const int* ic,          \
                       const int* jc, const int* descc) {                                                           \
    dropin<T>(next, transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc, descc); \
  }

SHARDWISE_PGEMM_ENTRY(psgemm_, float, "psgemm_")
SHARDWISE_PGEMM_ENTRY(pdgemm_, double, "pdgemm_")
SHARDWISE_PGEMM_ENTRY(pcgemm_, std::complex<float>, "pcgemm_")
SHARDWISE_PGEMM_ENTRY(pzgemm_, std::complex<double>, "pzgemm_")
SHARDWISE_PGEMM_ENTRY(psgemm, float, "psgemm_")
SHARDWISE_PGEMM_ENTRY(pdgemm, double, "pdgemm_")
SHARDWISE_PGEMM_ENTRY(pcgemm, std::complex<float>, "pcgemm_")
SHARDWISE_PGEMM_ENTRY(pzgemm, std::complex<double>, "pzgemm_")
SHARDWISE_PGEMM_ENTRY(PSGEMM, float, "psgemm_")
SHARDWISE_PGEMM_ENTRY(PDGEMM, double, "pdgemm_")
SHARDWISE_PGEMM_ENTRY(PCGEMM, std::complex<float>, "pcgemm_")
SHARDWISE_PGEMM_ENTRY(PZGEMM, std::complex<double>, "pzgemm_")

/// Calls of this process handed to ScaLAPACK's own routine (for tests and tools).
extern "C" long long shardwise_pgemm_fallbacks(void) { return static_cast<long long>(fallbacks); }

// ---- p?tran, p?tranu, p?tranc (shardwise/scalapack/ptran.hpp) --------------------------------
// sub(C) := beta sub(C) + alpha op(sub(A)) by one redistribution. Handed to the next p?tran in
// link order (PBLAS's, which reports and aborts as it always has), and counted: a process
// outside A's grid (PBLAS: parameter 702, "context"), a grid communicator numbered otherwise,
// and what ptran() refuses (arguments out of PBLAS's rules or differing across processes).
// SHARDWISE_PGEMM_REPORT=1 prints a sibling line per routine that was called.
namespace {

template <typename T>
using ptran_function = void (*)(const int*, const int*, const T*, const T*, const int*, const int*, const int*,
                                const T*, T*, const int*, const int*, const int*);

std::int64_t ptran_fallbacks = 0;
std::int64_t pgemr2d_fallbacks = 0;
int redistribution_report_rank = -1;

void report_redistribution(const char* routines, const sc::RedistributionStats& s, std::int64_t handed) {
  if (s.calls == 0) return;
  std::fprintf(stderr,
               "shardwise %s (rank 0): %lld calls: %lld redistributed by shardwise, %lld without communication, "
               "%lld handed to ScaLAPACK; %.1f MiB sent in %lld messages\n",
               routines, static_cast<long long>(s.calls), static_cast<long long>(s.redistributed),
               static_cast<long long>(s.without_communication), static_cast<long long>(handed),
               static_cast<double>(s.sent_bytes) / (1 << 20), static_cast<long long>(s.messages));
}

void report_redistributions() {
  if (redistribution_report_rank != 0) return;
  sc::RedistributionStats tran = sc::ptran_stats();
  tran.calls += ptran_fallbacks - tran.not_covered;  // calls handed over before ptran() saw them
  report_redistribution("p?tran", tran, ptran_fallbacks);
  report_redistribution("p?gemr2d", sc::pgemr2d_stats(), pgemr2d_fallbacks);
}

void first_redistribution_call() {
  static const bool once = [] {
    const char* env = std::getenv("SHARDWISE_PGEMM_REPORT");
    if (env != nullptr && *env != '\0' && *env != '0') {
      MPI_Comm_rank(MPI_COMM_WORLD, &redistribution_report_rank);
      std::atexit(report_redistributions);
    }
    return true;
  }();
  static_cast<void>(once);
}

/// ScaLAPACK's own routine `name`, the next in link order; null (and a message) when none follows.
template <typename Function>
Function next_routine(const char* name, const std::string& reason) {
  const auto next = reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
  if (next == nullptr)
    std::fprintf(stderr, "shardwise %s: %s, and no ScaLAPACK %s follows this library in link order to hand it to\n",
                 name, reason.c_str(), name);
  return next;
}

template <typename T>
void ptran_dropin(const char* next_name, bool conjugate, const int* m, const int* n, const T* alpha, const T* a,
                  const int* ia, const int* ja, const int* desca, const T* beta, T* c, const int* ic, const int* jc,
                  const int* descc) {
  first_redistribution_call();
  std::string reason;
  try {
    // PBLAS checks A's context first and aborts the job when this process is not in its grid.
    const int context = desca[1];
    const std::optional<sc::Grid> grid = sc::in_grid(context) ? sc::grid_of(context) : std::nullopt;
    if (!sc::in_grid(context)) {
      reason = "this process is not in the grid of A's BLACS context (DESCA's CTXT_)";
    } else if (!grid) {
      reason = "the BLACS grid's communicator is not numbered row-major";
    } else {
      const sc::PgemmOutcome outcome =
          sc::ptran<T>(conjugate, *m, *n, *alpha, a, *ia, *ja, desca, *beta, c, *ic, *jc, descc, *grid);
      if (outcome.result == sc::PgemmResult::computed) return;
      reason = outcome.reason;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardwise %s: %s\n", next_name, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  ++ptran_fallbacks;
  static const auto next = next_routine<ptran_function<T>>(next_name, reason);
  if (next != nullptr) next(m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc);
}

}  // namespace

#define SHARDWISE_PTRAN_ENTRY(name, T, next, conjugate)                                                               \
  extern "C" void name(const int* m, const int* n, const T* alpha, const T* a, const int* ia, const int* ja,         \
                       const int* desca, const T* beta, T* c, const int* ic, const int* jc, const int* descc) {      \
    ptran_dropin<T>(next, conjugate, m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc);                         \
  }
#define SHARDWISE_PTRAN_ENTRIES(lower, upper, T, conjugate)        \
  SHARDWISE_PTRAN_ENTRY(lower##_, T, #lower "_", conjugate)        \
  SHARDWISE_PTRAN_ENTRY(lower, T, #lower "_", conjugate)           \
  SHARDWISE_PTRAN_ENTRY(upper, T, #lower "_", conjugate)

SHARDWISE_PTRAN_ENTRIES(pstran, PSTRAN, float, false)
SHARDWISE_PTRAN_ENTRIES(pdtran, PDTRAN, double, false)
SHARDWISE_PTRAN_ENTRIES(pctranu, PCTRANU, std::complex<float>, false)
SHARDWISE_PTRAN_ENTRIES(pztranu, PZTRANU, std::complex<double>, false)
SHARDWISE_PTRAN_ENTRIES(pctranc, PCTRANC, std::complex<float>, true)
SHARDWISE_PTRAN_ENTRIES(pztranc, PZTRANC, std::complex<double>, true)

/// p?tran calls of this process handed to ScaLAPACK's own routine (for tests and tools).
extern "C" long long shardwise_ptran_fallbacks(void) { return static_cast<long long>(ptran_fallbacks); }

// ---- p?gemr2d (shardwise/scalapack/pgemr2d.hpp) ------------------------------------------------
// sub(B) := sub(A) between two layouts, possibly on two grids, by one redistribution over
// ICTXT's communicator. Handed to the next p?gemr2d in link order (ScaLAPACK's REDIST, which
// reports bad arguments as it always has: "xxMR2D: ..." and exit), and counted: whatever
// pgemr2d() refuses (see there), including a process outside ICTXT's grid or an ICTXT without an
// MPI communicator of its grid.
namespace {

template <typename T>
using pgemr2d_function = void (*)(const int*, const int*, const T*, const int*, const int*, const int*, T*,
                                  const int*, const int*, const int*, const int*);

template <typename T>
void pgemr2d_dropin(const char* next_name, const int* m, const int* n, const T* a, const int* ia, const int* ja,
                    const int* desca, T* b, const int* ib, const int* jb, const int* descb, const int* ictxt) {
  first_redistribution_call();
  std::string reason;
  try {
    const sc::PgemmOutcome outcome = sc::pgemr2d<T>(*m, *n, a, *ia, *ja, desca, b, *ib, *jb, descb, *ictxt);
    if (outcome.result == sc::PgemmResult::computed) return;
    reason = outcome.reason;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardwise %s: %s\n", next_name, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  ++pgemr2d_fallbacks;
  static const auto next = next_routine<pgemr2d_function<T>>(next_name, reason);
  if (next != nullptr) next(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt);
}

}  // namespace

#define SHARDWISE_PGEMR2D_ENTRY(name, T, next)                                                                      \
  extern "C" void name(const int* m, const int* n, const T* a, const int* ia, const int* ja, const int* desca, T* b, \
                       const int* ib, const int* jb, const int* descb, const int* ictxt) {                          \
    pgemr2d_dropin<T>(next, m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt);                                      \
  }
#define SHARDWISE_PGEMR2D_ENTRIES(lower, upper, T)   \
  SHARDWISE_PGEMR2D_ENTRY(lower##_, T, #lower "_")   \
  SHARDWISE_PGEMR2D_ENTRY(lower, T, #lower "_")      \
  SHARDWISE_PGEMR2D_ENTRY(upper, T, #lower "_")

SHARDWISE_PGEMR2D_ENTRIES(psgemr2d, PSGEMR2D, float)
SHARDWISE_PGEMR2D_ENTRIES(pdgemr2d, PDGEMR2D, double)
SHARDWISE_PGEMR2D_ENTRIES(pcgemr2d, PCGEMR2D, std::complex<float>)
SHARDWISE_PGEMR2D_ENTRIES(pzgemr2d, PZGEMR2D, std::complex<double>)

/// p?gemr2d calls of this process handed to ScaLAPACK's own routine (for tests and tools).
extern "C" long long shardwise_pgemr2d_fallbacks(void) { return static_cast<long long>(pgemr2d_fallbacks); }

// ---- p?symm, p?hemm (shardwise/scalapack/psymm.hpp) --------------------------------------------
// sub(C) := alpha sub(A) sub(B) + beta sub(C) (or sub(B) sub(A)), sub(A) symmetric or
// Hermitian: its triangle expanded into a full workspace, then pgemm(). Handed to the next
// routine in link order (PBLAS's, which reports and aborts as it always has), and counted: a
// process outside A's grid (PBLAS checks A's context first), a grid communicator numbered
// otherwise, and what psymm() refuses. SHARDWISE_PGEMM_REPORT=1 prints a line for the routines
// (their pgemm() calls count in the p?gemm line too).
namespace {

template <typename T>
using psymm_function = void (*)(const char*, const char*, const int*, const int*, const T*, const T*, const int*,
                                const int*, const int*, const T*, const int*, const int*, const int*, const T*, T*,
                                const int*, const int*, const int*);

std::int64_t psymm_fallbacks = 0;
std::int64_t psyrk_fallbacks = 0;
int level3_report_rank = -1;

void report_level3(const char* routines, const sc::Level3Stats& s, std::int64_t handed) {
  if (s.calls == 0) return;
  std::fprintf(stderr,
               "shardwise %s (rank 0): %lld calls: %lld computed by shardwise (%lld p?gemm calls, %.3g GFLOP), %lld "
               "without communication, %lld handed to ScaLAPACK; %.1f MiB sent (%.1f MiB in its own copies, %.1f "
               "MiB in p?gemm)\n",
               routines, static_cast<long long>(s.calls), static_cast<long long>(s.computed),
               static_cast<long long>(s.gemm_calls), s.gemm_flops / 1e9,
               static_cast<long long>(s.without_communication), static_cast<long long>(handed),
               static_cast<double>(s.copy_bytes + s.gemm_bytes) / (1 << 20),
               static_cast<double>(s.copy_bytes) / (1 << 20), static_cast<double>(s.gemm_bytes) / (1 << 20));
}

/// A Level3Stats with the calls handed over before the routine saw them counted in.
sc::Level3Stats with_early_fallbacks(sc::Level3Stats s, std::int64_t handed) {
  s.calls += handed - s.not_covered;
  return s;
}

void report_level3_routines() {
  if (level3_report_rank != 0) return;
  report_level3("p?symm/p?hemm", with_early_fallbacks(sc::psymm_stats(), psymm_fallbacks), psymm_fallbacks);
  report_level3("p?syrk/p?herk", with_early_fallbacks(sc::psyrk_stats(), psyrk_fallbacks), psyrk_fallbacks);
}

void first_level3_call() {
  static const bool once = [] {
    const char* env = std::getenv("SHARDWISE_PGEMM_REPORT");
    if (env != nullptr && *env != '\0' && *env != '0') {
      MPI_Comm_rank(MPI_COMM_WORLD, &level3_report_rank);
      std::atexit(report_level3_routines);
    }
    return true;
  }();
  static_cast<void>(once);
}

/// The grid of A's context for a level-3 call (PBLAS checks A's context first), or why not.
std::optional<sc::Grid> level3_grid(const int* desca, std::string& reason) {
  const int context = desca[1];
  if (!sc::in_grid(context)) {
    reason = "this process is not in the grid of A's BLACS context (DESCA's CTXT_)";
    return std::nullopt;
  }
  std::optional<sc::Grid> grid = sc::grid_of(context);
  if (!grid) reason = "the BLACS grid's communicator is not numbered row-major";
  return grid;
}

template <typename T>
void psymm_dropin(const char* next_name, bool hermitian, const char* side, const char* uplo, const int* m,
                  const int* n, const T* alpha, const T* a, const int* ia, const int* ja, const int* desca, const T* b,
                  const int* ib, const int* jb, const int* descb, const T* beta, T* c, const int* ic, const int* jc,
                  const int* descc) {
  first_call();  // the p?gemm line too: psymm() calls pgemm()
  first_level3_call();
  std::string reason;
  try {
    if (const std::optional<sc::Grid> grid = level3_grid(desca, reason)) {
      const sc::PgemmOutcome outcome = sc::psymm<T>(hermitian, *side, *uplo, *m, *n, *alpha, a, *ia, *ja, desca, b,
                                                     *ib, *jb, descb, *beta, c, *ic, *jc, descc, *grid);
      if (outcome.result == sc::PgemmResult::computed) return;
      reason = outcome.reason;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardwise %s: %s\n", next_name, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  ++psymm_fallbacks;
  static const auto next = next_routine<psymm_function<T>>(next_name, reason);
  if (next != nullptr) next(side, uplo, m, n, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc, descc);
}

}  // namespace

#define SHARDWISE_PSYMM_ENTRY(name, T, next, hermitian)                                                             \
  extern "C" void name(const char* side, const char* uplo, const int* m, const int* n, const T* alpha, const T* a, \
                       const int* ia, const int* ja, const int* desca, const T* b, const int* ib, const int* jb,  \
                       const int* descb, const T* beta, T* c, const int* ic, const int* jc, const int* descc) {   \
    psymm_dropin<T>(next, hermitian, side, uplo, m, n, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c, ic, jc, \
                    descc);                                                                                        \
  }
#define SHARDWISE_PSYMM_ENTRIES(lower, upper, T, hermitian) \
  SHARDWISE_PSYMM_ENTRY(lower##_, T, #lower "_", hermitian) \
  SHARDWISE_PSYMM_ENTRY(lower, T, #lower "_", hermitian)    \
  SHARDWISE_PSYMM_ENTRY(upper, T, #lower "_", hermitian)

SHARDWISE_PSYMM_ENTRIES(pssymm, PSSYMM, float, false)
SHARDWISE_PSYMM_ENTRIES(pdsymm, PDSYMM, double, false)
SHARDWISE_PSYMM_ENTRIES(pcsymm, PCSYMM, std::complex<float>, false)
SHARDWISE_PSYMM_ENTRIES(pzsymm, PZSYMM, std::complex<double>, false)
SHARDWISE_PSYMM_ENTRIES(pchemm, PCHEMM, std::complex<float>, true)
SHARDWISE_PSYMM_ENTRIES(pzhemm, PZHEMM, std::complex<double>, true)

/// p?symm/p?hemm calls of this process handed to ScaLAPACK's own routine (for tests and tools).
extern "C" long long shardwise_psymm_fallbacks(void) { return static_cast<long long>(psymm_fallbacks); }

// ---- p?syrk, p?herk (shardwise/scalapack/psyrk.hpp) ---------------------------------------------
// The UPLO triangle of sub(C) := alpha op(sub(A)) op(sub(A))^T (^H) + beta sub(C) by pgemm() on
// column panels into a workspace, then combined into the triangle. Handed over and counted as
// p?symm.
namespace {

/// S: alpha's and beta's type (real for p?herk).
template <typename T, typename S>
using psyrk_function = void (*)(const char*, const char*, const int*, const int*, const S*, const T*, const int*,
                                const int*, const int*, const S*, T*, const int*, const int*, const int*);

template <typename T, typename S>
void psyrk_dropin(const char* next_name, bool hermitian, const char* uplo, const char* trans, const int* n,
                  const int* k, const S* alpha, const T* a, const int* ia, const int* ja, const int* desca,
                  const S* beta, T* c, const int* ic, const int* jc, const int* descc) {
  first_call();
  first_level3_call();
  std::string reason;
  try {
    if (const std::optional<sc::Grid> grid = level3_grid(desca, reason)) {
      const sc::PgemmOutcome outcome = sc::psyrk<T>(hermitian, *uplo, *trans, *n, *k, T(*alpha), a, *ia, *ja, desca,
                                                     T(*beta), c, *ic, *jc, descc, *grid);
      if (outcome.result == sc::PgemmResult::computed) return;
      reason = outcome.reason;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardwise %s: %s\n", next_name, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  ++psyrk_fallbacks;
  static const auto next = next_routine<psyrk_function<T, S>>(next_name, reason);
  if (next != nullptr) next(uplo, trans, n, k, alpha, a, ia, ja, desca, beta, c, ic, jc, descc);
}

}  // namespace

#define SHARDWISE_PSYRK_ENTRY(name, T, S, next, hermitian)                                                           \
  extern "C" void name(const char* uplo, const char* trans, const int* n, const int* k, const S* alpha, const T* a, \
                       const int* ia, const int* ja, const int* desca, const S* beta, T* c, const int* ic,          \
                       const int* jc, const int* descc) {                                                           \
    psyrk_dropin<T, S>(next, hermitian, uplo, trans, n, k, alpha, a, ia, ja, desca, beta, c, ic, jc, descc);        \
  }
#define SHARDWISE_PSYRK_ENTRIES(lower, upper, T, S, hermitian) \
  SHARDWISE_PSYRK_ENTRY(lower##_, T, S, #lower "_", hermitian) \
  SHARDWISE_PSYRK_ENTRY(lower, T, S, #lower "_", hermitian)    \
  SHARDWISE_PSYRK_ENTRY(upper, T, S, #lower "_", hermitian)

SHARDWISE_PSYRK_ENTRIES(pssyrk, PSSYRK, float, float, false)
SHARDWISE_PSYRK_ENTRIES(pdsyrk, PDSYRK, double, double, false)
SHARDWISE_PSYRK_ENTRIES(pcsyrk, PCSYRK, std::complex<float>, std::complex<float>, false)
SHARDWISE_PSYRK_ENTRIES(pzsyrk, PZSYRK, std::complex<double>, std::complex<double>, false)
SHARDWISE_PSYRK_ENTRIES(pcherk, PCHERK, std::complex<float>, float, true)
SHARDWISE_PSYRK_ENTRIES(pzherk, PZHERK, std::complex<double>, double, true)

/// p?syrk/p?herk calls of this process handed to ScaLAPACK's own routine (for tests and tools).
extern "C" long long shardwise_psyrk_fallbacks(void) { return static_cast<long long>(psyrk_fallbacks); }
