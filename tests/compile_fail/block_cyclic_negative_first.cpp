// The first block on coordinate -1: one error, the library's, with no cascade after it.
// expect: shardwise::BlockCyclic<axis, NB, First>: the first block's coordinate must not be negative
// expect: give the coordinate along the axis that holds the first block, from 0
// single-error
#include "shardwise/sharded_matrix.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"r", 2>, sw::Axis<"c", 2>>;
using M = sw::ShardedMatrix<double, Grid, sw::TensorSharding<sw::BlockCyclic<"r", 4, -1>, sw::BlockCyclic<"c", 2>>>;
int size = sizeof(M);
