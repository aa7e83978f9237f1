// Forgot TensorSharding<...> around the dimensions.
// expect: shardwise::ShardedTensor<Scalar, Mesh, Sharding>: the sharding must be a shardwise::TensorSharding<...>
#include "shardwise/sharded_tensor.hpp"
namespace sw = shardwise;
using Line = sw::Mesh<sw::Axis<"x", 2>>;
sw::ShardedTensor<double, Line, sw::Split<"x">>* use = nullptr;
void f() { (void)sizeof(sw::ShardedTensor<double, Line, sw::Split<"x">>); }
