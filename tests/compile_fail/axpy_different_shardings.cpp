// y += alpha x adds each rank's own block, so x and y must be sharded alike.
// expect: shardwise::axpy: x and y must have the same sharding, since each rank adds its own block; reshard one first
#include "shardwise/linalg.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
void f(const sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Split<"x">>>& x,
       sw::ShardedTensor<double, Line, sw::TensorSharding<sw::Replicated>>& y) {
  sw::axpy(2.0, x, y);
}
