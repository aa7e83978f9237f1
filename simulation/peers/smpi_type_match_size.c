/* MPI_Type_match_size for ScaLAPACK's BLACS under SMPI: SimGrid 3.32 declares it but aborts
 * ("Not yet implemented"), and BLACS's integer combines (Cigamx2d, Cigsum2d, ...), which
 * PDGEMR2D reaches, ask it for the MPI type of their integers. build_scalapack_smpi.sh links it
 * into the peer's drivers, whose calls then find it before SimGrid's. */
#include <mpi.h>

int MPI_Type_match_size(int typeclass, int size, MPI_Datatype* type) {
  if (typeclass == MPI_TYPECLASS_INTEGER && size == (int)sizeof(int)) *type = MPI_INT;
  else if (typeclass == MPI_TYPECLASS_INTEGER && size == (int)sizeof(long long)) *type = MPI_LONG_LONG;
  else if (typeclass == MPI_TYPECLASS_REAL && size == (int)sizeof(float)) *type = MPI_FLOAT;
  else if (typeclass == MPI_TYPECLASS_REAL && size == (int)sizeof(double)) *type = MPI_DOUBLE;
  else return MPI_ERR_ARG;
  return MPI_SUCCESS;
}
