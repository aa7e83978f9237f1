// Moving a split from x to y is an all-to-all, never done silently.
// expect: shardwise::reshard: the target sharding cannot be reached
#include "shardwise/plan/matmul_plan.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using From = sw::TensorSharding<sw::Split<"x">, sw::Replicated>;
using To = sw::TensorSharding<sw::Split<"y">, sw::Replicated>;
using S = decltype(sw::reshard_plan<Grid, From, To>::schedule);
