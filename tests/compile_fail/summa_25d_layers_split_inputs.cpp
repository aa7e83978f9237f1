// 2.5D over z, but A's rows and B's k are split over (x, z): A and B are not whole on every layer.
// expect: shardwise::matmul: the 2.5D variant needs A = [X, Y] and B = [X, Y] replicated over its layer axes
#include "shardwise/plan/matmul_plan.hpp"
namespace sw = shardwise;
using Cube = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>, sw::Axis<"z", 2>>;
using Blocks = sw::TensorSharding<sw::Split<"x", "z">, sw::Split<"y">>;
using P = sw::matmul_plan<Cube, Blocks, Blocks, sw::NaturalOutput, sw::variant::Summa25D<"z">>::policy;
P* use = nullptr;
