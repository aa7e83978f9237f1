// gemm into a view of const memory: one error, with the library's text.
// expect: shardwise::gemm(alpha, A, B, beta, C): C is a read-only view
// single-error
#include "shardwise/matmul.hpp"
#include "shardwise/view.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using Blocks = sw::TensorSharding<sw::Split<"x">, sw::Split<"y">>;
using C_t = sw::ShardedMatrix<double, Grid, Blocks, Eigen::ColMajor>;
void f(const sw::ProcessGroupMesh<Grid>& groups, const double* memory, const C_t& a, const C_t& b) {
  sw::gemm(2.0, a, b, 1.0, sw::view<C_t>(groups, {4, 4}, memory, {1, 2}, {2, 2}));
}
