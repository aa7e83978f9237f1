// Operands sharded over two different Mesh types.
// expect: shardwise::matmul: A and B are sharded over different Mesh types; build both on the same ProcessGroupMesh<Mesh<...>>
#include "shardwise/matmul.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 1>>;
using S = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
void f(const sw::ShardedMatrix<double, Line, S>& a, const sw::ShardedMatrix<double, Grid, S>& b) {
  auto c = sw::matmul(a, b);
  (void)c;
}
