// GSPMD's output is sharded like its input; asking for a replicated Y would be a silent reshard.
// expect: shardwise::FeedForward: unsupported combination of shardings
// expect: GSPMD (X=[a,-,b], W1=[a,b], W2=[b,a])
#include "shardwise/nn/ffn_policy.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using X = sw::TensorSharding<sw::Split<"x">, sw::Replicated, sw::Split<"y">>;
using W1 = sw::TensorSharding<sw::Split<"x">, sw::Split<"y">>;
using W2 = sw::TensorSharding<sw::Split<"y">, sw::Split<"x">>;
using Y = sw::TensorSharding<sw::Replicated, sw::Replicated, sw::Replicated>;
using P = sw::ffn_policy_t<Grid, X, W1, W2, Y>;
P* use = nullptr;
