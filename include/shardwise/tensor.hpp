// shardwise/tensor.hpp: shardwise with N-D tensors: everything in shardwise.hpp, plus
// ShardedTensor (0 to 6 dimensions, to and from Eigen's Tensor module), einsum, and the
// vector operations of linalg.hpp (dot, norm, axpy, matvec).
//
// A separate include because Eigen's Tensor module costs every translation unit that parses
// it (about 0.4 s with g++ -O3); programs on matrices only include shardwise.hpp.
#pragma once

#include "shardwise/shardwise.hpp"
#include "shardwise/sharded_tensor.hpp"
#include "shardwise/einsum.hpp"
#include "shardwise/view.hpp"
#include "shardwise/linalg.hpp"
