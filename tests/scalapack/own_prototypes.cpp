// A C++ program that declares ScaLAPACK's routines itself, as many do, without const (as C
// compilers accept), and includes shardwise's ScaLAPACK headers: it must compile (the headers
// declare only the BLACS functions they call, the same way as prototypes.h). Built, not run.
extern "C" {
void pdgemm_(char* transa, char* transb, int* m, int* n, int* k, double* alpha, double* a, int* ia, int* ja,
             int* desca, double* b, int* ib, int* jb, int* descb, double* beta, double* c, int* ic, int* jc,
             int* descc);
void Cblacs_gridinit(int* context, char* order, int nprow, int npcol);
void descinit_(int* desc, int* m, int* n, int* mb, int* nb, int* rsrc, int* csrc, int* context, int* lld, int* info);
}

#include "shardwise/scalapack/array_descriptor.hpp"
#include "shardwise/scalapack/block_cyclic_matrix.hpp"
#include "shardwise/scalapack/pgemm.hpp"

/// The program's own call, through its own declaration.
void own_call(double* a, int* desc) {
  char n = 'N';
  int one = 1;
  double alpha = 1, beta = 0;
  pdgemm_(&n, &n, &one, &one, &one, &alpha, a, &one, &one, desc, a, &one, &one, desc, &beta, a, &one, &one, desc);
}
