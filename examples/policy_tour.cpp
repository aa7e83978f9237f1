// The policy tour: for each of the seed's test cases on a 2 x 4 mesh, what the
// compiler picks (policy, schedule) and what the cost model says it moves.
#include <cstdio>
#include <string>

#include "shardwise/shardwise.hpp"

namespace sw = shardwise;
using Grid = sw::Mesh<sw::Axis<"x", 2>, sw::Axis<"y", 4>>;
using sw::Replicated;
template <sw::fixed_string... Axes> using Split = sw::Split<Axes...>;
template <typename Rows, typename Cols> using Sharding = sw::TensorSharding<Rows, Cols>;
using ReplicatedC = sw::replicated_sharding_t<2>;

template <typename ShA, typename ShB>
void tour(const char* title) {
  using Plan = sw::matmul_plan<Grid, ShA, ShB, ReplicatedC>;
  constexpr sw::MatmulShape shape{4096, 4096, 4096};
  constexpr sw::Traffic worst = Plan::max_traffic(Grid{}, shape, sizeof(double));
  std::printf("%-34s A%-10s B%-10s\n  %s\n  modeled: %.1f MiB and %lld messages sent by the busiest rank"
              " (m = n = k = 4096, fp64)\n\n",
              title, ShA::to_string().c_str(), ShB::to_string().c_str(), Plan::describe().c_str(),
              static_cast<double>(worst.bytes) / (1 << 20), static_cast<long long>(worst.messages));
}

int main() {
  std::printf("shardwise policy tour: mesh x=2 by y=4, replicated C as in the seed\n\n");
  tour<Sharding<Replicated, Split<"y">>, Sharding<Split<"y">, Replicated>>("MatchedInner, k over y");
  tour<Sharding<Replicated, Split<"x">>, Sharding<Split<"x">, Replicated>>("MatchedInner, k over x");
  tour<Sharding<Replicated, Split<"x", "y">>, Sharding<Split<"x", "y">, Replicated>>("MatchedInner, k over (x,y)");
  tour<Sharding<Replicated, Split<"y">>, Sharding<Split<"x">, Replicated>>("UnmatchedInner");
  tour<Sharding<Split<"x">, Split<"y">>, Sharding<Split<"x">, Replicated>>("Outer");
  tour<Sharding<Split<"x">, Split<"y">>, Sharding<Split<"x">, Split<"y">>>("Full");
}
