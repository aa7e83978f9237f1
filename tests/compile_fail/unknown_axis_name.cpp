// A typo in an axis name: the mesh has x and y, the sharding says "z".
// expect: mesh_has_no_axis_named<
// expect-on-first-error: fixed_string<2>{"z"}>
// expect: the sharding names an axis that the Mesh does not have
#include "shardwise/plan/matmul_plan.hpp"
namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using A = sw::TensorSharding<sw::Split<"z">, sw::Replicated>;
using B = sw::TensorSharding<sw::Replicated, sw::Replicated>;
using P = sw::matmul_policy_t<Grid, A, B>;
P* use = nullptr;
