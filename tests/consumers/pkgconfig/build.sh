#!/bin/sh
# Builds the consumer against an installed shardwise, found through pkg-config
# (PKG_CONFIG_PATH=<prefix>/lib/<multiarch>/pkgconfig for a prefix outside the default
# search path). A .pc file cannot impose a language standard: ask for C++20 here. Twice:
# header-only (consumer), and with the run-time part compiled once in shardwise_runtime.cpp
# (consumer_separate, README "Separate compilation").
set -eu
cd "$(dirname "$0")"
# shellcheck disable=SC2046  # the flags must split into words
${CXX:-c++} -std=c++20 -O2 -Wall -Wextra -Wpedantic -Werror -o consumer consumer.cpp \
  $(pkg-config --cflags --libs shardwise)
# shellcheck disable=SC2046
${CXX:-c++} -std=c++20 -O2 -Wall -Wextra -Wpedantic -Werror -DSHARDWISE_SEPARATE_COMPILATION \
  -o consumer_separate shardwise_runtime.cpp consumer.cpp $(pkg-config --cflags --libs shardwise)
