// Distributing over the groups of another mesh than the matrix type names.
// expect: shardwise::ShardedMatrix::distribute: the ProcessGroupMesh is over another Mesh than the matrix; declare the ShardedMatrix on the same Mesh<...> as the groups
#include "shardwise/sharded_matrix.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using S = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
void f(const sw::ProcessGroupMesh<Grid>& groups, const Eigen::MatrixXd& m) {
  auto a = sw::ShardedMatrix<double, Line, S>::distribute(groups, m);
  (void)a;
}
