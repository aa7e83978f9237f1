// gemm with a complex alpha for real arrays: one error, with the library's text.
// expect: shardwise::gemm(alpha, A, B, beta, C): alpha and beta must convert to the arrays' scalar type
// single-error
#include <complex>

#include "shardwise/matmul.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using Blocks = sw::TensorSharding<sw::Split<"x">, sw::Split<"y">>;
void f(sw::ShardedMatrix<double, Grid, Blocks>& c, const sw::ShardedMatrix<double, Grid, Blocks>& a,
       const sw::ShardedMatrix<double, Grid, Blocks>& b) {
  sw::gemm(std::complex<double>(2.0, 1.0), a, b, 1.0, c);
}
