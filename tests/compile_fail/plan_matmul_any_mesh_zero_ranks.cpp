// A plan for no ranks, in a constant evaluation: the planner's check throws, which is the compile
// error; both compilers quote the throw's line, which holds the message and the fix.
// expect: constant expression
// expect: shardwise::plan_matmul_any_mesh: the number of ranks is
// expect: give at least 1
// single-error
#include "shardwise/plan/sharding_planner.hpp"
namespace sw = shardwise;
constexpr sw::MeshedMatmulChoice plan = sw::plan_matmul_any_mesh(0, {{.m = 8, .k = 8, .n = 8}, 8});
