// The README's first example: C = A B on a 2 x 2 mesh, each operand split in blocks.
//   mpiexec -n 4 hello_matmul
#include <cstdio>
#include <shardwise/shardwise.hpp>
namespace sw = shardwise;

using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;         // 4 ranks, last axis fastest
using Blocks = sw::TensorSharding<sw::Split<"x">, sw::Split<"y">>;  // rows over x, columns over y

int main(int argc, char** argv) {
  sw::MpiEnvironment mpi(argc, argv);  // MPI_Init, MPI_Finalize at the end, MPI_Abort if an exception escapes
  sw::ProcessGroupMesh<Grid> groups(MPI_COMM_WORLD);                   // throws unless 4 ranks
  const Eigen::MatrixXd a = Eigen::MatrixXd::Random(1000, 700), b = Eigen::MatrixXd::Random(700, 900);
  auto sa = sw::ShardedMatrix<double, Grid, Blocks>::distribute(groups, a);  // keeps this rank's block
  auto sb = sw::ShardedMatrix<double, Grid, Blocks>::distribute(groups, b);
  auto c = sw::matmul(sa, sb);         // policy Full, chosen at compile time; C is split [x, y]
  const double error = (c.to_global() - a * b).cwiseAbs().maxCoeff();  // C gathered on every rank
  if (groups.rank() == 0)
    std::printf("%s\nmax |C - A B| = %.2e\n", sw::matmul_plan<Grid, Blocks, Blocks>::describe().c_str(), error);
  return error < 1e-10 ? 0 : 1;
}
