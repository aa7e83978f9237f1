// Blocks of 0 indices in a matrix's type: one error, the library's, with no cascade after it
// (clang++ once reported four, from every use of the invalid BlockCyclic).
// expect: shardwise::BlockCyclic<axis, NB>: the block size NB must be at least 1
// expect: give the indices of one block
// single-error
#include "shardwise/sharded_matrix.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"r", 2>, sw::Axis<"c", 2>>;
using M = sw::ShardedMatrix<double, Grid, sw::TensorSharding<sw::BlockCyclic<"r", 0>, sw::BlockCyclic<"c", 2>>>;
int size = sizeof(M);
