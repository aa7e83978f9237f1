// An Eigen tensor passed where a sharded one belongs.
// expect: shardwise::einsum: A and B must both be shardwise::ShardedTensor objects
#include "shardwise/einsum.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
using Sh = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
void f(const sw::ShardedTensor<double, Line, Sh>& a, const Eigen::Tensor<double, 2, Eigen::RowMajor>& b) {
  (void)sw::einsum<"mk,kn->mn">(a, b);
}
