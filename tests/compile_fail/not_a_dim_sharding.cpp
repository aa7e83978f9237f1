// Only Replicated, Split and Partial describe a dimension.
// expect: every parameter must be Replicated, Split<"axis", ...>, SplitFirstLarger<"axis", ...>, BlockCyclic<"axis", NB> or Partial<"axis", ...>
#include "shardwise/sharding.hpp"
namespace sw = shardwise;
using Bad = sw::TensorSharding<int, sw::Replicated>;
constexpr auto rank = Bad::rank;
