// W2 split by columns like W1: no FeedForward policy does that (Megatron splits W2 by rows).
// expect: shardwise::FeedForward: unsupported combination of shardings
// expect: MegatronTP (X=[-,-,-], W1=[-,t], W2=[t,-])
#include "shardwise/nn/ffn_policy.hpp"
namespace sw = shardwise;
using Tp = sw::Mesh<sw::Axis<"tp", 4>>;
using X = sw::TensorSharding<sw::Replicated, sw::Replicated, sw::Replicated>;
using W1 = sw::TensorSharding<sw::Replicated, sw::Split<"tp">>;
using W2 = sw::TensorSharding<sw::Replicated, sw::Split<"tp">>;
using P = sw::ffn_policy_t<Tp, X, W1, W2>;
P* use = nullptr;
