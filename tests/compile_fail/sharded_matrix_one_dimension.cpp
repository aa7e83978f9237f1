// A ShardedMatrix whose sharding describes one dimension: the library's message comes first.
// expect: the TensorSharding has the wrong number of dimensions; a matrix needs exactly two
#include "shardwise/sharded_matrix.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>>;
using M = sw::ShardedMatrix<double, Grid, sw::TensorSharding<sw::Split<"x">>>;
M* use = nullptr;
int size = sizeof(M);
