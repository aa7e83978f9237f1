// Activations are X[b, s, m]: a two-dimensional sharding is not enough.
// expect: their TensorSharding needs three dimensions
#include "shardwise/nn/ffn_policy.hpp"
namespace sw = shardwise;
using Tp = sw::Mesh<sw::Axis<"tp", 4>>;
using X = sw::TensorSharding<sw::Replicated, sw::Replicated>;
using W1 = sw::TensorSharding<sw::Replicated, sw::Split<"tp">>;
using W2 = sw::TensorSharding<sw::Split<"tp">, sw::Replicated>;
using P = sw::ffn_policy_t<Tp, X, W1, W2>;
P* use = nullptr;
