// shardwise/scalapack/blacs.hpp: the MPI communicator and position of a BLACS grid.
//
// A program that uses this header links a BLACS (ScaLAPACK's libscalapack carries one).
// BLACS keeps, for each grid, a communicator whose ranks are the grid's processes in
// row-major order (rank = row * NPCOL + col) whatever the grid order ('R' or 'C' to
// BLACS_GRIDINIT, or a BLACS_GRIDMAP); BLACS_GET with WHAT = 10 gives its system handle.
#pragma once

#include <mpi.h>

#include <optional>

#include "shardwise/scalapack/pgemm.hpp"

// The three BLACS functions this header calls, declared as prototypes.h does. Not the whole of
// prototypes.h: a program that includes a shardwise header and declares ScaLAPACK's routines
// itself (often with other constness, as C compilers accept) must still compile; such a program
// includes prototypes.h only if it wants it.
extern "C" {
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_get(int context, int what, int* value);
MPI_Comm Cblacs2sys_handle(int system_context);
}

namespace shardwise::scalapack {

/// Whether this process is in the grid of BLACS context `context` (MYROW in [0, NPROW)).
inline bool in_grid(int context) {
  int rows = 0, cols = 0, row = -1, col = -1;
  Cblacs_gridinfo(context, &rows, &cols, &row, &col);
  return row >= 0 && row < rows && col >= 0 && col < cols;
}

/// The grid of BLACS context `context`, for a process in it; nothing when the BLACS does not
/// number the grid's communicator as described above (then no rank of the grid can use it).
inline std::optional<Grid> grid_of(int context) {
  Grid g;
  Cblacs_gridinfo(context, &g.rows, &g.cols, &g.row, &g.col);
  int handle = 0;
  Cblacs_get(context, 10, &handle);
  g.comm = Cblacs2sys_handle(handle);
  int rank = -1, size = 0;
  if (g.comm == MPI_COMM_NULL) return std::nullopt;
  MPI_Comm_rank(g.comm, &rank);
  MPI_Comm_size(g.comm, &size);
  if (size != g.rows * g.cols || rank != g.row * g.cols + g.col) return std::nullopt;
  return g;
}

}  // namespace shardwise::scalapack
