// A FeedForward shape written in positional order is refused as a matmul shape is.
// expect: shardwise: write a shape's extents by name
// single-error
#include "shardwise/nn/ffn_policy.hpp"
namespace sw = shardwise;
constexpr sw::FfnShape shape{4, 16, 32, 128};
