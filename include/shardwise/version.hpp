/// @file
/// shardwise/version.hpp: the version of these headers, for preprocessor checks and for logs.
///
/// Equal to the version in meson.build, CMakeLists.txt and the newest release in
/// CHANGELOG.md (the test `version` checks all four). Pure preprocessor: no MPI, no Eigen.
#pragma once

/// Major version: 0 until the API is declared stable (0.x minor releases may break it).
#define SHARDWISE_VERSION_MAJOR 0
/// Minor version: new features; in 0.x also changes that break the API.
#define SHARDWISE_VERSION_MINOR 1
/// Patch version: fixes only.
#define SHARDWISE_VERSION_PATCH 0
/// The three numbers as "MAJOR.MINOR.PATCH", e.g. for a program's --version output.
#define SHARDWISE_VERSION_STRING "0.1.0"
/// One comparable number, MAJOR * 10000 + MINOR * 100 + PATCH:
/// `#if SHARDWISE_VERSION >= 200` for "0.2.0 or later".
#define SHARDWISE_VERSION (SHARDWISE_VERSION_MAJOR * 10000 + SHARDWISE_VERSION_MINOR * 100 + SHARDWISE_VERSION_PATCH)
