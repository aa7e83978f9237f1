#!/usr/bin/env bash
# Compile-time cost of shardwise per translation unit, in the two ways a program consumes it:
# with the companion library (the default: CMake shardwise::shardwise, Meson
# dependency('shardwise'), pkg-config shardwise), where every translation unit is compiled
# with SHARDWISE_SEPARATE_COMPILATION and the run-time part is compiled once, in the library
# (src/shardwise_runtime.cpp, timed too: the one-off cost of building shardwise); and
# header-only (shardwise::header_only, shardwise-header-only), where every translation unit
# compiles the run-time part it uses. The translation units: benchmarks/compile_time/
# all_policies.cpp (matmul instantiated for all five policies, fp64, 2 x 2 mesh, each with
# distribute and to_global), all_ffn_policies.cpp (FeedForward's four policies, forward and
# backward) and tests/consumers/consumer.cpp (a first program: one matmul on 2 ranks), against
# benchmarks/compile_time/baseline.cpp (Eigen + MPI doing the same plain work), with the
# release build's flags; prints each and the differences (target: at most 1.5 s). Also
# all_policies.cpp with its headers only (no instantiation), which splits the difference into
# parsing and instantiating. And a numerical code's unit, benchmarks/compile_time/numerical.cpp
# (real and complex gemm with alpha, beta and adjoint into existing matrices; dot, axpy, norm on
# vectors), compiled against <shardwise/core.hpp> and against the everything-include
# (-DSHARDWISE_COMPILE_TIME_FULL: <shardwise/tensor.hpp>, shardwise.hpp with the tensors), over
# its own baseline numerical_baseline.cpp (the same work in Eigen + MPI), and both includes
# alone (-DSHARDWISE_COMPILE_TIME_HEADERS_ONLY). Compile only (-c), no link; the runs alternate
# between the files.
#
#   benchmarks/compile_time.sh [--runs N] [--clock wall|cpu] [--cxx COMPILER] [--output FILE]
#
#   --runs N       compilations of each file (default 5); the median and the best are reported
#   --clock C      wall (default): elapsed time; cpu: user + system time of the compiler (and its
#                  cc1plus), which a machine busy with other builds disturbs far less
#   --cxx C        the compiler (default: $CXX, else c++)
#   --output FILE  also write the results as "key: value" lines (the runner's compile_time.txt)
set -euo pipefail
cd "$(dirname "$0")/.."

runs=5
cxx=${CXX:-c++}
output=""
clock=wall
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-0}"; }
while (($#)); do
  case "$1" in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --cxx) cxx=${2:?--cxx needs a compiler}; shift 2 ;;
    --output) output=${2:?--output needs a file}; shift 2 ;;
    --clock) clock=${2:?--clock needs wall or cpu}; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "compile_time.sh: unknown argument '$1'" >&2; usage 2 >&2 ;;
  esac
done
[[ "$clock" =~ ^(wall|cpu)$ ]] || { echo "compile_time.sh: --clock wants wall or cpu" >&2; exit 2; }
if [ "$clock" = cpu ] && [ ! -x /usr/bin/time ]; then
  echo "compile_time.sh: --clock cpu needs GNU time (/usr/bin/time; Debian: apt-get install time)" >&2; exit 2
fi
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "compile_time.sh: --runs wants a positive integer" >&2; exit 2; }
command -v "$cxx" >/dev/null || { echo "compile_time.sh: no compiler '$cxx'" >&2; exit 2; }
command -v pkg-config >/dev/null || { echo "compile_time.sh: needs pkg-config (./scripts/install-deps.sh)" >&2; exit 2; }

# The release build's flags (benchmarks/run: --buildtype=release -Db_ndebug=true
# -Dcpp_args=-march=native, warning_level=3), the dependencies as system includes like Meson's.
system_includes() { pkg-config --cflags-only-I "$@" | sed 's/-I/-isystem /g'; }
# shellcheck disable=SC2207  # the flags are meant to split into words
flags=(-std=c++20 -O3 -march=native -DNDEBUG -Wall -Wextra -Wpedantic -Iinclude
       $(system_includes eigen3) $(system_includes mpi-cxx 2>/dev/null || system_includes ompi-cxx)
       -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1)
if pkg-config --exists openblas; then  # the BLAS backend, as Meson's -Dblas=auto finds it
  # shellcheck disable=SC2207
  flags+=(-DSHARDWISE_USE_BLAS=1 $(system_includes openblas))
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Seconds to compile $1 (more flags after it) once: wall clock, or with --clock cpu the user +
# system time of the compiler and its children. Warnings are not shown (GCC 12 warns from its
# own AVX-512 intrinsics inlined into Eigen); errors are.
compile_once() {
  local start end file=$1
  shift
  start=$(date +%s.%N)
  if [ "$clock" = cpu ]; then
    if ! /usr/bin/time -f '%U %S' -o "$work/time" "$cxx" "${flags[@]}" "$@" -c "$file" -o "$work/out.o" 2>"$work/log"; then
      cat "$work/log" >&2
      echo "compile_time.sh: compiling $file failed" >&2
      return 1
    fi
    awk '{ printf "%.3f", $1 + $2 }' "$work/time"
    return
  fi
  if ! "$cxx" "${flags[@]}" "$@" -c "$file" -o "$work/out.o" 2>"$work/log"; then
    cat "$work/log" >&2
    echo "compile_time.sh: compiling $file failed" >&2
    return 1
  fi
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }'
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# The companion library's mode: what its targets add to a translation unit's flags.
companion=-DSHARDWISE_SEPARATE_COMPILATION=1
declare -a baseline_times headers_times policies_times ffn_times consumer_times \
  companion_policies_times companion_ffn_times companion_consumer_times runtime_times \
  numerical_baseline_times numerical_core_times numerical_full_times \
  companion_numerical_core_times companion_numerical_full_times \
  numerical_core_headers_times numerical_full_headers_times
for ((i = 0; i < runs; ++i)); do
  baseline_times+=("$(compile_once benchmarks/compile_time/baseline.cpp)")
  headers_times+=("$(compile_once benchmarks/compile_time/all_policies.cpp -DSHARDWISE_COMPILE_TIME_HEADERS_ONLY)")
  policies_times+=("$(compile_once benchmarks/compile_time/all_policies.cpp)")
  ffn_times+=("$(compile_once benchmarks/compile_time/all_ffn_policies.cpp)")
  consumer_times+=("$(compile_once tests/consumers/consumer.cpp)")
  companion_policies_times+=("$(compile_once benchmarks/compile_time/all_policies.cpp "$companion")")
  companion_ffn_times+=("$(compile_once benchmarks/compile_time/all_ffn_policies.cpp "$companion")")
  companion_consumer_times+=("$(compile_once tests/consumers/consumer.cpp "$companion")")
  runtime_times+=("$(compile_once src/shardwise_runtime.cpp "$companion")")
  numerical_baseline_times+=("$(compile_once benchmarks/compile_time/numerical_baseline.cpp)")
  numerical_core_times+=("$(compile_once benchmarks/compile_time/numerical.cpp)")
  numerical_full_times+=("$(compile_once benchmarks/compile_time/numerical.cpp -DSHARDWISE_COMPILE_TIME_FULL)")
  companion_numerical_core_times+=("$(compile_once benchmarks/compile_time/numerical.cpp "$companion")")
  companion_numerical_full_times+=("$(compile_once benchmarks/compile_time/numerical.cpp -DSHARDWISE_COMPILE_TIME_FULL "$companion")")
  numerical_core_headers_times+=("$(compile_once benchmarks/compile_time/numerical.cpp -DSHARDWISE_COMPILE_TIME_HEADERS_ONLY)")
  numerical_full_headers_times+=("$(compile_once benchmarks/compile_time/numerical.cpp -DSHARDWISE_COMPILE_TIME_FULL -DSHARDWISE_COMPILE_TIME_HEADERS_ONLY)")
done

# median and min of the arguments
stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
  printf "%.2f %.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1] }'; }
read -r baseline_median baseline_min <<<"$(stats "${baseline_times[@]}")"
read -r headers_median headers_min <<<"$(stats "${headers_times[@]}")"
read -r policies_median policies_min <<<"$(stats "${policies_times[@]}")"
read -r ffn_median ffn_min <<<"$(stats "${ffn_times[@]}")"
read -r consumer_median consumer_min <<<"$(stats "${consumer_times[@]}")"
read -r companion_policies_median companion_policies_min <<<"$(stats "${companion_policies_times[@]}")"
read -r companion_ffn_median companion_ffn_min <<<"$(stats "${companion_ffn_times[@]}")"
read -r companion_consumer_median companion_consumer_min <<<"$(stats "${companion_consumer_times[@]}")"
read -r runtime_median runtime_min <<<"$(stats "${runtime_times[@]}")"
read -r numerical_baseline_median numerical_baseline_min <<<"$(stats "${numerical_baseline_times[@]}")"
read -r numerical_core_median numerical_core_min <<<"$(stats "${numerical_core_times[@]}")"
read -r numerical_full_median numerical_full_min <<<"$(stats "${numerical_full_times[@]}")"
read -r companion_numerical_core_median companion_numerical_core_min <<<"$(stats "${companion_numerical_core_times[@]}")"
read -r companion_numerical_full_median companion_numerical_full_min <<<"$(stats "${companion_numerical_full_times[@]}")"
read -r numerical_core_headers_median numerical_core_headers_min <<<"$(stats "${numerical_core_headers_times[@]}")"
read -r numerical_full_headers_median numerical_full_headers_min <<<"$(stats "${numerical_full_headers_times[@]}")"
# "D s (target at most 1.5 s: MET)" for the median $1 over the baseline's
over_baseline() {
  awk -v a="$1" -v b="$baseline_median" 'BEGIN { d = a - b; printf "%.2f s (target at most 1.5 s: %s)", d, (d <= 1.5 ? "MET" : "NOT MET") }'
}
# "D s over the numerical baseline" for the median $1
over_numerical() {
  awk -v a="$1" -v b="$numerical_baseline_median" 'BEGIN { printf "%.2f s over the numerical baseline", a - b }'
}

report=$(cat <<EOF
compiler: $("$cxx" --version | head -1)
cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1)
flags: ${flags[*]}
companion library mode adds: $companion
runs: $runs per file, compile only (-c), clock: $clock, load average before: ${load_before}
baseline.cpp (Eigen + MPI, one GEMM): median ${baseline_median} s, best ${baseline_min} s
shardwise headers only (all_policies.cpp -DSHARDWISE_COMPILE_TIME_HEADERS_ONLY): median ${headers_median} s, best ${headers_min} s
companion library (default), all_policies.cpp (five policies): median ${companion_policies_median} s, best ${companion_policies_min} s
companion library (default), difference (medians): $(over_baseline "$companion_policies_median")
companion library (default), all_ffn_policies.cpp (four FeedForward policies): median ${companion_ffn_median} s, best ${companion_ffn_min} s
companion library (default), FeedForward difference (medians): $(over_baseline "$companion_ffn_median")
companion library (default), consumer.cpp (one matmul): median ${companion_consumer_median} s, best ${companion_consumer_min} s
companion library (default), consumer.cpp difference (medians): $(over_baseline "$companion_consumer_median")
header-only, all_policies.cpp (five policies): median ${policies_median} s, best ${policies_min} s
header-only, difference (medians): $(over_baseline "$policies_median")
header-only, all_ffn_policies.cpp (four FeedForward policies): median ${ffn_median} s, best ${ffn_min} s
header-only, FeedForward difference (medians): $(over_baseline "$ffn_median")
header-only, consumer.cpp (one matmul): median ${consumer_median} s, best ${consumer_min} s
header-only, consumer.cpp difference (medians): $(over_baseline "$consumer_median")
companion library's src/shardwise_runtime.cpp (once per build of shardwise): median ${runtime_median} s, best ${runtime_min} s
numerical_baseline.cpp (Eigen + MPI: gemm, adjoint, dot, axpy, norm): median ${numerical_baseline_median} s, best ${numerical_baseline_min} s
companion library (default), numerical.cpp with core.hpp: median ${companion_numerical_core_median} s, best ${companion_numerical_core_min} s, $(over_numerical "$companion_numerical_core_median")
companion library (default), numerical.cpp with tensor.hpp (everything): median ${companion_numerical_full_median} s, best ${companion_numerical_full_min} s, $(over_numerical "$companion_numerical_full_median")
header-only, numerical.cpp with core.hpp: median ${numerical_core_median} s, best ${numerical_core_min} s, $(over_numerical "$numerical_core_median")
header-only, numerical.cpp with tensor.hpp (everything): median ${numerical_full_median} s, best ${numerical_full_min} s, $(over_numerical "$numerical_full_median")
core.hpp alone (numerical.cpp -DSHARDWISE_COMPILE_TIME_HEADERS_ONLY): median ${numerical_core_headers_median} s, best ${numerical_core_headers_min} s
tensor.hpp alone (the same with -DSHARDWISE_COMPILE_TIME_FULL): median ${numerical_full_headers_median} s, best ${numerical_full_headers_min} s
EOF
)
echo "$report"
if [ -n "$output" ]; then echo "$report" >"$output"; fi
