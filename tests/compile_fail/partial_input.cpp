// A pending sum cannot be multiplied as if it were finished.
// expect: an input is Partial (a pending sum); call reduce() on it first
#include "shardwise/plan/matmul_plan.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using A = sw::TensorSharding<sw::Split<"x">, sw::Replicated, sw::Partial<"y">>;
using B = sw::TensorSharding<sw::Replicated, sw::Replicated>;
using P = sw::matmul_policy_t<Grid, A, B>;
P* use = nullptr;
