// Mistake 1: a typo in an axis name. The mesh has axes "x" and "y"; B's sharding says "z".
// Fix: Split<"y">. Caught where the sharding meets the mesh (here ShardedMatrix<..., ShB>).
// expect: mesh_has_no_axis_named<
// expect-on-first-error: fixed_string<2>{"z"}>
// expect: shardwise: the sharding names an axis that the Mesh does not have
#include <mpi.h>

#include <shardwise/shardwise.hpp>

namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using ShA = sw::TensorSharding<sw::Split<"x">, sw::Split<"y">>;   // A[m, k]: m over x, k over y
using ShB = sw::TensorSharding<sw::Split<"z">, sw::Replicated>;   // B[k, n]: k over "z" (typo)

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
