/* Every precision of the drop-in through the library's exported entry points: psgemm_, pdgemm_,
 * pcgemm_ and pzgemm_, the plain spellings pdgemm and pcgemm and the upper-case PDGEMM and PZGEMM,
 * called as a C program calls them, on 2 x 1 and 1 x 2 grids (and 2 x 2 from 4 ranks; ranks
 * outside a grid take no part), small uneven shapes with submatrices, transposes, alpha and beta.
 * Each result is checked on every rank against the product computed serially from the same
 * global elements. The tests build it twice: with libshardwise_scalapack before ScaLAPACK (and
 * SHARDWISE_PGEMM_REPORT=1, so rank 0 says who computed the calls: all of them by shardwise), and
 * with ScaLAPACK alone (-DSCALAPACK_NAMES_ONLY: ScaLAPACK exports only the underscored names, so
 * the other spellings call those), which checks the serial reference against ScaLAPACK itself.
 *
 *   mpiexec -n P pgemm_entry_points      (P >= 2)
 */
#include <complex.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "shardwise/scalapack/prototypes.h"

#ifdef SCALAPACK_NAMES_ONLY
#define pdgemm pdgemm_
#define pcgemm pcgemm_
#define PDGEMM pdgemm_
#define PZGEMM pzgemm_
#endif

/* The drop-in's other spellings; the underscored names are the header's (with SCALAPACK_NAMES_ONLY
 * these name them too). */
#define PGEMM_PROTOTYPE(name, T)                                                                                     \
  void name(const char* transa, const char* transb, const int* m, const int* n, const int* k, const T* alpha,        \
            const T* a, const int* ia, const int* ja, const int* desca, const T* b, const int* ib, const int* jb,    \
            const int* descb, const T* beta, T* c, const int* ic, const int* jc, const int* descc);
PGEMM_PROTOTYPE(pdgemm, double)
PGEMM_PROTOTYPE(pcgemm, float complex)
PGEMM_PROTOTYPE(PDGEMM, double)
PGEMM_PROTOTYPE(PZGEMM, double complex)

/* The entry points called, and the scalar type each takes (0 float, 1 double, 2 float complex,
 * 3 double complex). */
enum { ENTRY_psgemm_, ENTRY_pdgemm_, ENTRY_pcgemm_, ENTRY_pzgemm_, ENTRY_pdgemm, ENTRY_pcgemm, ENTRY_PDGEMM, ENTRY_PZGEMM,
       ENTRIES };
static const char* const entry_name[ENTRIES] = {"psgemm_", "pdgemm_", "pcgemm_", "pzgemm_",
                                                "pdgemm",  "pcgemm",  "PDGEMM",  "PZGEMM"};
static const int entry_type[ENTRIES] = {0, 1, 2, 3, 1, 2, 1, 3};
static const size_t type_size[4] = {sizeof(float), sizeof(double), sizeof(float complex), sizeof(double complex)};

/* Element (i, j) (0-based, global) of matrix `which`. */
static double complex element(int which, int i, int j, int complex_valued) {
  const double re = (double)((i * 13 + j * 7 + which * 5) % 17 - 8) / 8.0;
  const double im = complex_valued ? (double)((i * 3 + j * 11 + which) % 13 - 6) / 6.0 : 0.0;
  return re + im * I;
}

typedef struct {
  int desc[9];
  int local_rows, local_cols, mb, nb, type;
  void* data;
} Array;

static int global_index(int local, int nb, int proc, int nprocs) { return (local / nb * nprocs + proc) * nb + local % nb; }

static void store(void* data, int type, size_t at, double complex v) {
  switch (type) {
    case 0: ((float*)data)[at] = (float)creal(v); break;
    case 1: ((double*)data)[at] = creal(v); break;
    case 2: ((float complex*)data)[at] = (float complex)v; break;
    default: ((double complex*)data)[at] = v; break;
  }
}

static double complex load(const void* data, int type, size_t at) {
  switch (type) {
    case 0: return ((const float*)data)[at];
    case 1: return ((const double*)data)[at];
    case 2: return ((const float complex*)data)[at];
    default: return ((const double complex*)data)[at];
  }
}

static Array make(int context, int which, int rows, int cols, int mb, int nb, int type) {
  Array x;
  int nprow, npcol, myrow, mycol, zero = 0, info;
  Cblacs_gridinfo(context, &nprow, &npcol, &myrow, &mycol);
  x.mb = mb, x.nb = nb, x.type = type;
  x.local_rows = numroc_(&rows, &mb, &myrow, &zero, &nprow);
  x.local_cols = numroc_(&cols, &nb, &mycol, &zero, &npcol);
  int lld = x.local_rows > 1 ? x.local_rows : 1;
  descinit_(x.desc, &rows, &cols, &mb, &nb, &zero, &zero, &context, &lld, &info);
  x.data = malloc(type_size[type] * (size_t)lld * (size_t)(x.local_cols > 1 ? x.local_cols : 1));
  for (int lj = 0; lj < x.local_cols; ++lj)
    for (int li = 0; li < x.local_rows; ++li)
      store(x.data, type, (size_t)lj * (size_t)lld + (size_t)li,
            element(which, global_index(li, mb, myrow, nprow), global_index(lj, nb, mycol, npcol), type >= 2));
  return x;
}

typedef struct {
  char ta, tb;
  int m, n, k, ia, ja, ib, jb, ic, jc, mb, nb;
  double alpha, beta;
} Case;

/* The largest error of this rank's elements of C after sub(C) = alpha op(sub(A)) op(sub(B)) + beta sub(C),
 * computed serially from the global elements (C's elements outside sub(C) must be unchanged). */
static double check(int context, const Array* c, const Case* t, double complex alpha, double complex beta) {
  int nprow, npcol, myrow, mycol;
  Cblacs_gridinfo(context, &nprow, &npcol, &myrow, &mycol);
  const int lld = c->desc[8], complex_valued = c->type >= 2;
  double worst = 0;
  for (int lj = 0; lj < c->local_cols; ++lj)
    for (int li = 0; li < c->local_rows; ++li) {
      const int gi = global_index(li, c->mb, myrow, nprow), gj = global_index(lj, c->nb, mycol, npcol);
      const double complex before = element(2, gi, gj, complex_valued);
      double complex want = before;
      if (gi >= t->ic - 1 && gi < t->ic - 1 + t->m && gj >= t->jc - 1 && gj < t->jc - 1 + t->n) {
        const int i = gi - (t->ic - 1), j = gj - (t->jc - 1);
        double complex sum = 0;
        for (int l = 0; l < t->k; ++l) {
          double complex x = t->ta == 'N' ? element(0, t->ia - 1 + i, t->ja - 1 + l, complex_valued)
                                          : element(0, t->ia - 1 + l, t->ja - 1 + i, complex_valued);
          double complex y = t->tb == 'N' ? element(1, t->ib - 1 + l, t->jb - 1 + j, complex_valued)
                                          : element(1, t->ib - 1 + j, t->jb - 1 + l, complex_valued);
          if (t->ta == 'C') x = conj(x);
          if (t->tb == 'C') y = conj(y);
          sum += x * y;
        }
        want = alpha * sum + beta * before;
      }
      const double error = cabs(load(c->data, c->type, (size_t)lj * (size_t)lld + (size_t)li) - want);
      if (error > worst) worst = error;
    }
  return worst;
}

/* One call through `entry` on this rank's part of the grid. */
static void call(int entry, const Case* t, double complex alpha, double complex beta, const Array* a, const Array* b,
                 Array* c) {
  const float sa = (float)creal(alpha), sb = (float)creal(beta);
  const double da = creal(alpha), db = creal(beta);
  const float complex ca = (float complex)alpha, cb = (float complex)beta;
  const double complex za = alpha, zb = beta;
#define ARGS(A, B) &t->ta, &t->tb, &t->m, &t->n, &t->k, A, a->data, &t->ia, &t->ja, a->desc, b->data, &t->ib, &t->jb, \
                   b->desc, B, c->data, &t->ic, &t->jc, c->desc
  switch (entry) {
    case ENTRY_psgemm_: psgemm_(ARGS(&sa, &sb)); break;
    case ENTRY_pdgemm_: pdgemm_(ARGS(&da, &db)); break;
    case ENTRY_pcgemm_: pcgemm_(ARGS(&ca, &cb)); break;
    case ENTRY_pzgemm_: pzgemm_(ARGS(&za, &zb)); break;
    case ENTRY_pdgemm: pdgemm(ARGS(&da, &db)); break;
    case ENTRY_pcgemm: pcgemm(ARGS(&ca, &cb)); break;
    case ENTRY_PDGEMM: PDGEMM(ARGS(&da, &db)); break;
    default: PZGEMM(ARGS(&za, &zb)); break;
  }
#undef ARGS
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, calls = 0, wrong = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    if (rank == 0) printf("pgemm_entry_points: run it on 2 ranks or more\n");
    MPI_Finalize();
    return 1;
  }
  /* Small uneven shapes: blocks that do not divide the extents, submatrices, op 'T' and 'C'. */
  const Case cases[] = {
      {'N', 'N', 13, 7, 10, 1, 1, 1, 1, 1, 1, 3, 2, 1.0, 0.0},
      {'T', 'C', 9, 11, 6, 2, 3, 1, 2, 3, 1, 2, 5, -0.5, 1.5},
  };
  const struct { int rows, cols; const char* order; } grids[] = {{2, 1, "R"}, {1, 2, "C"}, {2, 2, "R"}};
  const int grid_count = size >= 4 ? 3 : 2;
  for (int g = 0; g < grid_count; ++g) {
    int context;
    Cblacs_get(0, 0, &context);
    Cblacs_gridinit(&context, grids[g].order, grids[g].rows, grids[g].cols);
    const int in_grid = context >= 0;  /* BLACS gives the ranks outside the grid no context */
    for (int entry = 0; entry < ENTRIES; ++entry)
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        const Case* t = &cases[c];
        const int type = entry_type[entry], complex_valued = type >= 2;
        Case call_case = *t;  /* real scalars: op 'C' is op 'T' */
        if (!complex_valued && call_case.ta == 'C') call_case.ta = 'T';
        if (!complex_valued && call_case.tb == 'C') call_case.tb = 'T';
        const double complex alpha = t->alpha + (complex_valued ? 0.25 * I : 0);
        const double complex beta = t->beta + (complex_valued ? -0.5 * I : 0);
        double error = 0;
        if (in_grid) {
          const int a_rows = t->ia - 1 + (t->ta == 'N' ? t->m : t->k) + 1, a_cols = t->ja - 1 + (t->ta == 'N' ? t->k : t->m);
          const int b_rows = t->ib - 1 + (t->tb == 'N' ? t->k : t->n), b_cols = t->jb - 1 + (t->tb == 'N' ? t->n : t->k) + 2;
          Array a = make(context, 0, a_rows, a_cols, t->mb, t->nb, type);
          Array b = make(context, 1, b_rows, b_cols, t->nb, t->mb, type);
          Array cc = make(context, 2, t->ic - 1 + t->m + 2, t->jc - 1 + t->n + 1, t->mb, t->mb, type);
          call(entry, &call_case, alpha, beta, &a, &b, &cc);
          error = check(context, &cc, &call_case, alpha, beta);
          free(a.data), free(b.data), free(cc.data);
        }
        MPI_Allreduce(MPI_IN_PLACE, &error, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        ++calls;
        const double tolerance = type == 0 || type == 2 ? 1e-4 : 1e-12;
        if (!(error < tolerance)) {
          ++wrong;
          if (rank == 0)
            printf("pgemm_entry_points: %s, case %d on the %d x %d grid (order %s) is wrong by %g\n", entry_name[entry],
                   (int)c, grids[g].rows, grids[g].cols, grids[g].order, error);
        }
      }
    if (in_grid) Cblacs_gridexit(context);
  }
  if (rank == 0) {
    if (wrong == 0) printf("pgemm_entry_points: all %d calls right on %d ranks\n", calls, size);
    else printf("pgemm_entry_points: %d of %d calls wrong\n", wrong, calls);
  }
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}
