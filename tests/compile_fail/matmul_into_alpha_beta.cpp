// BLAS's alpha and beta passed to matmul_into: the message names the fourth argument, and it is
// the only error (no cascade after it).
// expect: shardwise::matmul_into(C, A, B, variant): the fourth argument must be a variant
// single-error
#include "shardwise/matmul.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using Blocks = sw::TensorSharding<sw::Split<"x">, sw::Split<"y">>;
void f(sw::ShardedMatrix<double, Grid, Blocks>& c, const sw::ShardedMatrix<double, Grid, Blocks>& a,
       const sw::ShardedMatrix<double, Grid, Blocks>& b) {
  sw::matmul_into(c, a, b, 2.0, 1.0);
}
