// The baseline of benchmarks/compile_time.sh: Eigen and MPI only, the plain work all_policies.cpp
// does around shardwise (one GEMM, an error norm, an all-reduce), so that the difference of the
// two compile times is what shardwise's templates cost.
#include <mpi.h>

#include <Eigen/Core>
#include <cstdio>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const Eigen::MatrixXd a = Eigen::MatrixXd::Random(37, 29), b = Eigen::MatrixXd::Random(29, 23);
  const Eigen::MatrixXd c = a * b;
  double error = (c - a * b).norm() / c.norm();
  MPI_Allreduce(MPI_IN_PLACE, &error, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) std::printf("baseline: error %g\n", error);
  MPI_Finalize();
  return error < 1e-12 ? 0 : 1;
}
