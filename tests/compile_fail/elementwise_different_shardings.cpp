// An element-wise operation works on each rank's own block, so the arrays must be sharded alike.
// expect: shardwise::elementwise: the arrays must have the same sharding, since each rank works on its own block; reshard one first
#include "shardwise/linalg.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
auto f(const sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Split<"x">>>& x,
       const sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Replicated>>& y) {
  return sw::elementwise([](double a, double b) { return a * b; }, x, y);
}
