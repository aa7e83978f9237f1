// A matrix needs two dimension shardings; this one has one.
// expect: a matrix needs exactly two, TensorSharding<rows, columns>
#include "shardwise/plan/matmul_plan.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using A = sw::TensorSharding<sw::Split<"x">>;
using B = sw::TensorSharding<sw::Replicated, sw::Replicated>;
using P = sw::matmul_policy_t<Grid, A, B>;
P* use = nullptr;
