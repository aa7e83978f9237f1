// Mistake 2: the same axis splits A's rows and B's columns. Each rank would own a block of
// rows of C and a block of its columns over the same ranks: C[m, n] would need x twice.
// Fix: split n over another axis (Split<"y">), or keep one of them replicated.
// expect: shardwise::matmul: the same mesh axis splits the rows of A (m) and the columns of B (n), so C[m, n] would need it twice; split m and n over different axes, or replicate one
#include <mpi.h>

#include <shardwise/shardwise.hpp>

namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using ShA = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;   // A[m, k]: m over x
using ShB = sw::TensorSharding<sw::Replicated, sw::Split<"x">>;   // B[k, n]: n over x as well

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    sw::ProcessGroupMesh<Grid> groups(MPI_COMM_WORLD);
    const Eigen::MatrixXd a = Eigen::MatrixXd::Random(64, 32), b = Eigen::MatrixXd::Random(32, 16);
    const auto sa = sw::ShardedMatrix<double, Grid, ShA>::distribute(groups, a);
    const auto sb = sw::ShardedMatrix<double, Grid, ShB>::distribute(groups, b);
    const auto c = sw::matmul(sa, sb);
  }
  MPI_Finalize();
}
