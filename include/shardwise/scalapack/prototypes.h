/* shardwise/scalapack/prototypes.h: the C prototypes of the BLACS, ScaLAPACK and PBLAS routines
 * that shardwise's ScaLAPACK interop calls or that libshardwise_scalapack serves, for C and C++.
 *
 * Neither ScaLAPACK nor Debian's libscalapack-openmpi-dev installs a C header for these; each
 * program declares them itself. This one declares them once, as libscalapack-openmpi exports
 * them (Fortran calling convention):
 *   - the BLACS C interface (Cblacs_*): scalars by value, as BLACS's C entry points take them;
 *   - the ScaLAPACK tools and the PBLAS/ScaLAPACK routines: the lower-case name with a trailing
 *     underscore, every argument by pointer, CHARACTER arguments as `const char*` without hidden
 *     lengths (PBLAS's routines are written in C), `const` on what the routine only reads;
 *   - COMPLEX and COMPLEX*16 as shardwise_complex_float and shardwise_complex_double: in C++
 *     std::complex<float> and std::complex<double>, in C float _Complex and double _Complex
 *     (both two floating-point numbers, real part first, as Fortran's).
 * libshardwise_scalapack defines its p?gemm_, p?tran*_, p?gemr2d_, p?symm_/p?hemm_ and
 * p?syrk_/p?herk_ with these prototypes (src/scalapack_dropin.cpp includes this header).
 * shardwise/scalapack/blacs.hpp includes it, so every shardwise ScaLAPACK header brings it: a
 * C++ program of its own declaration of one of these routines must declare it the same way
 * (C++ rejects two declarations of one C function with different parameter types). */
#ifndef SHARDWISE_SCALAPACK_PROTOTYPES_H
#define SHARDWISE_SCALAPACK_PROTOTYPES_H

#include <mpi.h>

#ifdef __cplusplus
#include <complex>
typedef std::complex<float> shardwise_complex_float;
typedef std::complex<double> shardwise_complex_double;
extern "C" {
#else
typedef float _Complex shardwise_complex_float;
typedef double _Complex shardwise_complex_double;
#endif

/* ---- BLACS (C interface) ---------------------------------------------------------------- */
void Cblacs_pinfo(int* mypnum, int* nprocs);
void Cblacs_get(int context, int what, int* value);
void Cblacs_gridinit(int* context, const char* order, int nprow, int npcol);
void Cblacs_gridmap(int* context, int* usermap, int ldumap, int nprow, int npcol);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int context);
/* The MPI communicator of a BLACS system handle (Cblacs_get(context, 10, &handle)). */
MPI_Comm Cblacs2sys_handle(int system_context);

/* ---- ScaLAPACK tools -------------------------------------------------------------------- */
int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc,
               const int* icsrc, const int* ictxt, const int* lld, int* info);

/* ---- sub(C) := alpha op(sub(A)) op(sub(B)) + beta sub(C) (PBLAS p?gemm) ------------------ */
#define SHARDWISE_PGEMM_PROTOTYPE(name, T)                                                                         \
  void name(const char* transa, const char* transb, const int* m, const int* n, const int* k, const T* alpha,      \
            const T* a, const int* ia, const int* ja, const int* desca, const T* b, const int* ib, const int* jb,  \
            const int* descb, const T* beta, T* c, const int* ic, const int* jc, const int* descc)
SHARDWISE_PGEMM_PROTOTYPE(psgemm_, float);
SHARDWISE_PGEMM_PROTOTYPE(pdgemm_, double);
SHARDWISE_PGEMM_PROTOTYPE(pcgemm_, shardwise_complex_float);
SHARDWISE_PGEMM_PROTOTYPE(pzgemm_, shardwise_complex_double);
#undef SHARDWISE_PGEMM_PROTOTYPE

/* ---- sub(C) := beta sub(C) + alpha op(sub(A)) (PBLAS p?tran, p?tranu, p?tranc) ----------- */
#define SHARDWISE_PTRAN_PROTOTYPE(name, T)                                                                        \
  void name(const int* m, const int* n, const T* alpha, const T* a, const int* ia, const int* ja, const int* desca, \
            const T* beta, T* c, const int* ic, const int* jc, const int* descc)
SHARDWISE_PTRAN_PROTOTYPE(pstran_, float);
SHARDWISE_PTRAN_PROTOTYPE(pdtran_, double);
SHARDWISE_PTRAN_PROTOTYPE(pctranu_, shardwise_complex_float);
SHARDWISE_PTRAN_PROTOTYPE(pztranu_, shardwise_complex_double);
SHARDWISE_PTRAN_PROTOTYPE(pctranc_, shardwise_complex_float);
SHARDWISE_PTRAN_PROTOTYPE(pztranc_, shardwise_complex_double);
#undef SHARDWISE_PTRAN_PROTOTYPE

/* ---- sub(B) := sub(A) between two layouts, possibly two grids (ScaLAPACK p?gemr2d) -------- */
#define SHARDWISE_PGEMR2D_PROTOTYPE(name, T)                                                                      \
  void name(const int* m, const int* n, const T* a, const int* ia, const int* ja, const int* desca, T* b,         \
            const int* ib, const int* jb, const int* descb, const int* ictxt)
SHARDWISE_PGEMR2D_PROTOTYPE(psgemr2d_, float);
SHARDWISE_PGEMR2D_PROTOTYPE(pdgemr2d_, double);
SHARDWISE_PGEMR2D_PROTOTYPE(pcgemr2d_, shardwise_complex_float);
SHARDWISE_PGEMR2D_PROTOTYPE(pzgemr2d_, shardwise_complex_double);
#undef SHARDWISE_PGEMR2D_PROTOTYPE

/* ---- sub(C) := alpha sub(A) sub(B) + beta sub(C), sub(A) symmetric or Hermitian (PBLAS
 * p?symm, p?hemm; SIDE 'R': sub(B) sub(A)) ------------------------------------------------- */
#define SHARDWISE_PSYMM_PROTOTYPE(name, T)                                                                        \
  void name(const char* side, const char* uplo, const int* m, const int* n, const T* alpha, const T* a,          \
            const int* ia, const int* ja, const int* desca, const T* b, const int* ib, const int* jb,            \
            const int* descb, const T* beta, T* c, const int* ic, const int* jc, const int* descc)
SHARDWISE_PSYMM_PROTOTYPE(pssymm_, float);
SHARDWISE_PSYMM_PROTOTYPE(pdsymm_, double);
SHARDWISE_PSYMM_PROTOTYPE(pcsymm_, shardwise_complex_float);
SHARDWISE_PSYMM_PROTOTYPE(pzsymm_, shardwise_complex_double);
SHARDWISE_PSYMM_PROTOTYPE(pchemm_, shardwise_complex_float);
SHARDWISE_PSYMM_PROTOTYPE(pzhemm_, shardwise_complex_double);
#undef SHARDWISE_PSYMM_PROTOTYPE

/* ---- the UPLO triangle of sub(C) := alpha op(sub(A)) op(sub(A))^T (^H) + beta sub(C) (PBLAS
 * p?syrk, p?herk); S: alpha's and beta's type, real for p?herk ---------------------------- */
#define SHARDWISE_PSYRK_PROTOTYPE(name, T, S)                                                                     \
  void name(const char* uplo, const char* trans, const int* n, const int* k, const S* alpha, const T* a,         \
            const int* ia, const int* ja, const int* desca, const S* beta, T* c, const int* ic, const int* jc,   \
            const int* descc)
SHARDWISE_PSYRK_PROTOTYPE(pssyrk_, float, float);
SHARDWISE_PSYRK_PROTOTYPE(pdsyrk_, double, double);
SHARDWISE_PSYRK_PROTOTYPE(pcsyrk_, shardwise_complex_float, shardwise_complex_float);
SHARDWISE_PSYRK_PROTOTYPE(pzsyrk_, shardwise_complex_double, shardwise_complex_double);
SHARDWISE_PSYRK_PROTOTYPE(pcherk_, shardwise_complex_float, float);
SHARDWISE_PSYRK_PROTOTYPE(pzherk_, shardwise_complex_double, double);
#undef SHARDWISE_PSYRK_PROTOTYPE

#ifdef __cplusplus
}
#endif

#endif /* SHARDWISE_SCALAPACK_PROTOTYPES_H */
