// gemm with a C of another scalar type than A and B: one error, with the library's text.
// expect: shardwise::gemm(alpha, A, B, beta, C): A, B and C must be shardwise::ShardedMatrix objects of one scalar type on one Mesh
// single-error
#include "shardwise/matmul.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using Blocks = sw::TensorSharding<sw::Split<"x">, sw::Split<"y">>;
void f(sw::ShardedMatrix<float, Grid, Blocks>& c, const sw::ShardedMatrix<double, Grid, Blocks>& a,
       const sw::ShardedMatrix<double, Grid, Blocks>& b) {
  sw::gemm(2.0, a, b, 1.0, c);
}
