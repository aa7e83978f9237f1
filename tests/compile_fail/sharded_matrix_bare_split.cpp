// Forgetting TensorSharding<...> around the dimension shardings.
// expect: shardwise::ShardedMatrix<Scalar, Mesh, Sharding>: the sharding must be a shardwise::TensorSharding<rows, columns>
#include "shardwise/sharded_matrix.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using M = sw::ShardedMatrix<double, Grid, sw::Split<"x">>;
int size = sizeof(M);
