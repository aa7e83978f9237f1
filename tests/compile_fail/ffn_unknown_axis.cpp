// A typo in an axis name of a FeedForward's weight.
// expect: mesh_has_no_axis_named<
// expect-on-first-error: fixed_string<3>{"pt"}>
// expect: the sharding names an axis that the Mesh does not have
#include "shardwise/nn/ffn_policy.hpp"
namespace sw = shardwise;
using Tp = sw::Mesh<sw::Axis<"tp", 4>>;
using X = sw::TensorSharding<sw::Replicated, sw::Replicated, sw::Replicated>;
using W1 = sw::TensorSharding<sw::Replicated, sw::Split<"pt">>;
using W2 = sw::TensorSharding<sw::Split<"tp">, sw::Replicated>;
using P = sw::ffn_policy_t<Tp, X, W1, W2>;
P* use = nullptr;
