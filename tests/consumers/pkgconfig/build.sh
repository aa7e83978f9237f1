#!/bin/sh
# Builds the consumer against an installed shardwise, found through pkg-config
# (PKG_CONFIG_PATH=<prefix>/lib/<multiarch>/pkgconfig for a prefix outside the default
# search path). A .pc file cannot impose a language standard: ask for C++20 here. Three ways:
# the default, shardwise.pc (consumer: links the companion library libshardwise_runtime,
# SHARDWISE_SEPARATE_COMPILATION comes with the flags); header-only, shardwise-header-only.pc
# (consumer_header_only); and header-only with the run-time part compiled once by hand in
# shardwise_runtime.cpp (consumer_separate, docs/usage.md "Separate compilation").
set -eu
cd "$(dirname "$0")"
# shellcheck disable=SC2046  # the flags must split into words
${CXX:-c++} -std=c++20 -O2 -Wall -Wextra -Wpedantic -Werror -o consumer consumer.cpp \
  $(pkg-config --cflags --libs shardwise)
# shellcheck disable=SC2046
${CXX:-c++} -std=c++20 -O2 -Wall -Wextra -Wpedantic -Werror -o consumer_header_only consumer.cpp \
  $(pkg-config --cflags --libs shardwise-header-only)
# shellcheck disable=SC2046
${CXX:-c++} -std=c++20 -O2 -Wall -Wextra -Wpedantic -Werror -DSHARDWISE_SEPARATE_COMPILATION \
  -o consumer_separate shardwise_runtime.cpp consumer.cpp $(pkg-config --cflags --libs shardwise-header-only)
