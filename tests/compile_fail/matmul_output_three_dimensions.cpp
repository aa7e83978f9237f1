// A requested output of three dimensions for a matrix product: the library's text is the first
// error line, and the only one.
// expect: shardwise::matmul: the requested sharding of C must have two dimensions
// single-error
#include "shardwise/matmul.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using Blocks = sw::TensorSharding<sw::Split<"x">, sw::Split<"y">>;
void f(const sw::ShardedMatrix<double, Grid, Blocks>& a, const sw::ShardedMatrix<double, Grid, Blocks>& b) {
  auto c = sw::matmul<sw::TensorSharding<sw::Split<"x">, sw::Split<"y">, sw::Replicated>>(a, b);
  (void)c;
}
