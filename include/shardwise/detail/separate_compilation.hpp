// shardwise/detail/separate_compilation.hpp: where the run-time part of the library is compiled.
//
// By default shardwise is header-only: every translation unit compiles the parts it uses, the
// plan-independent run-time code included (the executor, the group cache, the MPI backend's
// virtual functions, the cross-rank checks, the error messages). That code is the same in every
// program, and compiling it is most of what a first matmul costs a translation unit (with
// g++ 12 -O3 about 1 s of 2.1 s: benchmarks/compile_time.sh). A program built with
// SHARDWISE_SEPARATE_COMPILATION defined (for every translation unit) compiles it once instead:
// in the one source file that includes shardwise/compiled_runtime.hpp. The other translation
// units see declarations only. This is Asio's ASIO_SEPARATE_COMPILATION; nothing else changes,
// the plans included.
//
// The macros, for the headers:
//   SHARDWISE_DECL                 on a run-time function whose body sits under
//                                  #if SHARDWISE_RUNTIME_DEFINITIONS (a function's at its declaration,
//                                  with `;` in the #else; a member function's out of its class, in a
//                                  section at the end of the header): `inline` when header-only,
//                                  nothing when compiled once
//   SHARDWISE_RUNTIME_DEFINITIONS  1 where those definitions are compiled: header-only, or the
//                                  source file of shardwise/compiled_runtime.hpp
//   SHARDWISE_EXTERN_RUNTIME       1 where the run-time templates (for float and double) are declared
//                                  `extern template`, their code left to compiled_runtime.hpp
#pragma once

#define SHARDWISE_DETAIL_SEPARATE_COMPILATION_SEEN 1

#ifdef SHARDWISE_SEPARATE_COMPILATION
#define SHARDWISE_DECL
#ifdef SHARDWISE_COMPILING_RUNTIME
#define SHARDWISE_RUNTIME_DEFINITIONS 1
#define SHARDWISE_EXTERN_RUNTIME 0
#else
#define SHARDWISE_RUNTIME_DEFINITIONS 0
#define SHARDWISE_EXTERN_RUNTIME 1
#endif
#else
#define SHARDWISE_DECL inline
#define SHARDWISE_RUNTIME_DEFINITIONS 1
#define SHARDWISE_EXTERN_RUNTIME 0
#endif
