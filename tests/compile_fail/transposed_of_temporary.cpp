// transposed of a temporary matrix, whose view would dangle: one error, with the library's text.
// expect: shardwise::transposed: the matrix is a temporary, so its view would dangle
// single-error
#include "shardwise/matmul.hpp"
#include "shardwise/view.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using Blocks = sw::TensorSharding<sw::Split<"x">, sw::Split<"y">>;
using A_t = sw::ShardedMatrix<double, Grid, Blocks>;
A_t make(const sw::ProcessGroupMesh<Grid>& groups) { return A_t(groups, 4, 4); }
void f(const sw::ProcessGroupMesh<Grid>& groups) {
  const auto t = sw::transposed(make(groups));
  (void)t;
}
