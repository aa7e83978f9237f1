// einsum does not plan block-cyclic operands: the message names the reshard that fixes it.
// expect: shardwise::einsum: an operand is BlockCyclic<...> or SplitFirstLarger<...>, which einsum does not plan; reshard it to blocks first
#include "shardwise/einsum.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"r", 2>, sw::Axis<"c", 2>>;
using Cyclic = sw::TensorSharding<sw::BlockCyclic<"r", 4>, sw::BlockCyclic<"c", 4>>;
using Blocks = sw::TensorSharding<sw::Split<"r">, sw::Split<"c">>;
void f(const sw::ShardedTensor<double, Grid, Cyclic>& a, const sw::ShardedTensor<double, Grid, Blocks>& b) {
  (void)sw::einsum<"mk,kn->mn">(a, b);
}
