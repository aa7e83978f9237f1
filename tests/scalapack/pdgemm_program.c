/* A ScaLAPACK program as users write them: BLACS grid, DESCINIT, local arrays filled from
 * global indices, PDGEMM and PZGEMM on submatrices with transposes, uneven sizes, both grid
 * orders. It knows nothing of shardwise: the tests build it twice, linked with ScaLAPACK
 * alone and with libshardwise_scalapack before ScaLAPACK, and both must print "all right".
 *
 *   mpiexec -n P pdgemm_program
 */
#include <complex.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

void Cblacs_get(int context, int what, int* value);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int context);
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc, const int* icsrc,
               const int* ictxt, const int* lld, int* info);
void pdgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
             const double* a, const int* ia, const int* ja, const int* desca, const double* b, const int* ib,
             const int* jb, const int* descb, const double* beta, double* c, const int* ic, const int* jc,
             const int* descc);
void pzgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
             const double complex* alpha, const double complex* a, const int* ia, const int* ja, const int* desca,
             const double complex* b, const int* ib, const int* jb, const int* descb, const double complex* beta,
             double complex* c, const int* ic, const int* jc, const int* descc);

/* Element (i, j) (0-based, global) of matrix `which`. */
static double complex element(int which, int i, int j, int complex_valued) {
  const double re = (double)((i * 13 + j * 7 + which * 5) % 17 - 8) / 8.0;
  const double im = complex_valued ? (double)((i * 3 + j * 11 + which) % 13 - 6) / 6.0 : 0.0;
  return re + im * I;
}

typedef struct {
  int desc[9];
  int rows, cols, local_rows, local_cols, mb, nb;
  double complex* z;
  double* d;
} Array;

static int global_index(int local, int nb, int proc, int nprocs) { return (local / nb * nprocs + proc) * nb + local % nb; }

static Array make(int context, int which, int rows, int cols, int mb, int nb, int complex_valued) {
  Array x;
  int nprow, npcol, myrow, mycol, zero = 0, info;
  Cblacs_gridinfo(context, &nprow, &npcol, &myrow, &mycol);
  x.rows = rows, x.cols = cols, x.mb = mb, x.nb = nb;
  x.local_rows = numroc_(&rows, &mb, &myrow, &zero, &nprow);
  x.local_cols = numroc_(&cols, &nb, &mycol, &zero, &npcol);
  int lld = x.local_rows > 1 ? x.local_rows : 1;
  descinit_(x.desc, &rows, &cols, &mb, &nb, &zero, &zero, &context, &lld, &info);
  x.z = malloc(sizeof(double complex) * (size_t)lld * (size_t)(x.local_cols > 1 ? x.local_cols : 1));
  x.d = malloc(sizeof(double) * (size_t)lld * (size_t)(x.local_cols > 1 ? x.local_cols : 1));
  for (int lj = 0; lj < x.local_cols; ++lj)
    for (int li = 0; li < x.local_rows; ++li) {
      const double complex v = element(which, global_index(li, mb, myrow, nprow), global_index(lj, nb, mycol, npcol),
                                       complex_valued);
      x.z[lj * lld + li] = v;
      x.d[lj * lld + li] = creal(v);
    }
  return x;
}

/* The largest error of this rank's elements of sub(C) = alpha op(sub(A)) op(sub(B)) + beta sub(C). */
static double check(int context, const Array* c, const Array* c0, char ta, char tb, int m, int n, int k,
                    double complex alpha, int ia, int ja, int ib, int jb, double complex beta, int ic, int jc,
                    int complex_valued) {
  int nprow, npcol, myrow, mycol;
  Cblacs_gridinfo(context, &nprow, &npcol, &myrow, &mycol);
  const int lld = c->desc[8];
  double worst = 0;
  for (int lj = 0; lj < c->local_cols; ++lj)
    for (int li = 0; li < c->local_rows; ++li) {
      const int gi = global_index(li, c->mb, myrow, nprow), gj = global_index(lj, c->nb, mycol, npcol);
      const double complex before = complex_valued ? c0->z[lj * lld + li] : c0->d[lj * lld + li];
      double complex want = before;
      if (gi >= ic - 1 && gi < ic - 1 + m && gj >= jc - 1 && gj < jc - 1 + n) {
        const int i = gi - (ic - 1), j = gj - (jc - 1);
        double complex sum = 0;
        for (int l = 0; l < k; ++l) {
          double complex x = ta == 'N' ? element(0, ia - 1 + i, ja - 1 + l, complex_valued)
                                       : element(0, ia - 1 + l, ja - 1 + i, complex_valued);
          double complex y = tb == 'N' ? element(1, ib - 1 + l, jb - 1 + j, complex_valued)
                                       : element(1, ib - 1 + j, jb - 1 + l, complex_valued);
          if (ta == 'C') x = conj(x);
          if (tb == 'C') y = conj(y);
          sum += x * y;
        }
        want = alpha * sum + beta * before;
      }
      const double complex got = complex_valued ? c->z[lj * lld + li] : c->d[lj * lld + li];
      const double error = cabs(got - want);
      if (error > worst) worst = error;
    }
  return worst;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, calls = 0, wrong = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* orders[] = {"R", "C"};
  for (int o = 0; o < 2; ++o) {
    int context, nprow = size >= 4 ? 2 : 1, npcol = size / nprow;
    Cblacs_get(0, 0, &context);
    Cblacs_gridinit(&context, orders[o], nprow, npcol);
    struct { char ta, tb; int m, n, k, ia, ja, ib, jb, ic, jc, mb, nb; double alpha, beta; } cases[] = {
        {'N', 'N', 101, 67, 45, 1, 1, 1, 1, 1, 1, 16, 16, 1.0, 0.0},
        {'T', 'N', 50, 31, 77, 3, 2, 2, 4, 5, 1, 7, 5, -0.5, 2.0},
        {'N', 'T', 19, 23, 9, 2, 2, 1, 3, 1, 2, 2, 3, 2.0, 1.0},
        {'C', 'C', 33, 17, 40, 1, 4, 3, 1, 2, 2, 64, 64, 1.5, -1.0},
    };
    for (int complex_valued = 0; complex_valued < 2; ++complex_valued)
      for (size_t t = 0; t < sizeof cases / sizeof cases[0]; ++t) {
        const int m = cases[t].m, n = cases[t].n, k = cases[t].k;
        const char ta = cases[t].ta, tb = cases[t].tb;
        const int ia = cases[t].ia, ja = cases[t].ja, ib = cases[t].ib, jb = cases[t].jb, ic = cases[t].ic,
                  jc = cases[t].jc;
        Array a = make(context, 0, ia - 1 + (ta == 'N' ? m : k) + 1, ja - 1 + (ta == 'N' ? k : m) + 2, cases[t].mb,
                       cases[t].nb, complex_valued);
        Array b = make(context, 1, ib - 1 + (tb == 'N' ? k : n) + 2, jb - 1 + (tb == 'N' ? n : k), cases[t].nb,
                       cases[t].mb, complex_valued);
        Array c = make(context, 2, ic - 1 + m + 3, jc - 1 + n + 1, cases[t].mb, cases[t].mb, complex_valued);
        Array c0 = make(context, 2, ic - 1 + m + 3, jc - 1 + n + 1, cases[t].mb, cases[t].mb, complex_valued);
        const double complex alpha = cases[t].alpha + (complex_valued ? 0.25 * I : 0);
        const double complex beta = cases[t].beta;
        const char real_ta = ta == 'C' ? 'T' : ta, real_tb = tb == 'C' ? 'T' : tb;
        if (complex_valued) {
          pzgemm_(&ta, &tb, &m, &n, &k, &alpha, a.z, &ia, &ja, a.desc, b.z, &ib, &jb, b.desc, &beta, c.z, &ic, &jc,
                  c.desc);
        } else {
          const double ra = creal(alpha), rb = creal(beta);
          pdgemm_(&real_ta, &real_tb, &m, &n, &k, &ra, a.d, &ia, &ja, a.desc, b.d, &ib, &jb, b.desc, &rb, c.d, &ic,
                  &jc, c.desc);
        }
        double error = check(context, &c, &c0, complex_valued ? ta : real_ta, complex_valued ? tb : real_tb, m, n, k,
                             complex_valued ? alpha : creal(alpha), ia, ja, ib, jb, beta, ic, jc, complex_valued);
        MPI_Allreduce(MPI_IN_PLACE, &error, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        ++calls;
        if (!(error < 1e-10)) {
          ++wrong;
          if (rank == 0)
            printf("pdgemm_program: %s call %d (order %s) is wrong by %g\n", complex_valued ? "pzgemm_" : "pdgemm_",
                   (int)t, orders[o], error);
        }
        free(a.z), free(a.d), free(b.z), free(b.d), free(c.z), free(c.d), free(c0.z), free(c0.d);
      }
    Cblacs_gridexit(context);
  }
  if (rank == 0) {
    if (wrong == 0) printf("pdgemm_program: all %d calls right on %d ranks\n", calls, size);
    else printf("pdgemm_program: %d of %d calls wrong\n", wrong, calls);
  }
  MPI_Finalize();
  return wrong == 0 ? 0 : 1;
}
