// shardwise/compiled_runtime.hpp: the run-time part of shardwise, compiled once.
//
// For programs built with SHARDWISE_SEPARATE_COMPILATION defined (in every translation unit):
// include this header in exactly one source file of the program, before any other shardwise
// header. That file then holds the code every other translation unit only declares: the
// executor and the packing kernels (float and double), the group cache, the MPI backend, the
// cross-rank checks and the error messages (see detail/separate_compilation.hpp). Plans,
// layers and shardings stay templates, compiled where they are used.
//
//   // shardwise_runtime.cpp, compiled with -DSHARDWISE_SEPARATE_COMPILATION like the rest
//   #include <shardwise/compiled_runtime.hpp>
#pragma once

#ifndef SHARDWISE_SEPARATE_COMPILATION
#error "shardwise/compiled_runtime.hpp is for programs built with SHARDWISE_SEPARATE_COMPILATION defined; define it for every translation unit of the program (-DSHARDWISE_SEPARATE_COMPILATION), or leave this header out and stay header-only"
#endif
#ifdef SHARDWISE_DETAIL_SEPARATE_COMPILATION_SEEN
#error "shardwise/compiled_runtime.hpp must come before any other shardwise header: include it first, in a source file of its own"
#endif

#define SHARDWISE_COMPILING_RUNTIME 1
#include "shardwise/shardwise.hpp"

namespace shardwise {

namespace detail {
SHARDWISE_PERMUTE_INSTANTIATIONS(, float)
SHARDWISE_PERMUTE_INSTANTIATIONS(, double)
SHARDWISE_PERMUTE_INSTANTIATIONS(, std::complex<float>)
SHARDWISE_PERMUTE_INSTANTIATIONS(, std::complex<double>)
SHARDWISE_EXECUTOR_INSTANTIATIONS(, float)
SHARDWISE_EXECUTOR_INSTANTIATIONS(, double)
SHARDWISE_EXECUTOR_INSTANTIATIONS(, std::complex<float>)
SHARDWISE_EXECUTOR_INSTANTIATIONS(, std::complex<double>)
template struct AnyCommModel<MpiCommunicator>;
}  // namespace detail

template class CollectiveApi<AnyCommunicator>;

}  // namespace shardwise
