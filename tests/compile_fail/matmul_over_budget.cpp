// A plan whose footprint exceeds the memory budget: the footprint, the budget and a variant
// that fits are named beside the message.
// expect: shardwise::matmul: the plan's footprint per rank exceeds the memory budget
// expect-beside-first-error: footprint 896 MiB
// expect-beside-first-error: budget 800 MiB
// expect-beside-first-error: fits: summa, 400 MiB
#include "shardwise/matmul.hpp"
namespace sw = shardwise;
using Cube = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 2>, sw::Axis<"z", 2>>;
using Blocks = sw::TensorSharding<sw::Split<"x">, sw::Split<"y">>;
constexpr sw::MatmulShape shape{.m = 8192, .k = 8192, .n = 8192};
void f(const sw::ShardedMatrix<double, Cube, Blocks>& a, const sw::ShardedMatrix<double, Cube, Blocks>& b) {
  auto c = sw::matmul(a, b, sw::standard, sw::memory_budget<shape, 800ll << 20>);
  (void)c;
}
