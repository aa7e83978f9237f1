// The companion library of shardwise (libshardwise_runtime): the run-time part compiled once,
// for every program that uses shardwise the default way (CMake shardwise::shardwise, Meson
// dependency('shardwise'), pkg-config shardwise), whose translation units are compiled with
// SHARDWISE_SEPARATE_COMPILATION (those three bring the definition along). Built by meson.build
// and CMakeLists.txt with the project's BLAS choice (SHARDWISE_USE_BLAS), which they export too.
#include <shardwise/compiled_runtime.hpp>
