#!/usr/bin/env bash
# The drop-in from an installed prefix through pkg-config, as docs/scalapack.md writes it:
# mpicc, the drop-in's libraries, and its libdir as the program's run path (the prefix is
# not a system one, so the dynamic loader would not find libshardwise_scalapack.so.0).
set -euo pipefail
cd "$(dirname "$0")"
mpicc pdgemm_program.c -o with_shardwise $(pkg-config --libs shardwise-scalapack) \
  -Wl,-rpath,"$(pkg-config --variable=libdir shardwise-scalapack)" -lm
