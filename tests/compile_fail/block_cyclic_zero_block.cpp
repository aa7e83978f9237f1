// A block-cyclic dimension of blocks of 0 indices.
// expect: shardwise::BlockCyclic<axis, NB>: the block size NB must be at least 1
#include "shardwise/sharding.hpp"
namespace sw = shardwise;
using Sh = sw::TensorSharding<sw::BlockCyclic<"r", 0>, sw::Replicated>;
constexpr std::size_t rank = Sh::rank;
