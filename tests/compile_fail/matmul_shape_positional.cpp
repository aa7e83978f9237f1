// A matmul shape written in positional order: {m, n, k} would compile as {m, k, n} and give wrong
// figures with no error, so a shape is written by name and a positional one is refused.
// expect: shardwise: write a shape's extents by name
// single-error
#include "shardwise/plan/matmul_plan.hpp"
namespace sw = shardwise;
constexpr sw::MatmulShape shape{3000, 400, 50};
