// A view of a matrix given three extents: one error, with the library's text.
// expect: shardwise::view<A>(groups, extents, data, strides, local_extents): give as many extents
// single-error
#include "shardwise/view.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>>;
using A_t = sw::ShardedMatrix<double, Grid, sw::TensorSharding<sw::Split<"x">, sw::Replicated>, Eigen::ColMajor>;
void f(const sw::ProcessGroupMesh<Grid>& groups, double* p) {
  auto v = sw::view<A_t>(groups, {4, 4, 4}, p, {1, 4, 16}, {2, 4, 4});
  (void)v;
}
