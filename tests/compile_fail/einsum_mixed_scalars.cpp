// float times double.
// expect: shardwise::einsum: A and B have different scalar types
#include "shardwise/einsum.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
using Sh = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
void f(const sw::ShardedTensor<float, Line, Sh>& a, const sw::ShardedTensor<double, Line, Sh>& b) {
  (void)sw::einsum<"mk,kn->mn">(a, b);
}
