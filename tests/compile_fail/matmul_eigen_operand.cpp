// A ShardedMatrix times a plain Eigen matrix.
// expect: shardwise::matmul: A and B must both be shardwise::ShardedMatrix objects; an Eigen matrix becomes one with ShardedMatrix<Scalar, Mesh, Sharding>::distribute(groups, matrix)
#include "shardwise/matmul.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>>;
using S = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
void f(const sw::ShardedMatrix<double, Grid, S>& a, const Eigen::MatrixXd& b) {
  auto c = sw::matmul(a, b);
  (void)c;
}
