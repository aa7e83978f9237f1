// Mistake 3: asking for an output the policy cannot produce. A's rows are split over x, so
// C comes out with its rows over x; rows over y would mean moving every block to another
// rank, a reshuffle that shardwise never does silently.
// Fix: ask for C[x, -] (or nothing: the natural output), or for C replicated (an AllGather).
// expect: shardwise::matmul: the requested output cannot be reached for the rows (m): keep A's row axes, drop minor ones (AllGather), or add the reduced k axes as minor ones (ReduceScatter)
#include <mpi.h>

#include <shardwise/shardwise.hpp>

namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using ShA = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;   // A[m, k]: m over x
using ShB = sw::TensorSharding<sw::Replicated, sw::Replicated>;   // B[k, n]: on every rank
using ShC = sw::TensorSharding<sw::Split<"y">, sw::Replicated>;   // wanted: C[m, n] with m over y

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    sw::ProcessGroupMesh<Grid> groups(MPI_COMM_WORLD);
    const Eigen::MatrixXd a = Eigen::MatrixXd::Random(64, 32), b = Eigen::MatrixXd::Random(32, 16);
    const auto sa = sw::ShardedMatrix<double, Grid, ShA>::distribute(groups, a);
    const auto sb = sw::ShardedMatrix<double, Grid, ShB>::distribute(groups, b);
    const auto c = sw::matmul<ShC>(sa, sb);
  }
  MPI_Finalize();
}
