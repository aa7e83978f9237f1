// A float matrix times a double one.
// expect: shardwise::matmul: A and B have different scalar types (float and double); convert one
#include "shardwise/matmul.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>>;
using S = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
void f(const sw::ShardedMatrix<float, Grid, S>& a, const sw::ShardedMatrix<double, Grid, S>& b) {
  auto c = sw::matmul(a, b);
  (void)c;
}
