/* PDGEMM with a context that is no grid the process is in, as ScaLAPACK 2.2 answers it: PBLAS
 * checks the contexts before anything else (PB_Cchkmat), prints the error and aborts every
 * process (PB_Cabort, Cblacs_abort: MPI_Abort with INFO as the error code). It never returns.
 * The tests build this program twice, with ScaLAPACK alone and with libshardwise_scalapack first,
 * and ask both for the same error on stderr and a failed job (the drop-in once returned at once,
 * as if the call had been made).
 *
 *   mpiexec -n 2 pdgemm_bad_context MODE
 *
 * MODE: c_minus_1, c_minus_2   every rank of a 1 x 2 grid passes DESCC(CTXT_) = -1 or -2:
 *                              "Parameter number 1902 had an illegal value" (DESCC's CTXT_ does
 *                              not match A's)
 *       c_minus_1_one_rank     only rank 1 does (rank 0's call is valid): the same error, and no hang
 *       outside_grid           a 1 x 1 grid on rank 0, which multiplies; rank 1, outside the grid
 *                              (BLACS gives it the context -1), calls PDGEMM with its descriptors:
 *                              "Parameter number 1002 had an illegal value" (DESCA's CTXT_) */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "shardwise/scalapack/prototypes.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char* mode = argc > 1 ? argv[1] : "";
  const int outside = strcmp(mode, "outside_grid") == 0;
  if (size != 2 || !(outside || strcmp(mode, "c_minus_1") == 0 || strcmp(mode, "c_minus_2") == 0 ||
                     strcmp(mode, "c_minus_1_one_rank") == 0)) {
    if (rank == 0) printf("usage: mpiexec -n 2 pdgemm_bad_context c_minus_1|c_minus_2|c_minus_1_one_rank|outside_grid\n");
    MPI_Finalize();
    return 2;
  }
  int context;
  Cblacs_get(0, 0, &context);
  Cblacs_gridinit(&context, "R", 1, outside ? 1 : 2);
  /* 4 x 4 matrices in 2 x 2 blocks: on a 1 x 2 grid each rank holds 4 x 2 of each, on 1 x 1 all. */
  double a[16], b[16], c[16];
  for (int i = 0; i < 16; ++i) a[i] = i, b[i] = 16 - i, c[i] = 0;
  const int m = 4, one = 1;
  const double alpha = 1, beta = 0;
  int desca[9] = {1, context, 4, 4, 2, 2, 0, 0, 4}, descb[9], descc[9];
  memcpy(descb, desca, sizeof desca);
  memcpy(descc, desca, sizeof desca);
  if (strcmp(mode, "c_minus_1") == 0 || (strcmp(mode, "c_minus_1_one_rank") == 0 && rank == 1)) descc[1] = -1;
  if (strcmp(mode, "c_minus_2") == 0) descc[1] = -2;
  pdgemm_("N", "N", &m, &m, &m, &alpha, a, &one, &one, desca, b, &one, &one, descb, &beta, c, &one, &one, descc);
  /* Only rank 0's valid call of outside_grid gets here (before rank 1's abort ends the job). */
  printf("pdgemm_bad_context: rank %d: PDGEMM returned\n", rank);
  fflush(stdout);
  if (context >= 0) Cblacs_gridexit(context);
  MPI_Finalize();
  return 0;
}
