// shardwise/detail/pack.hpp: the type at a position of a template parameter pack.
#pragma once

#include <cstddef>

namespace shardwise::detail {

// Type at position I of a pack, without <tuple>. Hidden from Doxygen, which takes the
// recursion for a recursive class relation and warns.
/// @cond
template <std::size_t I, typename T, typename... Rest>
struct pack_element : pack_element<I - 1, Rest...> {};
template <typename T, typename... Rest>
struct pack_element<0, T, Rest...> { using type = T; };
/// @endcond

}  // namespace shardwise::detail
