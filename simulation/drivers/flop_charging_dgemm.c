/* dgemm_ for a simulated cluster (simulation/peers/build_scalapack_smpi.sh): charges the product's
 * 2mnk flops to the simulated host, as shardwise's kernels do under SHARDWISE_SIMULATE, and
 * multiplies (through OpenBLAS's cblas_dgemm, a different symbol) only when the driver has
 * called flop_charging_dgemm_computes(1), for the runs whose results are checked. Linked into
 * the program, it comes before the BLAS library's dgemm_ for every caller in it (PBLAS). */
#include <cblas.h>
#include <smpi/smpi.h>

static int computes = 0; /* the same on every rank: set once, before the first pdgemm_ */

void flop_charging_dgemm_computes(int yes) { computes = yes; }

static enum CBLAS_TRANSPOSE op(const char* trans) {
  return (*trans == 'N' || *trans == 'n') ? CblasNoTrans : CblasTrans;
}

/* Fortran's hidden string lengths follow the last argument; a C definition may ignore them. */
void dgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* b, const int* ldb, const double* beta, double* c,
            const int* ldc) {
  smpi_execute_flops(2.0 * (double)*m * (double)*n * (double)*k);
  if (computes)
    cblas_dgemm(CblasColMajor, op(transa), op(transb), *m, *n, *k, *alpha, a, *lda, b, *ldb, *beta, c, *ldc);
}
