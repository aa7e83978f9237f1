#!/bin/sh
# Builds the consumer against an installed shardwise, found through pkg-config
# (PKG_CONFIG_PATH=<prefix>/lib/<multiarch>/pkgconfig for a prefix outside the default
# search path). A .pc file cannot impose a language standard: ask for C++20 here.
set -eu
cd "$(dirname "$0")"
# shellcheck disable=SC2046  # the flags must split into words
${CXX:-c++} -std=c++20 -O2 -Wall -Wextra -Wpedantic -Werror -o consumer consumer.cpp \
  $(pkg-config --cflags --libs shardwise)
