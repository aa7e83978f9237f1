// shardwise/detail/pack.hpp: the type at a position of a template parameter pack.
#pragma once

#include <cstddef>

namespace shardwise::detail {

// Type at position I of a pack, without <tuple>. Hidden from Doxygen, which takes the
// recursion for a recursive class relation and warns.
/// @cond
// Declared for any pack, the empty one included, so that naming it for an empty pack (the
// dimensions of a 0-D TensorSharding<>) is not an error until a type is asked for.
template <std::size_t I, typename... Ts>
struct pack_element;
template <std::size_t I, typename T, typename... Rest>
struct pack_element<I, T, Rest...> : pack_element<I - 1, Rest...> {};
template <typename T, typename... Rest>
struct pack_element<0, T, Rest...> { using type = T; };
/// @endcond

}  // namespace shardwise::detail
